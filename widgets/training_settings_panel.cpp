// TrainingSettingsPanel: form over the optimizer/schedule/batching part of a TrainConfig.
#include "widgets/training_settings_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer_registry.h"

namespace mpwb {

namespace {

QLineEdit* number_edit(const char* name, double value) {
    auto* e = new QLineEdit(QString::number(value, 'g', 6));
    e->setObjectName(name);
    auto* v = new QDoubleValidator(0.0, 1e6, 12, e);
    v->setNotation(QDoubleValidator::ScientificNotation);
    v->setLocale(QLocale::c());
    e->setValidator(v);
    return e;
}

QSpinBox* int_spin(const char* name, int lo, int hi, int value, const QString& special = {}) {
    auto* s = new QSpinBox;
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(value);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    return s;
}

// The optimizers of the registry, each with its one line of help as its tooltip.
QComboBox* optimizer_combo() {
    auto* combo = new QComboBox;
    combo->setObjectName("optimizerCombo");
    for (const OptimizerDefinition& optimizer : optimizer_registry()) {
        combo->addItem(QString::fromStdString(optimizer.name));
        combo->setItemData(combo->count() - 1, QString::fromStdString(optimizer.help), Qt::ToolTipRole);
    }
    return combo;
}

}  // namespace

TrainingSettingsPanel::TrainingSettingsPanel(QWidget* parent) : QWidget(parent) {
    epochs_ = int_spin("epochsSpin", 1, 100000, 5);
    max_steps_ = int_spin("maxStepsSpin", 0, 1000000000, 0, tr("all epochs"));
    batch_ = int_spin("batchSpin", 1, 65536, 128);
    lr_ = number_edit("lrEdit", 1e-3);
    optimizer_ = optimizer_combo();
    momentum_ = new QDoubleSpinBox;
    momentum_->setObjectName("momentumSpin");
    momentum_->setRange(0.0, 0.999);
    momentum_->setDecimals(3);
    momentum_->setValue(0.9);
    nesterov_ = new QCheckBox(tr("Nesterov"));
    nesterov_->setObjectName("nesterovCheck");
    weight_decay_ = number_edit("weightDecayEdit", 0.0);
    schedule_ = new QComboBox;
    schedule_->setObjectName("scheduleCombo");
    for (const auto& k : schedule_kinds()) schedule_->addItem(QString::fromStdString(k));
    step_size_ = int_spin("stepSizeSpin", 1, 100000000, 1000);
    gamma_ = new QDoubleSpinBox;
    gamma_->setObjectName("gammaSpin");
    gamma_->setRange(0.0, 1.0);
    gamma_->setDecimals(3);
    gamma_->setValue(0.1);
    warmup_ = int_spin("warmupSpin", 0, 100000000, 0, tr("none"));
    clip_ = new QDoubleSpinBox;
    clip_->setObjectName("clipSpin");
    clip_->setRange(0.0, 1e6);
    clip_->setDecimals(3);
    clip_->setSpecialValueText(tr("off"));
    seed_ = int_spin("trainSeedSpin", 0, 2147483647, 42);
    threads_ = int_spin("threadsSpin", 0, 1024, 0, tr("all cores"));
    stats_every_ = int_spin("statsEverySpin", 0, 1000000, 0, tr("off"));
    stats_every_->setToolTip(tr("Gradient exponent histograms every K steps"));
    eval_every_ = int_spin("evalEverySpin", 0, 1000000, 0, tr("every epoch"));
    error_label_ = new QLabel;
    error_label_->setObjectName("errorLabel");
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet("color: #b00000;");
    error_label_->hide();

    auto* f = new QFormLayout;
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    f->addRow(tr("Epochs"), epochs_);
    f->addRow(tr("Stop after steps"), max_steps_);
    f->addRow(tr("Batch size"), batch_);
    f->addRow(tr("Learning rate"), lr_);
    f->addRow(tr("Optimizer"), optimizer_);
    f->addRow(tr("Momentum"), momentum_);
    f->addRow(QString(), nesterov_);
    f->addRow(tr("Weight decay"), weight_decay_);
    f->addRow(tr("LR schedule"), schedule_);
    f->addRow(tr("Step size"), step_size_);
    f->addRow(tr("Step gamma"), gamma_);
    f->addRow(tr("Warm-up steps"), warmup_);
    f->addRow(tr("Clip grad norm"), clip_);
    f->addRow(tr("Seed"), seed_);
    f->addRow(tr("CPU threads"), threads_);
    f->addRow(tr("Gradient stats every"), stats_every_);
    f->addRow(tr("Evaluate every"), eval_every_);
    auto* top = new QVBoxLayout(this);
    top->addLayout(f);
    top->addWidget(error_label_);
    top->addStretch(1);

    for (QSpinBox* s :
         {epochs_, max_steps_, batch_, step_size_, warmup_, seed_, threads_, stats_every_, eval_every_})
        connect(s, &QSpinBox::valueChanged, this, &TrainingSettingsPanel::onChanged);
    for (QDoubleSpinBox* s : {momentum_, gamma_, clip_})
        connect(s, &QDoubleSpinBox::valueChanged, this, &TrainingSettingsPanel::onChanged);
    for (QLineEdit* e : {lr_, weight_decay_})
        connect(e, &QLineEdit::textChanged, this, &TrainingSettingsPanel::onChanged);
    for (QComboBox* c : {optimizer_, schedule_})
        connect(c, &QComboBox::currentIndexChanged, this, &TrainingSettingsPanel::onChanged);
    connect(nesterov_, &QCheckBox::toggled, this, &TrainingSettingsPanel::onChanged);
    setFromConfig(TrainConfig{});
}

TrainConfig TrainingSettingsPanel::applyTo(TrainConfig c) const {
    c.epochs = epochs_->value();
    c.max_steps = max_steps_->value();
    c.batch_size = batch_->value();
    c.lr = lr_->text().toFloat();
    c.optimizer.kind = optimizer_->currentText().toStdString();
    c.optimizer.momentum = float(momentum_->value());
    c.optimizer.nesterov = nesterov_->isChecked();
    c.optimizer.weight_decay = weight_decay_->text().toFloat();
    c.schedule.kind = schedule_->currentText().toStdString();
    c.schedule.step_size = step_size_->value();
    c.schedule.gamma = float(gamma_->value());
    c.schedule.warmup_steps = warmup_->value();
    c.clip_norm = float(clip_->value());
    c.seed = uint64_t(seed_->value());
    c.threads = threads_->value();
    c.stats_every = stats_every_->value();
    c.eval_every = eval_every_->value();
    return c;
}

void TrainingSettingsPanel::setFromConfig(const TrainConfig& c) {
    loading_ = true;
    epochs_->setValue(int(c.epochs));
    max_steps_->setValue(int(std::min<int64_t>(c.max_steps, max_steps_->maximum())));
    batch_->setValue(int(c.batch_size));
    lr_->setText(QString::number(double(c.lr), 'g', 6));
    optimizer_->setCurrentIndex(std::max(0, optimizer_->findText(QString::fromStdString(c.optimizer.kind))));
    momentum_->setValue(c.optimizer.momentum);
    nesterov_->setChecked(c.optimizer.nesterov);
    weight_decay_->setText(QString::number(double(c.optimizer.weight_decay), 'g', 6));
    schedule_->setCurrentIndex(std::max(0, schedule_->findText(QString::fromStdString(c.schedule.kind))));
    step_size_->setValue(int(std::min<int64_t>(c.schedule.step_size, step_size_->maximum())));
    gamma_->setValue(c.schedule.gamma);
    warmup_->setValue(int(std::min<int64_t>(c.schedule.warmup_steps, warmup_->maximum())));
    clip_->setValue(c.clip_norm);
    seed_->setValue(int(std::min<uint64_t>(c.seed, uint64_t(seed_->maximum()))));
    threads_->setValue(c.threads);
    stats_every_->setValue(int(c.stats_every));
    eval_every_->setValue(int(c.eval_every));
    loading_ = false;
    onChanged();
}

void TrainingSettingsPanel::updateEnabled() {
    // The settings the chosen optimizer reads.
    const OptimizerDefinition* optimizer = find_optimizer(optimizer_->currentText().toStdString());
    momentum_->setEnabled(optimizer && optimizer->reads("momentum"));
    nesterov_->setEnabled(optimizer && optimizer->reads("nesterov") && momentum_->value() > 0);
    const bool step = schedule_->currentText() == "step";
    step_size_->setEnabled(step);
    gamma_->setEnabled(step);
}

void TrainingSettingsPanel::onChanged() {
    if (loading_) return;
    updateEnabled();
    const TrainConfig c = applyTo(TrainConfig{});
    error_.clear();
    bool ok = false;
    const double lr = lr_->text().toDouble(&ok);
    if (!ok || !(lr > 0)) {
        error_ = tr("The learning rate must be a positive number (gets \"%1\")").arg(lr_->text());
    } else {
        try {
            c.optimizer.validate();
            c.schedule.validate();
        } catch (const std::exception& e) {
            error_ = QString::fromUtf8(e.what());
        }
    }
    error_label_->setText(error_);
    error_label_->setVisible(!error_.isEmpty());
    emit settingsChanged();
}

}  // namespace mpwb
