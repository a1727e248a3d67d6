// PrecisionPanel: policy/device/format combos, the loss-scaler form with inline validation, the
// live-request buttons, the readout and the event table.
#include "widgets/precision_panel.h"

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
#include <QAbstractSpinBox>
#include <QBoxLayout>
#include <QCheckBox>
#include <QResizeEvent>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/common/error.h"
#include "widgets/live_label.h"
#include "widgets/scaler_form.h"

namespace mpwb {

namespace {

QString scale_text(double v) {
    if (!(v > 0) || !std::isfinite(v)) return QString::number(v);
    const double k = std::log2(v);
    const QString pow = std::fabs(k - std::round(k)) < 1e-9
                            ? QStringLiteral("2^%1").arg(qint64(std::round(k)))
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

QString precision_rule_text(const PrecisionRule& rule) {
    const QString match = QString::fromStdString(rule.match);
    const auto& p = rule.passes;
    if (p[0] && p[0] == p[1] && p[1] == p[2])
        return QStringLiteral("%1 → %2").arg(match, QString::fromStdString(pass_recipe_name(*p[0])));
    QStringList parts;
    for (size_t i = 0; i < p.size(); ++i)
        if (p[i])
            parts << QStringLiteral("%1 %2").arg(
                QString::fromLatin1(gemm_pass_name(static_cast<GemmPass>(i))),
                QString::fromStdString(pass_recipe_name(*p[i])));
    return QStringLiteral("%1 → %2").arg(match, parts.join(QStringLiteral(", ")));
}

PrecisionPanel::PrecisionPanel(QWidget* parent) : QWidget(parent) {
    qRegisterMetaType<mpwb::LossScalerConfig>("mpwb::LossScalerConfig");
    qRegisterMetaType<mpwb::ScaledRecipeConfig>("mpwb::ScaledRecipeConfig");
    scaler_ = new ScalerForm;
    recipe_ = new RecipeForm;
    // A live change is posted when a value is complete (Enter, arrows, focus out), not per key.
    for (auto* spin : recipe_->findChildren<QAbstractSpinBox*>()) spin->setKeyboardTracking(false);
    makeEventTable();
    auto* left = new QVBoxLayout;
    left->addWidget(makePolicyBox());
    left->addWidget(recipe_);
    left->addWidget(makeGemmPrecisionBox());
    left->addWidget(scaler_);
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    right->addWidget(makeLiveBox());
    right->addWidget(makeReadoutBox());
    right->addWidget(new QLabel(tr("<b>Scaler and tuning events</b>")));
    right->addWidget(events_, 1);
    columns_ = new QBoxLayout(QBoxLayout::LeftToRight, this);
    columns_->addLayout(left, 3);
    columns_->addLayout(right, 2);
    left_column_ = left;
    right_column_ = right;

    connect(policy_, &QComboBox::currentIndexChanged, this, &PrecisionPanel::onPolicyChanged);
    connect(device_, &QComboBox::currentIndexChanged, this, [this] { emit settingsChanged(); });
    connect(wgrad_, &QComboBox::currentIndexChanged, this, [this] { emit settingsChanged(); });
    connect(scaler_, &ScalerForm::changed, this, &PrecisionPanel::onScalerFieldChanged);
    connect(recipe_, &RecipeForm::changed, this, &PrecisionPanel::onRecipeFieldChanged);
    connect(apply_, &QPushButton::clicked, this, &PrecisionPanel::onApplyClicked);
    connect(set_scale_, &QPushButton::clicked, this, &PrecisionPanel::onSetScaleClicked);
    connect(set_lr_, &QPushButton::clicked, this, &PrecisionPanel::onSetLrClicked);
    connect(lr_, &QLineEdit::returnPressed, this, &PrecisionPanel::onSetLrClicked);

    setScalerConfig(loss_scaler_preset("default"));
    setPrecision(PrecisionKind::FP32);
    onPolicyChanged();
    updateEnabled();
}

QWidget* PrecisionPanel::makePolicyBox() {
    policy_ = new QComboBox;
    policy_->setObjectName("policyCombo");
    for (const PrecisionKind kind : precision_kinds()) {
        const QString name = QString::fromStdString(precision_name(kind));
        policy_->addItem(name, name);
        const ScaledRecipe recipe = PrecisionPolicy::make(kind).recipe;
        if (recipe != ScaledRecipe::None)
            policy_->setItemData(policy_->count() - 1, tr(scaled_recipe_summary(recipe)), Qt::ToolTipRole);
    }
    policy_summary_ = new QLabel;
    policy_summary_->setObjectName("policySummary");
    policy_summary_->setWordWrap(true);
    policy_summary_->setStyleSheet("color: palette(dark);");
    policy_->setToolTip(
        tr("fp32: reference. tf32: FP32 storage, GEMM operands rounded to 10 mantissa bits.\n"
           "fp16-mixed / bf16-mixed: reduced math, FP32 master weights.\n"
           "fp16-pure: no FP32 master copy (the failure the mixed-precision paper shows).\n"
           "fp8-delayed ... mxfp4: scaled low-precision GEMM operands (see the line below the policy)."));
    device_ = new QComboBox;
    device_->setObjectName("deviceCombo");
    device_->addItem(tr("CPU (emulated)"), "cpu");
    device_->setToolTip(
        tr("On the CPU, FP16, BF16 and TF32 are emulated bit for bit: operands and results are "
           "rounded where a GPU would round them, products are summed in FP32."));
    wgrad_ = new QComboBox;
    wgrad_->setObjectName("wgradCombo");
    wgrad_->addItem(tr("policy default"), QString());
    for (const char* f : {"fp32", "fp16", "bf16"})
        wgrad_->addItem(QString::fromLatin1(f), QString::fromLatin1(f));
    wgrad_->setToolTip(tr("Format weight gradients are stored in; FP32 trades memory for range"));
    auto* box = new QGroupBox(tr("Precision"));
    auto* form = new QFormLayout(box);
    form->addRow(tr("Policy"), policy_);
    form->addRow(policy_summary_);
    form->addRow(tr("Device"), device_);
    form->addRow(tr("Weight gradients"), wgrad_);
    return box;
}

QWidget* PrecisionPanel::makeGemmPrecisionBox() {
    auto* box = new QGroupBox(tr("Per-GEMM precision and what-if"));
    auto* column = new QVBoxLayout(box);
    auto* ticks = new QGridLayout;
    ticks->addWidget(new QLabel(tr("What-if statistics:")), 0, 0, 1, 3);
    int i = 0;
    for (const ScaledRecipe recipe : scaled_recipes()) {
        const QString name = QString::fromLatin1(scaled_recipe_name(recipe));
        auto* tick = new QCheckBox(name);
        tick->setObjectName(QStringLiteral("whatIf_") + name);
        tick->setToolTip(tr("On statistics steps, also quantize each GEMM's operands in %1 and record "
                            "what it would lose (the run does not use them; the Scaling tab's advisor "
                            "compares).")
                             .arg(name));
        connect(tick, &QCheckBox::toggled, this, [this] { emit settingsChanged(); });
        ticks->addWidget(tick, 1 + i / 3, i % 3);
        what_if_.emplace_back(recipe, tick);
        ++i;
    }
    column->addLayout(ticks);
    keep_ends_ = new QCheckBox(tr("Keep the first and last GEMM layers in BF16"));
    keep_ends_->setObjectName(QStringLiteral("keepEndsBf16"));
    backward_bf16_ = new QCheckBox(tr("Backward (dgrad, wgrad) in BF16"));
    backward_bf16_->setObjectName(QStringLiteral("backwardBf16"));
    for (QCheckBox* tick : {keep_ends_, backward_bf16_}) {
        connect(tick, &QCheckBox::toggled, this, [this] {
            rules_.keep_ends_bf16 = keep_ends_->isChecked();
            rules_.backward_bf16 = backward_bf16_->isChecked();
            emit settingsChanged();
        });
        column->addWidget(tick);
    }
    rules_text_ = new QLabel;
    rules_text_->setObjectName(QStringLiteral("precisionRulesText"));
    rules_text_->setWordWrap(true);
    clear_rules_ = new QPushButton(tr("Clear rules"));
    clear_rules_->setObjectName(QStringLiteral("clearRulesButton"));
    connect(clear_rules_, &QPushButton::clicked, this, [this] {
        rules_.rules.clear();
        showRules();
        emit settingsChanged();
    });
    auto* rules_row = new QHBoxLayout;
    rules_row->addWidget(rules_text_, 1);
    rules_row->addWidget(clear_rules_, 0, Qt::AlignTop);
    column->addLayout(rules_row);
    showRules();
    return box;
}

void PrecisionPanel::showRules() {
    QStringList lines;
    for (const PrecisionRule& rule : rules_.rules) lines << precision_rule_text(rule);
    rules_text_->setText(lines.isEmpty()
                             ? tr("Rules: none (every GEMM in the policy's precision). The "
                                  "Network panel's Precision column and the Scaling "
                                  "advisor add rules.")
                             : tr("Rules, first match wins:\n%1").arg(lines.join(QLatin1Char('\n'))));
    clear_rules_->setVisible(!rules_.rules.empty());
}

void PrecisionPanel::setPrecisionRules(const PrecisionRules& rules) {
    rules_ = rules;
    const QSignalBlocker keep(keep_ends_), backward(backward_bf16_);
    keep_ends_->setChecked(rules.keep_ends_bf16);
    backward_bf16_->setChecked(rules.backward_bf16);
    showRules();
}

void PrecisionPanel::addPrecisionRule(const PrecisionRule& rule) {
    const auto same = std::find_if(rules_.rules.begin(), rules_.rules.end(),
                                   [&](const PrecisionRule& r) { return r.match == rule.match; });
    const bool names_a_pass = std::any_of(rule.passes.begin(), rule.passes.end(),
                                          [](const std::optional<PassRecipe>& p) { return p.has_value(); });
    if (!names_a_pass) {  // every pass "as the run": the match's rule goes
        if (same != rules_.rules.end()) rules_.rules.erase(same);
    } else if (same != rules_.rules.end()) {
        *same = rule;
    } else {
        rules_.rules.push_back(rule);
    }
    showRules();
    emit settingsChanged();
}

std::vector<ScaledRecipe> PrecisionPanel::whatIf() const {
    std::vector<ScaledRecipe> recipes;
    for (const auto& [recipe, tick] : what_if_)
        if (tick->isChecked()) recipes.push_back(recipe);
    return recipes;
}

void PrecisionPanel::setWhatIf(const std::vector<ScaledRecipe>& recipes) {
    for (const auto& [recipe, tick] : what_if_) {
        const QSignalBlocker block(tick);
        tick->setChecked(std::find(recipes.begin(), recipes.end(), recipe) != recipes.end());
    }
}

QCheckBox* PrecisionPanel::whatIfBox(ScaledRecipe recipe) const {
    for (const auto& [r, tick] : what_if_)
        if (r == recipe) return tick;
    return nullptr;
}

QWidget* PrecisionPanel::makeLiveBox() {
    apply_ = new QPushButton(tr("Apply scaler settings now"));
    apply_->setObjectName("applyButton");
    set_scale_log2_ = log2_spin("setScaleSpin");
    set_scale_log2_->setValue(16);
    set_scale_ = new QPushButton(tr("Set scale"));
    set_scale_->setObjectName("setScaleButton");
    scale_request_error_ = new QLabel;
    scale_request_error_->setObjectName("scaleRequestError");
    scale_request_error_->setWordWrap(true);
    scale_request_error_->setStyleSheet("color: #b00000;");
    scale_request_error_->hide();
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
    auto* box = new QGroupBox(tr("Live tuning"));
    // The word-wrapped texts sit outside the grid: a grid row gives them one line and clips them.
    auto* column = new QVBoxLayout(box);
    auto* grid = new QGridLayout;
    grid->addWidget(apply_, 0, 0, 1, 2);
    grid->addWidget(set_scale_log2_, 1, 0);
    grid->addWidget(set_scale_, 1, 1);
    grid->addWidget(lr_, 2, 0);
    grid->addWidget(set_lr_, 2, 1);
    column->addLayout(grid);
    column->addWidget(scale_request_error_);
    column->addWidget(live_hint_);
    return box;
}

QWidget* PrecisionPanel::makeReadoutBox() {
    scale_readout_ = new QLabel("–");
    scale_readout_->setObjectName("scaleReadout");
    skipped_readout_ = new QLabel("–");
    skipped_readout_->setObjectName("skippedReadout");
    overflow_readout_ = new QLabel("–");
    overflow_readout_->setObjectName("overflowReadout");
    headroom_readout_ = new QLabel("–");
    headroom_readout_->setObjectName("headroomReadout");
    headroom_readout_->setToolTip(
        tr("How many powers of two the largest scaled gradient sits below the format's largest value"));
    fix_label_size(scale_readout_, {scale_text(std::ldexp(1.0, -126)), scale_text(1.9999e38)});
    fix_label_size(skipped_readout_, {QStringLiteral("9999999999")});
    fix_label_size(overflow_readout_, {QStringLiteral("9999999999")});
    fix_label_size(headroom_readout_, {tr("2^%1 below max").arg(-999.9, 0, 'f', 1), tr("n/a")});
    auto* box = new QGroupBox(tr("Scaler state"));
    auto* form = new QFormLayout(box);
    form->addRow(tr("Scale"), scale_readout_);
    form->addRow(tr("Skipped steps"), skipped_readout_);
    form->addRow(tr("Overflows"), overflow_readout_);
    form->addRow(tr("Headroom"), headroom_readout_);
    return box;
}

void PrecisionPanel::makeEventTable() {
    events_ = new QTableWidget(0, 4);
    events_->setObjectName("eventTable");
    events_->setHorizontalHeaderLabels({tr("Step"), tr("Event"), tr("By"), tr("Detail")});
    events_->verticalHeader()->hide();
    events_->horizontalHeader()->setStretchLastSection(true);
    for (int column : {0, 1, 2})
        events_->horizontalHeader()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    events_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    events_->setSelectionBehavior(QAbstractItemView::SelectRows);
    events_->setWordWrap(false);  // one line per event, cut with "…"; the tooltip has it all
    events_->setTextElideMode(Qt::ElideRight);
    events_->setMinimumHeight(120);
}

// Side by side where both columns fit at their minimum width, else one above the other, so no
// number is ever cut (a settings dock on a 1366-pixel screen is about 400 pixels wide).
void PrecisionPanel::resizeEvent(QResizeEvent* event) {
    const int both = left_column_->minimumSize().width() + right_column_->minimumSize().width() +
                     columns_->spacing() + contentsMargins().left() + contentsMargins().right();
    const auto direction = width() >= both ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
    if (columns_->direction() != direction) columns_->setDirection(direction);
    QWidget::resizeEvent(event);
}

// The narrow arrangement's width: the panel may always be given it (it then stacks its columns).
QSize PrecisionPanel::minimumSizeHint() const {
    const QMargins m = contentsMargins();
    const int width = std::max(left_column_->minimumSize().width(), right_column_->minimumSize().width());
    return {width + m.left() + m.right(), QWidget::minimumSizeHint().height()};
}

bool PrecisionPanel::sideBySide() const { return columns_->direction() == QBoxLayout::LeftToRight; }

PrecisionKind PrecisionPanel::precision() const {
    return parse_precision(policy_->currentData().toString().toStdString());
}

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

LossScalerConfig PrecisionPanel::scalerConfig() const { return scaler_->config(); }

void PrecisionPanel::setScalerConfig(const LossScalerConfig& c) { scaler_->setConfig(c); }

void PrecisionPanel::applyScalerPreset(const QString& name) { scaler_->applyPreset(name); }

QString PrecisionPanel::scalerError() const { return scaler_->errorText(); }

const std::vector<ConfigIssue>& PrecisionPanel::scalerIssues() const { return scaler_->issues(); }

QWidget* PrecisionPanel::scalerFieldEditor(std::string_view field) const { return scaler_->editor(field); }

ScaledRecipeConfig PrecisionPanel::recipeConfig() const { return recipe_->config(); }

void PrecisionPanel::setRecipeConfig(const ScaledRecipeConfig& c) {
    ScaledRecipeConfig shown = c;
    shown.recipe = PrecisionPolicy::make(precision()).recipe;  // the policy decides the recipe
    recipe_->setConfig(shown);
}

const std::vector<ConfigIssue>& PrecisionPanel::recipeIssues() const { return recipe_->issues(); }

QWidget* PrecisionPanel::recipeFieldEditor(std::string_view field) const { return recipe_->editor(field); }

QString PrecisionPanel::policySummary() const { return policy_summary_->text(); }

TrainConfig PrecisionPanel::applyTo(TrainConfig config) const {
    config.precision = precision();
    config.recipe = recipeConfig();
    config.weight_grad_format = weightGradFormat();
    config.scaler = scalerConfig();
    config.precision_rules = rules_;
    config.what_if = whatIf();
    return config;
}

void PrecisionPanel::onPolicyChanged() {
    // FP16 policies need a loss scale and the others do not: follow the policy's default so a
    // switch from fp32 to fp16-mixed does not silently train unscaled (the user can still
    // override the mode afterwards).
    const bool wants = PrecisionPolicy::make(precision()).loss_scaling_by_default;
    LossScalerConfig c = scalerConfig();
    const ScalerMode before = c.mode;
    if (wants && c.mode == ScalerMode::None) c.mode = ScalerMode::Dynamic;
    if (!wants && c.mode == ScalerMode::Dynamic) c.mode = ScalerMode::None;
    if (c.mode != before) setScalerConfig(c);
    const ScaledRecipe recipe = PrecisionPolicy::make(precision()).recipe;
    policy_summary_->setText(recipe == ScaledRecipe::None ? QString() : tr(scaled_recipe_summary(recipe)));
    policy_summary_->setVisible(recipe != ScaledRecipe::None);
    recipe_->setVisible(recipe != ScaledRecipe::None);
    recipe_->setTitle(tr("Recipe settings: %1").arg(QString::fromLatin1(scaled_recipe_name(recipe))));
    setRecipeConfig(recipeConfig());
    updateEnabled();
    emit settingsChanged();
}

void PrecisionPanel::onScalerFieldChanged() {
    updateEnabled();
    if (!running_) emit settingsChanged();
}

// Like the scaler's Apply, but at once: a recipe setting is one value, complete when edited. The
// trainer validates again and refuses a policy without a recipe (ConfigError to the app).
void PrecisionPanel::onRecipeFieldChanged() {
    if (!running_) {
        emit settingsChanged();
        return;
    }
    if (recipe_->issues().empty() && PrecisionPolicy::make(precision()).scaled())
        emit recipeConfigRequested(recipeConfig());
}

void PrecisionPanel::updateEnabled() {
    const bool scaled = scalerConfig().mode != ScalerMode::None;
    policy_->setEnabled(!running_);
    device_->setEnabled(!running_);
    wgrad_->setEnabled(!running_);
    for (const auto& [recipe, tick] : what_if_) tick->setEnabled(!running_);
    keep_ends_->setEnabled(!running_);
    backward_bf16_->setEnabled(!running_);
    apply_->setEnabled(running_ && scaler_->issues().empty());
    set_scale_->setEnabled(running_ && scaled);
    set_scale_log2_->setEnabled(running_ && scaled);
    set_lr_->setEnabled(running_);
    lr_->setEnabled(running_);
    live_hint_->setText(
        running_ ? tr("Changes are applied at the next step boundary.")
                 : tr("Available while a run goes on; the settings above are used when it starts."));
}

void PrecisionPanel::setRunning(bool running) {
    running_ = running;
    updateEnabled();
}

void PrecisionPanel::setLearningRate(float lr) { lr_->setText(QString::number(double(lr), 'g', 6)); }

// The form's issues are the scaler's own (LossScalerConfig::issues()): an invalid configuration
// is shown on its fields and never sent; the scaler checks what arrives once more by the same rules.
void PrecisionPanel::onApplyClicked() {
    if (!running_ || !scaler_->issues().empty()) return;
    emit scalerConfigRequested(scalerConfig());
}

void PrecisionPanel::onSetScaleClicked() {
    if (!running_) return;
    const double s = std::exp2(set_scale_log2_->value());
    const std::string problem = loss_scale_problem("requested scale", s);
    scale_request_error_->setText(QString::fromStdString(problem));
    scale_request_error_->setVisible(!problem.empty());
    if (problem.empty()) emit lossScaleRequested(s);
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
