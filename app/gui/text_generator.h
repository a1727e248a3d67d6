// TextGenerator: the Samples tab's Generate, off the GUI thread. Loading a stored run and drawing
// 200 tokens through fortunes-gpt takes about a second on two cores, which would freeze the
// window. It takes the one path of `mpwb-cli generate` (sessions/run_language_model, then
// core/train/text_sampler in FP32 on the CPU), on a thread of its own with its own read-only
// connection to the store, and hands the text back as a signal on the GUI thread.
#pragma once
#include <QObject>

#include <cstdint>
#include <string>
#include <thread>

#include "core/train/sampling_settings.h"

namespace mpwb {

class TextGenerator : public QObject {
    Q_OBJECT
public:
    struct Request {
        std::string db_path;
        int64_t run_id = 0;
        std::string prompt;  // text, in the run's vocabulary
        SamplingSettings sampling;
    };
    // What came of a request: the text or the error (one of the two is empty).
    struct Result {
        Request request;
        int64_t step = 0;    // the step of the run's final weights
        std::string prompt;  // printable (core/common/printable)
        std::string text;    // printable
        std::string error;
    };

    explicit TextGenerator(QObject* parent = nullptr);
    // Waits for a generation in progress.
    ~TextGenerator() override;

    // Starts one generation; false when one is in progress.
    bool start(Request request);
    bool busy() const { return busy_; }
    // Blocks until the generation in progress (if any) ended; its `finished` is still queued.
    void wait();

    // The one generation, on the calling thread (the worker; tests).
    static Result generate(const Request& request);

signals:
    void finished(const mpwb::TextGenerator::Result& result);

private:
    std::thread worker_;
    bool busy_ = false;  // GUI thread only: from start until `finished` is delivered
};

}  // namespace mpwb
