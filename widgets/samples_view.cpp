// SamplesView: the controls, the list of samples drawn into one read-only text view, and the
// reading of a stored or live sample event.
#include "widgets/samples_view.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QTextBlockFormat>
#include <QTextCharFormat>
#include <QTextCursor>
#include <QTextEdit>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

#include "core/common/printable.h"

namespace mpwb {

namespace {

QString detail_text(const nlohmann::json& detail, const char* key) {
    if (!detail.is_object() || !detail.contains(key) || !detail[key].is_string()) return {};
    return QString::fromStdString(detail[key].get<std::string>());
}

template <class T>
T detail_number(const nlohmann::json& detail, const char* key, T fallback) {
    if (!detail.is_object() || !detail.contains(key) || !detail[key].is_number()) return fallback;
    return detail[key].get<T>();
}

// A prompt's line breaks would be invisible inside its highlight (the default prompt is one):
// a return arrow shows where each one is (U+21B5, which the common monospace fonts have).
QString visible_breaks(const QString& prompt) {
    QString out = prompt;
    out.replace(QLatin1Char('\n'), QStringLiteral("\u21B5\n"));
    return out;
}

}  // namespace

std::optional<ShownSample> ShownSample::fromEvent(const QString& run, int64_t step, const QString& kind,
                                                  const nlohmann::json& detail) {
    ShownSample s;
    s.run = run;
    s.step = step;
    if (kind == QLatin1String("sample_failed")) {
        s.failed = true;
        s.text = QObject::tr("no sample: %1").arg(detail_text(detail, "error"));
        return s;
    }
    if (kind != QLatin1String("sample")) return std::nullopt;
    s.prompt = detail_text(detail, "prompt");
    s.text = detail_text(detail, "text");
    s.settings = settingsText(detail_number<int64_t>(detail, "tokens", 0),
                              detail_number<double>(detail, "temperature", 0.0),
                              detail_number<int64_t>(detail, "top_k", 0));
    return s;
}

QString ShownSample::settingsText(int64_t tokens, double temperature, int64_t top_k) {
    return QObject::tr("%1 tokens · temperature %2 · top-k %3")
        .arg(tokens)
        .arg(temperature, 0, 'g', 4)
        .arg(top_k > 0 ? QString::number(top_k) : QObject::tr("all"));
}

SamplesView::SamplesView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(makeControls());
    status_ = new QLabel;
    status_->setObjectName(QStringLiteral("samplesStatus"));
    status_->setWordWrap(true);
    layout->addWidget(status_);
    text_ = new QTextEdit;
    text_->setObjectName(QStringLiteral("samplesText"));
    text_->setReadOnly(true);
    text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    text_->setLineWrapMode(QTextEdit::WidgetWidth);
    // Generated text may run long without spaces; it wraps anywhere rather than widening the view.
    text_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    text_->setPlaceholderText(
        tr("No samples yet. A text run writes one after each evaluation; Generate writes one from a "
           "finished run."));
    layout->addWidget(text_, 1);
    setSampleConfig(TextSampleConfig{});
    updateGenerate();
}

