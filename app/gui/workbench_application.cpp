// WorkbenchApplication: QApplication::notify with optional timing of each top-level delivery.
#include "app/gui/workbench_application.h"

#include <QElapsedTimer>
#include <QEvent>
#include <QMetaEnum>
#include <QThread>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace mpwb {
namespace {

// CPU time of the calling thread: next to a delivery's wall time it tells a handler that worked
// for long from one whose thread waited for a core.
double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

WorkbenchApplication::WorkbenchApplication(int& argc, char** argv) : QApplication(argc, argv) {
    if (const char* v = std::getenv("MPWB_SLOW_EVENT_MS")) {
        print_over_ms_ = std::atof(v);
        timing_ = true;
    }
}

void WorkbenchApplication::startTiming(int count) {
    keep_ = static_cast<size_t>(std::max(1, count));
    slowest_.clear();
    totals_.clear();
    counts_.clear();
    timing_ = true;
}

void WorkbenchApplication::stopTiming() { timing_ = print_over_ms_ >= 0; }

std::vector<SlowEvent> WorkbenchApplication::slowest() const { return slowest_; }

std::vector<SlowEvent> WorkbenchApplication::totals() const {
    std::vector<SlowEvent> out;
    for (auto it = totals_.cbegin(); it != totals_.cend(); ++it)
        out.push_back({it.value(), it.key(), counts_.value(it.key())});
    std::sort(out.begin(), out.end(), [](const SlowEvent& a, const SlowEvent& b) { return a.ms > b.ms; });
    return out;
}

bool WorkbenchApplication::notify(QObject* receiver, QEvent* event) {
    // Only the outermost delivery on the GUI thread is a stall of the loop; nested ones (a paint
    // inside a replot) are part of it.
    if (!timing_ || depth_ > 0 || QThread::currentThread() != thread())
        return QApplication::notify(receiver, event);
    ++depth_;
    QElapsedTimer clock;
    clock.start();
    const double cpu_start = thread_cpu_ms();
    const QEvent::Type type = event->type();  // the event may not outlive the delivery
    const char* cls = receiver ? receiver->metaObject()->className() : "?";
    const QString name = receiver ? receiver->objectName() : QString();
    bool result = false;
    try {
        result = QApplication::notify(receiver, event);
    } catch (...) {
        --depth_;
        throw;
    }
    --depth_;
    const double ms = static_cast<double>(clock.nsecsElapsed()) * 1e-6;
    const double cpu_ms = thread_cpu_ms() - cpu_start;
    const char* type_name = QMetaEnum::fromType<QEvent::Type>().valueToKey(type);
    SlowEvent e{ms, QStringLiteral("%1 '%2' %3")
                        .arg(QString::fromLatin1(cls), name,
                             type_name ? QString::fromLatin1(type_name) : QString::number(type))};
    e.cpu_ms = cpu_ms;
    totals_[e.what] += ms;
    ++counts_[e.what];
    const bool keep = slowest_.size() < keep_ || ms > slowest_.back().ms;
    if (print_over_ms_ >= 0 && ms > print_over_ms_)
        std::fprintf(stderr, "mpwb: slow event %.1f ms (%.1f ms CPU): %s\n", ms, cpu_ms, qPrintable(e.what));
    if (keep) {
        slowest_.push_back(std::move(e));
        std::sort(slowest_.begin(), slowest_.end(),
                  [](const SlowEvent& a, const SlowEvent& b) { return a.ms > b.ms; });
        if (slowest_.size() > keep_) slowest_.pop_back();
    }
    return result;
}

}  // namespace mpwb
