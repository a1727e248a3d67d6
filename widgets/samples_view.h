// SamplesView: the workbench's Samples tab, where a language model's writing is read. It lists the
// samples a text run writes after each evaluation (live as they arrive, or as stored with an
// opened run) and the text Generate draws from a finished run's final weights, newest on top,
// the prompt highlighted. Its controls hold the prompt and the sampling settings: those of the
// next run's samples (TrainConfig.samples) and of Generate, which also takes the seed. The view
// only shows and asks; the window loads the run and samples off the GUI thread
// (app/gui/text_generator) and hands the text back.
#pragma once
#include <QString>
#include <QWidget>

#include <cstdint>
#include <deque>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/train/train_config.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextEdit;

namespace mpwb {

// One piece of a model's writing: the prompt and what the model wrote after it, both printable
// already (the trainer and the generator pass them through core/common/printable).
struct ShownSample {
    QString run;       // the run's label
    int64_t step = 0;  // the step of the weights that wrote it
    QString prompt;
    QString text;
    QString settings;        // "200 tokens · temperature 0.8 · top-k all"
    bool generated = false;  // by Generate, after training
    bool failed = false;     // no sample: `text` says why

    // A run's "sample" or "sample_failed" event (Trainer::write_text_sample); nullopt for any
    // other kind.
    static std::optional<ShownSample> fromEvent(const QString& run, int64_t step, const QString& kind,
                                                const nlohmann::json& detail);
    // "200 tokens · temperature 0.8 · top-k all"
    static QString settingsText(int64_t tokens, double temperature, int64_t top_k);
};

class SamplesView : public QWidget {
    Q_OBJECT
public:
    // The newest samples kept on display (the run store keeps them all).
    static constexpr int kMaxShownSamples = 200;

    explicit SamplesView(QWidget* parent = nullptr);

    // The controls from a run's settings, and back: prompt, tokens, temperature and top-k; the
    // rest (enabled, the seed the trainer replaces) is kept as set.
    void setSampleConfig(const TextSampleConfig& config);
    TextSampleConfig sampleConfig() const;
    // What Generate draws: the controls' settings with the seed control's seed.
    SamplingSettings generateSettings() const;
    // The prompt as text: the escapes typed in the prompt field (\n, \t, \\, \xNN) resolved.
    std::string prompt() const;
    // Whether the experiment in the docks trains on text; if not, the tab says in one line that
    // samples exist for text runs only.
    void setTextExperiment(bool text);
    bool textExperiment() const { return text_experiment_; }

    // A sample on top of the list (the oldest beyond kMaxShownSamples leave it).
    void addSample(ShownSample sample);
    // No samples and no runs to generate from.
    void clearSamples();
    int sampleCount() const { return static_cast<int>(samples_.size()); }
    // The newest sample, if any.
    const ShownSample* newestSample() const;

    // A run Generate can sample from (a finished text run with final weights); the newest
    // added is chosen.
    void addGenerateRun(qint64 run_id, const QString& label);
    qint64 generateRun() const;
    // Generate is refused while `why` is not empty (a run is training).
    void setGenerateBlocked(const QString& why);
    // A generation is in progress (the button waits) or ended.
    void setGenerating(bool generating);
    // A generation failed: the reason, in the status line.
    void showGenerateError(const QString& text);
    // The status line under the controls.
    QString statusText() const;

    QLineEdit* promptEdit() const { return prompt_; }
    QSpinBox* tokensSpin() const { return tokens_; }
    QDoubleSpinBox* temperatureSpin() const { return temperature_; }
    QSpinBox* topKSpin() const { return top_k_; }
    QSpinBox* seedSpin() const { return seed_; }
    QComboBox* runSelector() const { return run_select_; }
    QPushButton* generateButton() const { return generate_; }
    QTextEdit* textView() const { return text_; }

signals:
    // Generate was pressed: the run, the prompt as text and the settings.
    void generateRequested(qint64 run_id, const std::string& prompt, const mpwb::SamplingSettings& settings);
    // A control changed (the next run's samples).
    void settingsChanged();

private:
    QWidget* makeControls();
    void render();
    void renderSoon();
    void updateGenerate();
    void showStatus(const QString& text, bool error);
    QString defaultStatus() const;

    TextSampleConfig config_;  // the fields the controls do not show
    std::deque<ShownSample> samples_;
    bool text_experiment_ = true;
    bool generating_ = false;
    bool render_pending_ = false;
    QString generate_blocked_;
    QLineEdit* prompt_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QSpinBox* top_k_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QComboBox* run_select_ = nullptr;
    QPushButton* generate_ = nullptr;
    QLabel* status_ = nullptr;
    QTextEdit* text_ = nullptr;
};

}  // namespace mpwb