QWidget* SamplesView::makeControls() {
    prompt_ = new QLineEdit;
    prompt_->setObjectName(QStringLiteral("samplePrompt"));
    prompt_->setToolTip(
        tr("The text the model continues. Type \\n for a new line, \\t for a tab, \\\\ for a backslash."));
    tokens_ = new QSpinBox;
    tokens_->setObjectName(QStringLiteral("sampleTokens"));
    tokens_->setRange(1, static_cast<int>(kMaxSampledTokens));
    tokens_->setToolTip(tr("How many tokens (characters or bytes) the model writes after the prompt"));
    temperature_ = new QDoubleSpinBox;
    temperature_->setObjectName(QStringLiteral("sampleTemperature"));
    temperature_->setRange(0.0, 100.0);
    temperature_->setDecimals(3);
    temperature_->setSingleStep(0.1);
    temperature_->setToolTip(
        tr("Softmax temperature: below 1 sharper, above 1 flatter; 0 always takes "
           "the most likely token"));
    top_k_ = new QSpinBox;
    top_k_->setObjectName(QStringLiteral("sampleTopK"));
    top_k_->setRange(0, 1000000);
    top_k_->setSpecialValueText(tr("all"));
    top_k_->setToolTip(tr("Draw only among the k most likely tokens (all: every token)"));
    seed_ = new QSpinBox;
    seed_->setObjectName(QStringLiteral("sampleSeed"));
    seed_->setRange(0, std::numeric_limits<int>::max());
    seed_->setValue(1);
    seed_->setToolTip(
        tr("Seed of Generate's draws: the same seed, run and settings write the same text. "
           "The samples during training are seeded by the run's seed and the step."));
    run_select_ = new QComboBox;
    run_select_->setObjectName(QStringLiteral("sampleRun"));
    run_select_->setToolTip(tr("The finished text run Generate samples from (its final weights)"));
    run_select_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    generate_ = new QPushButton(tr("Generate"));
    generate_->setObjectName(QStringLiteral("generateButton"));
    connect(generate_, &QPushButton::clicked, this,
            [this] { emit generateRequested(generateRun(), prompt(), generateSettings()); });
    // Every change at once: an emptied prompt blocks Train before the field loses the focus.
    connect(prompt_, &QLineEdit::textChanged, this, &SamplesView::settingsChanged);
    connect(tokens_, &QSpinBox::valueChanged, this, &SamplesView::settingsChanged);
    connect(temperature_, &QDoubleSpinBox::valueChanged, this, &SamplesView::settingsChanged);
    connect(top_k_, &QSpinBox::valueChanged, this, &SamplesView::settingsChanged);

    auto* box = new QWidget;
    auto* rows = new QVBoxLayout(box);
    rows->setContentsMargins(0, 0, 0, 0);
    auto* first = new QHBoxLayout;
    first->addWidget(new QLabel(tr("Prompt")));
    first->addWidget(prompt_, 1);
    first->addWidget(new QLabel(tr("Tokens")));
    first->addWidget(tokens_);
    first->addWidget(new QLabel(tr("Temperature")));
    first->addWidget(temperature_);
    first->addWidget(new QLabel(tr("Top-k")));
    first->addWidget(top_k_);
    auto* second = new QHBoxLayout;
    second->addWidget(new QLabel(tr("Generate from")));
    second->addWidget(run_select_, 1);
    second->addWidget(new QLabel(tr("Seed")));
    second->addWidget(seed_);
    second->addWidget(generate_);
    rows->addLayout(first);
    rows->addLayout(second);
    return box;
}

void SamplesView::setSampleConfig(const TextSampleConfig& config) {
    config_ = config;
    prompt_->setText(QString::fromStdString(printable_text(config.prompt)));
    tokens_->setValue(static_cast<int>(std::clamp<int64_t>(config.sampling.tokens, 1, kMaxSampledTokens)));
    temperature_->setValue(config.sampling.temperature);
    top_k_->setValue(static_cast<int>(std::clamp<int64_t>(config.sampling.top_k, 0, top_k_->maximum())));
}

std::string SamplesView::prompt() const { return text_from_printable(prompt_->text().toStdString()); }

TextSampleConfig SamplesView::sampleConfig() const {
    TextSampleConfig c = config_;
    c.prompt = prompt();
    c.sampling.tokens = tokens_->value();
    c.sampling.temperature = static_cast<float>(temperature_->value());
    c.sampling.top_k = top_k_->value();
    return c;
}

SamplingSettings SamplesView::generateSettings() const {
    SamplingSettings s = sampleConfig().sampling;
    s.seed = static_cast<uint64_t>(seed_->value());
    return s;
}

void SamplesView::setTextExperiment(bool text) {
    text_experiment_ = text;
    showStatus(defaultStatus(), false);
}

QString SamplesView::defaultStatus() const {
    if (!text_experiment_) return tr("Samples exist for text runs only (the text and fortunes datasets).");
    // The trainer reads its sample settings once, at the start: say so while a run goes on.
    if (!generate_blocked_.isEmpty())
        return tr("A run is training: these settings are for the next run; Generate waits until it ends.");
    return tr(
        "Each evaluation of a text run writes a sample with these settings; Generate samples from a "
        "finished run.");
}

void SamplesView::showStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? QStringLiteral("color: #e05050;") : QString());
}

