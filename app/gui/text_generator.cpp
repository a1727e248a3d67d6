// TextGenerator: one worker thread per generation, its result queued back to the GUI thread.
#include "app/gui/text_generator.h"

#include <exception>
#include <utility>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/train/text_sampler.h"
#include "sessions/run_language_model.h"
#include "sessions/run_store.h"

namespace mpwb {

TextGenerator::TextGenerator(QObject* parent) : QObject(parent) {}

TextGenerator::~TextGenerator() { wait(); }

void TextGenerator::wait() {
    if (worker_.joinable()) worker_.join();
}

TextGenerator::Result TextGenerator::generate(const Request& request) {
    Result result{request, 0, printable_lines(request.prompt), {}, {}};
    try {
        request.sampling.validate();
        RunStore::Options options;
        options.read_only = true;
        options.detect_interrupted = false;
        RunStore store(request.db_path, options);
        RunLanguageModel model = load_run_language_model(store, request.run_id);
        const std::vector<int32_t> prompt = model.vocabulary.encode(request.prompt, "prompt");
        if (prompt.empty()) throw ConfigError("the prompt is empty: give at least one character to continue");
        CpuBackend backend;
        const std::vector<int32_t> drawn = sample_tokens(
            model.network, backend, PrecisionPolicy::make(PrecisionKind::FP32), prompt, request.sampling);
        result.step = model.step;
        // A byte-level model may write bytes that are not UTF-8 or that a text view acts on.
        result.text = printable_lines(model.vocabulary.decode(drawn));
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    return result;
}

bool TextGenerator::start(Request request) {
    if (busy_) return false;
    wait();  // the previous worker has delivered its result; only its thread is left to join
    busy_ = true;
    worker_ = std::thread([this, request = std::move(request)] {
        Result result = generate(request);
        // Delivered on the GUI thread; dropped if this object is gone (its destructor joins first).
        QMetaObject::invokeMethod(
            this,
            [this, result = std::move(result)] {
                busy_ = false;
                emit finished(result);
            },
            Qt::QueuedConnection);
    });
    return true;
}

}  // namespace mpwb
