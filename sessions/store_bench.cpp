// Store benchmarks (see store_bench.h). The series values are a cheap deterministic function of
// the step, so the benchmark needs no random number generator and gives the same data each time.
#include "sessions/store_bench.h"

#include "sessions/run_store.h"
#include "sessions/run_writer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace mpwb {

namespace {
double series_value(std::int64_t step) {
    return std::exp(-1e-6 * static_cast<double>(step)) + 0.01 * std::sin(0.37 * static_cast<double>(step));
}

std::int64_t fill_run(const std::string& db_path, const std::string& name, int rows, const std::string& key) {
    std::int64_t id;
    {
        RunStore store(db_path);
        RunInfo info;
        info.name = name;
        id = store.create_run(info);
    }
    RunWriter::Options o;
    o.max_pending_rows = 16384;
    RunWriter w(db_path, id, o);
    const double t0 = store_now();
    for (int i = 0; i < rows; ++i) {
        w.log_metric(key, i, t0 + i * 1e-3, series_value(i));
    }
    if (!w.finish(RunStatus::Finished, std::chrono::minutes(5))) {
        throw StoreError(StoreError::Kind::Other,
                         "benchmark writer did not finish: " + w.last_error().value_or("timeout"));
    }
    return id;
}
}  // namespace

double bench_writer_rows_per_s(const std::string& db_path, int rows) {
    const auto t0 = std::chrono::steady_clock::now();
    fill_run(db_path, "bench writer", rows, "bench/writer");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rows / s;
}

double bench_downsample_ms(const std::string& db_path, int points, int buckets) {
    const std::string name = "bench downsample " + std::to_string(points);
    std::int64_t id = 0;
    {
        RunStore store(db_path);
        RunFilter f;
        f.text = name;
        for (const auto& r : store.list_runs(f)) {
            if (r.name == name && r.status == RunStatus::Finished) {
                id = r.id;
            }
        }
    }
    if (id == 0) {
        id = fill_run(db_path, name, points, "bench/series");
    }
    RunStore store(db_path);
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto b = store.downsample(id, "bench/series", buckets);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (b.empty()) {
            throw StoreError(StoreError::Kind::Other, "benchmark series is empty");
        }
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace mpwb