QString SamplesView::statusText() const { return status_->text(); }

void SamplesView::addSample(ShownSample sample) {
    samples_.push_back(std::move(sample));
    while (samples_.size() > static_cast<size_t>(kMaxShownSamples)) samples_.pop_front();
    renderSoon();
}

// A stored run brings all its samples in one go: they are drawn once, after the last.
void SamplesView::renderSoon() {
    if (render_pending_) return;
    render_pending_ = true;
    QTimer::singleShot(0, this, [this] {
        render_pending_ = false;
        render();
    });
}

void SamplesView::clearSamples() {
    samples_.clear();
    run_select_->clear();
    renderSoon();
    updateGenerate();
}

const ShownSample* SamplesView::newestSample() const { return samples_.empty() ? nullptr : &samples_.back(); }

// The whole list, newest first: a header line per sample (run, step, settings), the prompt
// highlighted, the model's text, a rule between samples. Samples come a few per minute, so
// drawing them all again costs nothing that matters and keeps one order.
void SamplesView::render() {
    const int scrolled = text_->verticalScrollBar()->value();
    text_->clear();
    QTextCursor cursor(text_->document());
    QTextCharFormat header;
    header.setForeground(palette().color(QPalette::PlaceholderText));
    QTextCharFormat prompt;
    QColor mark = palette().color(QPalette::Highlight);
    mark.setAlpha(110);
    prompt.setBackground(mark);
    prompt.setFontWeight(QFont::Bold);
    const QTextCharFormat body;
    QTextBlockFormat rule;
    rule.setProperty(QTextFormat::BlockTrailingHorizontalRulerWidth,
                     QTextLength(QTextLength::PercentageLength, 100));
    bool first = true;
    for (auto it = samples_.rbegin(); it != samples_.rend(); ++it) {
        if (!first) {
            cursor.insertBlock(rule);
            cursor.insertBlock(QTextBlockFormat());
        }
        first = false;
        const QString who = it->generated ? tr("%1 · generated from step %2").arg(it->run).arg(it->step)
                                          : tr("%1 · step %2").arg(it->run).arg(it->step);
        cursor.insertText(it->settings.isEmpty() ? who : who + QStringLiteral(" · ") + it->settings, header);
        cursor.insertBlock(QTextBlockFormat());
        if (!it->prompt.isEmpty()) cursor.insertText(visible_breaks(it->prompt), prompt);
        cursor.insertText(it->text, body);
    }
    text_->verticalScrollBar()->setValue(scrolled);
}

void SamplesView::addGenerateRun(qint64 run_id, const QString& label) {
    const int existing = run_select_->findData(run_id);
    if (existing >= 0) run_select_->removeItem(existing);
    run_select_->insertItem(0, label, run_id);
    run_select_->setCurrentIndex(0);
    updateGenerate();
}

qint64 SamplesView::generateRun() const {
    return run_select_->currentIndex() < 0 ? 0 : run_select_->currentData().toLongLong();
}

void SamplesView::setGenerateBlocked(const QString& why) {
    if (why == generate_blocked_) return;
    generate_blocked_ = why;
    if (!generating_) showStatus(defaultStatus(), false);  // an error shown stays until this changes
    updateGenerate();
}

void SamplesView::setGenerating(bool generating) {
    generating_ = generating;
    if (generating)
        showStatus(tr("Generating from run #%1…").arg(generateRun()), false);
    else if (status_->text().startsWith(tr("Generating")))
        showStatus(defaultStatus(), false);
    updateGenerate();
}

void SamplesView::showGenerateError(const QString& text) { showStatus(text, true); }

void SamplesView::updateGenerate() {
    const bool has_run = run_select_->count() > 0;
    generate_->setEnabled(has_run && !generating_ && generate_blocked_.isEmpty());
    generate_->setText(generating_ ? tr("Generating…") : tr("Generate"));
    generate_->setToolTip(!generate_blocked_.isEmpty() ? tr("Generate waits: %1").arg(generate_blocked_)
                          : has_run
                              ? tr("Sample from the chosen run's final weights with these settings")
                              : tr("Open a finished text run (Runs panel) or train one to sample from"));
}

}  // namespace mpwb
