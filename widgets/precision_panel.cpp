// PrecisionPanel: policy/device/format combos, the loss-scaler form with inline validation, the
// live-request buttons, the readout and the event table.
#include "widgets/precision_panel.h"

#include "widgets/live_label.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "core/common/error.h"
#include "widgets/live_label.h"

namespace mpwb {

namespace {

QString scale_text(double v) {
    if (!(v > 0) || !std::isfinite(v)) return QString::number(v);
    const double k = std::log2(v);
    const QString pow = std::fabs(k - std::round(k)) < 1e-9 ? QStringLiteral("2^%1").arg(qint64(std::round(k)))
                                                             : QStringLiteral("2^%1").arg(k, 0, 'f', 3);
    return QStringLiteral("%1 = %2").arg(pow, QString::number(v, 'g', 7));
}

QDoubleSpinBox* log2_spin(const char* name) {
    auto* s = new QDoubleSpinBox;
    s->setObjectName(name);
    s->setRange(-149.0, 128.0);
    s->setDecimals(2);
    s->setSingleStep(1.0);
    s->setPrefix("2^");
    return s;
}

}  // namespace

PrecisionPanel::PrecisionPanel(QWidget* parent) : QWidget(parent) {
    qRegisterMetaType<mpwb::LossScalerConfig>("mpwb::LossScalerConfig");

    // --- policy ---
    policy_ = new QComboBox;
    policy_->setObjectName("policyCombo");
    for (const auto& n : precision_names()) policy_->addItem(QString::fromStdString(n), QString::fromStdString(n));
    policy_->setToolTip(tr("fp32: reference. tf32: FP32 storage, GEMM operands rounded to 10 mantissa bits.\n"
                           "fp16-mixed / bf16-mixed: reduced math, FP32 master weights.\n"
                           "fp16-pure: no FP32 master copy (the failure the mixed-precision paper shows)."));
    device_ = new QComboBox;
    device_->setObjectName("deviceCombo");
    device_->addItem(tr("CPU (emulated)"), "cpu");
    device_->setToolTip(tr("On the CPU, FP16, BF16 and TF32 are emulated bit for bit: operands and results are "
                           "rounded where a GPU would round them, products are summed in FP32."));
    wgrad_ = new QComboBox;
    wgrad_->setObjectName("wgradCombo");
    wgrad_->addItem(tr("policy default"), QString());
    for (const char* f : {"fp32", "fp16", "bf16"}) wgrad_->addItem(QString::fromLatin1(f), QString::fromLatin1(f));
    wgrad_->setToolTip(tr("Format weight gradients are stored in; FP32 trades memory for range"));
    auto* policy_box = new QGroupBox(tr("Precision"));
    auto* pf = new QFormLayout(policy_box);
    pf->addRow(tr("Policy"), policy_);
    pf->addRow(tr("Device"), device_);
    pf->addRow(tr("Weight gradients"), wgrad_);

    // --- scaler ---
    like_ = new QComboBox;
    like_->setObjectName("likeCombo");
    like_->addItem(tr("Like…"));
    for (const char* p : {"pytorch", "deepspeed", "megatron", "nnabla", "static", "none", "default"})
        like_->addItem(QString::fromLatin1(p));
    like_->setToolTip(tr("Load the reference system's default scaler rules"));
    connect(like_, &QComboBox::activated, this, [this](int i) {
        if (i > 0) applyScalerPreset(like_->itemText(i));
        like_->setCurrentIndex(0);
    });
    mode_ = new QComboBox;
    mode_->setObjectName("modeCombo");
    for (const char* m : {"none", "static", "dynamic"}) mode_->addItem(QString::fromLatin1(m));
    initial_log2_ = log2_spin("initialScaleSpin");
    initial_value_ = new QLabel;
    growth_ = new QDoubleSpinBox;
    growth_->setObjectName("growthSpin");
    growth_->setRange(0.0, 1e6);
    growth_->setDecimals(4);
    backoff_ = new QDoubleSpinBox;
    backoff_->setObjectName("backoffSpin");
    backoff_->setRange(0.0, 1.0);
    backoff_->setDecimals(4);
    backoff_->setSingleStep(0.05);
    interval_ = new QSpinBox;
    interval_->setObjectName("intervalSpin");
    interval_->setRange(0, 1000000000);
    interval_->setSuffix(tr(" steps"));
    hysteresis_ = new QSpinBox;
    hysteresis_->setObjectName("hysteresisSpin");
    hysteresis_->setRange(0, 100000);
    hysteresis_->setToolTip(tr("Overflows tolerated before backing off; 1 backs off on every overflow"));
    refill_ = new QComboBox;
    refill_->setObjectName("refillCombo");
    refill_->addItem(tr("on growth"), "on_growth");
    refill_->addItem(tr("every clean step"), "every_clean_step");
    min_log2_ = log2_spin("minScaleSpin");
    min_value_ = new QLabel;
    max_log2_ = log2_spin("maxScaleSpin");
    max_value_ = new QLabel;
    on_overflow_ = new QComboBox;
    on_overflow_->setObjectName("overflowCombo");
    on_overflow_->addItem(tr("skip the step"), "skip");
    on_overflow_->addItem(tr("retry the batch"), "retry");
    retries_ = new QSpinBox;
    retries_->setObjectName("retriesSpin");
    retries_->setRange(0, 1000);
    count_skipped_ = new QCheckBox(tr("Skipped steps advance the LR schedule"));
    count_skipped_->setObjectName("countSkippedCheck");
    grow_finite_ = new QCheckBox(tr("Grow only while the scale stays finite"));
    grow_finite_->setObjectName("growFiniteCheck");
    timing_ = new QComboBox;
    timing_->setObjectName("timingCombo");
    timing_->addItem(tr("on interval (PyTorch)"), "on_interval");
    timing_->addItem(tr("after interval (NNabla)"), "after_interval");
    scaler_error_label_ = new QLabel;
    scaler_error_label_->setObjectName("scalerError");
    scaler_error_label_->setWordWrap(true);
    scaler_error_label_->setStyleSheet("color: #b00000;");
    scaler_error_label_->hide();

    auto with_value = [](QWidget* spin, QLabel* value) {
        auto* w = new QWidget;
        auto* h = new QHBoxLayout(w);
        h->setContentsMargins(0, 0, 0, 0);
        h->addWidget(spin);
        h->addWidget(value, 1);
        value->setMinimumWidth(110);
        return w;
    };
    auto* scaler_box = new QGroupBox(tr("Loss scaler"));
    auto* sf = new QFormLayout(scaler_box);
    sf->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    sf->addRow(tr("Preset"), like_);
    sf->addRow(tr("Mode"), mode_);
    sf->addRow(tr("Initial scale"), with_value(initial_log2_, initial_value_));
    sf->addRow(tr("Growth factor"), growth_);
    sf->addRow(tr("Backoff factor"), backoff_);
    sf->addRow(tr("Growth interval"), interval_);
    sf->addRow(tr("Growth timing"), timing_);
    sf->addRow(tr("Hysteresis"), hysteresis_);
    sf->addRow(tr("Hysteresis refill"), refill_);
    sf->addRow(tr("Min scale"), with_value(min_log2_, min_value_));
    sf->addRow(tr("Max scale"), with_value(max_log2_, max_value_));
    sf->addRow(tr("On overflow"), on_overflow_);
    sf->addRow(tr("Max retries"), retries_);
    sf->addRow(count_skipped_);
    sf->addRow(grow_finite_);
    sf->addRow(scaler_error_label_);

    // --- live ---
    apply_ = new QPushButton(tr("Apply scaler settings now"));
    apply_->setObjectName("applyButton");
    set_scale_log2_ = log2_spin("setScaleSpin");
    set_scale_log2_->setValue(16);
    set_scale_ = new QPushButton(tr("Set scale"));
    set_scale_->setObjectName("setScaleButton");
    lr_ = new QLineEdit("0.001");
    lr_->setObjectName("lrEdit");
    auto* lr_validator = new QDoubleValidator(0.0, 1e3, 12, lr_);
    lr_validator->setNotation(QDoubleValidator::ScientificNotation);
    lr_->setValidator(lr_validator);
    set_lr_ = new QPushButton(tr("Set learning rate"));
    set_lr_->setObjectName("setLrButton");
    live_hint_ = new QLabel(tr("Changes are applied at the next step boundary while a run goes on."));
    live_hint_->setWordWrap(true);
    live_hint_->setStyleSheet("color: palette(mid);");
    auto* live_box = new QGroupBox(tr("Live tuning"));
    // The word-wrapped hint sits outside the grid: a grid row gives it one line and clips it.
    auto* lv = new QVBoxLayout(live_box);
    auto* lg = new QGridLayout;
    lg->addWidget(apply_, 0, 0, 1, 2);
    lg->addWidget(set_scale_log2_, 1, 0);
    lg->addWidget(set_scale_, 1, 1);
    lg->addWidget(lr_, 2, 0);
    lg->addWidget(set_lr_, 2, 1);
    lv->addLayout(lg);
    lv->addWidget(live_hint_);

    // --- readout and events ---
    scale_readout_ = new QLabel("–");
    scale_readout_->setObjectName("scaleReadout");
    skipped_readout_ = new QLabel("–");
    skipped_readout_->setObjectName("skippedReadout");
    overflow_readout_ = new QLabel("–");
    overflow_readout_->setObjectName("overflowReadout");
    headroom_readout_ = new QLabel("–");
    headroom_readout_->setObjectName("headroomReadout");
    headroom_readout_->setToolTip(tr("How many powers of two the largest scaled gradient sits below the format's largest value"));
    fix_label_size(scale_readout_, {scale_text(std::ldexp(1.0, -126)), scale_text(1.9999e38)});
    fix_label_size(skipped_readout_, {QStringLiteral("9999999999")});
    fix_label_size(overflow_readout_, {QStringLiteral("9999999999")});
    fix_label_size(headroom_readout_, {tr("2^%1 below max").arg(-999.9, 0, 'f', 1), tr("n/a")});
    auto* readout_box = new QGroupBox(tr("Scaler state"));
    auto* rf = new QFormLayout(readout_box);
    rf->addRow(tr("Scale"), scale_readout_);
    rf->addRow(tr("Skipped steps"), skipped_readout_);
    rf->addRow(tr("Overflows"), overflow_readout_);
    rf->addRow(tr("Headroom"), headroom_readout_);
    events_ = new QTableWidget(0, 4);
    events_->setObjectName("eventTable");
    events_->setHorizontalHeaderLabels({tr("Step"), tr("Event"), tr("By"), tr("Detail")});
    events_->verticalHeader()->hide();
    events_->horizontalHeader()->setStretchLastSection(true);
    events_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    events_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    events_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    events_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    events_->setSelectionBehavior(QAbstractItemView::SelectRows);
    events_->setWordWrap(false);  // one line per event, cut with "…"; the tooltip has it all
    events_->setTextElideMode(Qt::ElideRight);
    events_->setMinimumHeight(120);

    auto* left = new QVBoxLayout;
    left->addWidget(policy_box);
    left->addWidget(scaler_box);
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    right->addWidget(live_box);
    right->addWidget(readout_box);
    right->addWidget(new QLabel(tr("<b>Scaler and tuning events</b>")));
    right->addWidget(events_, 1);
    auto* top = new QHBoxLayout(this);
    top->addLayout(left, 3);
    top->addLayout(right, 2);

    // --- wiring ---
    connect(policy_, &QComboBox::currentIndexChanged, this, &PrecisionPanel::onPolicyChanged);
    connect(device_, &QComboBox::currentIndexChanged, this, [this] { emit settingsChanged(); });
    connect(wgrad_, &QComboBox::currentIndexChanged, this, [this] { emit settingsChanged(); });
    for (QComboBox* c : {mode_, refill_, on_overflow_, timing_})
        connect(c, &QComboBox::currentIndexChanged, this, &PrecisionPanel::onScalerFieldChanged);
    for (QDoubleSpinBox* s : {growth_, backoff_})
        connect(s, &QDoubleSpinBox::valueChanged, this, &PrecisionPanel::onScalerFieldChanged);
    for (QSpinBox* s : {interval_, hysteresis_, retries_})
        connect(s, &QSpinBox::valueChanged, this, &PrecisionPanel::onScalerFieldChanged);
    for (QCheckBox* c : {count_skipped_, grow_finite_})
        connect(c, &QCheckBox::toggled, this, &PrecisionPanel::onScalerFieldChanged);
    connect(initial_log2_, &QDoubleSpinBox::valueChanged, this, [this](double k) {
        if (loading_) return;
        initial_scale_ = std::exp2(k);
        onScalerFieldChanged();
    });
    connect(min_log2_, &QDoubleSpinBox::valueChanged, this, [this](double k) {
        if (loading_) return;
        min_scale_ = std::exp2(k);
        onScalerFieldChanged();
    });
    connect(max_log2_, &QDoubleSpinBox::valueChanged, this, [this](double k) {
        if (loading_) return;
        max_scale_ = std::exp2(k);
        onScalerFieldChanged();
    });
    connect(apply_, &QPushButton::clicked, this, &PrecisionPanel::onApplyClicked);
    connect(set_scale_, &QPushButton::clicked, this, &PrecisionPanel::onSetScaleClicked);
    connect(set_lr_, &QPushButton::clicked, this, &PrecisionPanel::onSetLrClicked);
    connect(lr_, &QLineEdit::returnPressed, this, &PrecisionPanel::onSetLrClicked);

    setScalerConfig(loss_scaler_preset("default"));
    setPrecision(PrecisionKind::FP32);
    onPolicyChanged();
    updateEnabled();
}

PrecisionKind PrecisionPanel::precision() const { return parse_precision(policy_->currentData().toString().toStdString()); }

void PrecisionPanel::setPrecision(PrecisionKind kind) {
    const int i = policy_->findData(QString::fromStdString(precision_name(kind)));
    if (i >= 0) policy_->setCurrentIndex(i);
}

QString PrecisionPanel::device() const { return device_->currentData().toString(); }

void PrecisionPanel::setDevices(const QStringList& devices) {
    const QString keep = device();
    device_->blockSignals(true);
    while (device_->count() > 1) device_->removeItem(1);
    for (const QString& d : devices) device_->addItem(d, d.section(' ', 0, 0));
    const int i = device_->findData(keep);
    device_->setCurrentIndex(i >= 0 ? i : 0);
    device_->blockSignals(false);
}

std::optional<Format> PrecisionPanel::weightGradFormat() const {
    const QString f = wgrad_->currentData().toString();
    if (f.isEmpty()) return std::nullopt;
    return parse_format(f.toStdString());
}

void PrecisionPanel::setWeightGradFormat(std::optional<Format> format) {
    const int i = format ? wgrad_->findData(QString::fromStdString(format_name(*format))) : 0;
    wgrad_->setCurrentIndex(std::max(0, i));
}

LossScalerConfig PrecisionPanel::scalerConfig() const {
    LossScalerConfig c;
    c.mode = parse_scaler_mode(mode_->currentText().toStdString());
    c.initial_scale = initial_scale_;
    c.growth_factor = growth_->value();
    c.backoff_factor = backoff_->value();
    c.growth_interval = interval_->value();
    c.hysteresis = hysteresis_->value();
    c.refill = parse_hysteresis_refill(refill_->currentData().toString().toStdString());
    c.min_scale = min_scale_;
    c.max_scale = max_scale_;
    c.on_overflow = parse_overflow_action(on_overflow_->currentData().toString().toStdString());
    c.max_retries = retries_->value();
    c.count_skipped_steps = count_skipped_->isChecked();
    c.grow_only_if_finite = grow_finite_->isChecked();
    c.growth_timing = parse_growth_timing(timing_->currentData().toString().toStdString());
    return c;
}

void PrecisionPanel::setScalerConfig(const LossScalerConfig& c) {
    loading_ = true;
    mode_->setCurrentIndex(mode_->findText(QString::fromLatin1(to_string(c.mode))));
    initial_scale_ = c.initial_scale;
    min_scale_ = c.min_scale;
    max_scale_ = c.max_scale;
    initial_log2_->setValue(std::log2(c.initial_scale));
    min_log2_->setValue(std::log2(c.min_scale));
    max_log2_->setValue(std::log2(c.max_scale));
    growth_->setValue(c.growth_factor);
    backoff_->setValue(c.backoff_factor);
    interval_->setValue(int(std::min<int64_t>(c.growth_interval, interval_->maximum())));
    hysteresis_->setValue(c.hysteresis);
    refill_->setCurrentIndex(refill_->findData(QString::fromLatin1(to_string(c.refill))));
    on_overflow_->setCurrentIndex(on_overflow_->findData(QString::fromLatin1(to_string(c.on_overflow))));
    retries_->setValue(c.max_retries);
    count_skipped_->setChecked(c.count_skipped_steps);
    grow_finite_->setChecked(c.grow_only_if_finite);
    timing_->setCurrentIndex(timing_->findData(QString::fromLatin1(to_string(c.growth_timing))));
    loading_ = false;
    onScalerFieldChanged();
}

void PrecisionPanel::applyScalerPreset(const QString& name) {
    try {
        setScalerConfig(loss_scaler_preset(name.toStdString()));
    } catch (const std::exception& e) {
        scaler_error_ = QString::fromUtf8(e.what());
        scaler_error_label_->setText(scaler_error_);
        scaler_error_label_->show();
    }
}

TrainConfig PrecisionPanel::applyTo(TrainConfig config) const {
    config.precision = precision();
    config.weight_grad_format = weightGradFormat();
    config.scaler = scalerConfig();
    return config;
}

void PrecisionPanel::onPolicyChanged() {
    // FP16 policies need a loss scale and the others do not: follow the policy's default so a
    // switch from fp32 to fp16-mixed does not silently train unscaled (the user can still
    // override the mode afterwards).
    const bool wants = PrecisionPolicy::make(precision()).loss_scaling_by_default;
    const bool has = mode_->currentText() != "none";
    if (wants && !has) mode_->setCurrentIndex(mode_->findText("dynamic"));
    if (!wants && has && mode_->currentText() == "dynamic") mode_->setCurrentIndex(mode_->findText("none"));
    updateEnabled();
    emit settingsChanged();
}

void PrecisionPanel::onScalerFieldChanged() {
    if (loading_) return;
    validateScaler();
    updateEnabled();
    if (!running_) emit settingsChanged();
}

void PrecisionPanel::showScaleValue(QLabel* label, double value) { label->setText("= " + QString::number(value, 'g', 7)); }

void PrecisionPanel::validateScaler() {
    showScaleValue(initial_value_, initial_scale_);
    showScaleValue(min_value_, min_scale_);
    showScaleValue(max_value_, max_scale_);
    // Reset field highlights, then mark the one the message names.
    const std::pair<const char*, QWidget*> fields[] = {
        {"initial_scale", initial_log2_}, {"growth_factor", growth_},    {"backoff_factor", backoff_},
        {"growth_interval", interval_},   {"hysteresis", hysteresis_},   {"min_scale", min_log2_},
        {"max_scale", max_log2_},         {"max_retries", retries_}};
    for (const auto& [key, w] : fields) w->setStyleSheet({});
    try {
        scalerConfig().validate();
        scaler_error_.clear();
    } catch (const std::exception& e) {
        scaler_error_ = QString::fromUtf8(e.what());
        for (const auto& [key, w] : fields) {
            if (scaler_error_.contains(QString::fromLatin1(key))) {
                w->setStyleSheet("background: #ffd0d0;");
                break;
            }
        }
    }
    scaler_error_label_->setText(scaler_error_);
    scaler_error_label_->setVisible(!scaler_error_.isEmpty());
}

void PrecisionPanel::updateEnabled() {
    const bool dynamic = mode_->currentText() == "dynamic";
    const bool scaled = mode_->currentText() != "none";
    policy_->setEnabled(!running_);
    device_->setEnabled(!running_);
    wgrad_->setEnabled(!running_);
    initial_log2_->setEnabled(scaled);
    for (QWidget* w : std::initializer_list<QWidget*>{growth_, backoff_, interval_, hysteresis_, refill_, timing_,
                                                      grow_finite_, on_overflow_})
        w->setEnabled(dynamic);
    retries_->setEnabled(dynamic && on_overflow_->currentData().toString() == "retry");
    refill_->setEnabled(dynamic && hysteresis_->value() > 1);
    apply_->setEnabled(running_ && scaler_error_.isEmpty());
    set_scale_->setEnabled(running_ && scaled);
    set_scale_log2_->setEnabled(running_ && scaled);
    set_lr_->setEnabled(running_);
    lr_->setEnabled(running_);
    live_hint_->setText(running_ ? tr("Changes are applied at the next step boundary.")
                                 : tr("Available while a run goes on; the settings above are used when it starts."));
}

void PrecisionPanel::setRunning(bool running) {
    running_ = running;
    updateEnabled();
}

void PrecisionPanel::setLearningRate(float lr) { lr_->setText(QString::number(double(lr), 'g', 6)); }

void PrecisionPanel::onApplyClicked() {
    validateScaler();
    updateEnabled();
    if (!running_ || !scaler_error_.isEmpty()) return;
    emit scalerConfigRequested(scalerConfig());
}

void PrecisionPanel::onSetScaleClicked() {
    if (!running_) return;
    const double s = std::exp2(set_scale_log2_->value());
    if (!std::isfinite(s) || s <= 0 || s > double(std::numeric_limits<float>::max())) {
        scaler_error_label_->setText(tr("Scale 2^%1 is not representable in FP32").arg(set_scale_log2_->value()));
        scaler_error_label_->show();
        return;
    }
    emit lossScaleRequested(s);
}

void PrecisionPanel::onSetLrClicked() {
    if (!running_) return;
    bool ok = false;
    const double lr = QLocale().toDouble(lr_->text(), &ok);
    const double lr_c = ok ? lr : lr_->text().toDouble(&ok);
    if (!ok || !(lr_c > 0) || !std::isfinite(lr_c)) {
        lr_->setStyleSheet("background: #ffd0d0;");
        lr_->setToolTip(tr("The learning rate must be a positive number"));
        return;
    }
    lr_->setStyleSheet({});
    lr_->setToolTip({});
    emit learningRateRequested(float(lr_c));
}

void PrecisionPanel::setReadout(float scale, int64_t skipped, int64_t overflows, float headroom_log2) {
    scale_readout_->setText(scale_text(double(scale)));
    skipped_readout_->setText(QString::number(skipped));
    overflow_readout_->setText(QString::number(overflows));
    headroom_readout_->setText(std::isfinite(headroom_log2)
                                   ? tr("2^%1 below max").arg(double(headroom_log2), 0, 'f', 1)
                                   : tr("n/a"));
}

void PrecisionPanel::addEvent(int64_t step, const QString& kind, const QString& source, const QString& text,
                              const QString& json) {
    const int row = events_->rowCount();
    events_->insertRow(row);
    auto* s = new QTableWidgetItem;
    s->setData(Qt::DisplayRole, qlonglong(step));
    events_->setItem(row, 0, s);
    events_->setItem(row, 1, new QTableWidgetItem(kind));
    events_->setItem(row, 2, new QTableWidgetItem(source));
    auto* d = new QTableWidgetItem(text);
    d->setToolTip(json.isEmpty() ? text : json);
    events_->setItem(row, 3, d);
    events_->scrollToBottom();
}

void PrecisionPanel::clearEvents() { events_->setRowCount(0); }

int PrecisionPanel::eventCount() const { return events_->rowCount(); }

}  // namespace mpwb
