// store_bench: prints the run store's figures (writer rows/s, downsampling time of a 1M-point
// series into 2000 buckets, median of 5) on a scratch database. Not registered with CTest.
// Usage: store_bench [database path] [points] [buckets]
#include "sessions/store_bench.h"
#include "sessions/store_error.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const bool scratch = argc < 2;
    const std::string path =
        scratch ? (fs::temp_directory_path() / ("mpwb_store_bench_" + std::to_string(::getpid()) + ".sqlite"))
                      .string()
                : argv[1];
    const int points = argc > 2 ? std::atoi(argv[2]) : 1000000;
    const int buckets = argc > 3 ? std::atoi(argv[3]) : 2000;
    int rc = 0;
    try {
        const double rows = mpwb::bench_writer_rows_per_s(path, 200000);
        std::printf("writer: %.0f rows/s (200000 metrics, batched, including the final flush)\n", rows);
        const double ms = mpwb::bench_downsample_ms(path, points, buckets);
        std::printf("downsample: %d points -> %d buckets: %.2f ms (median of 5)\n", points, buckets, ms);
    } catch (const mpwb::StoreError& e) {
        std::fprintf(stderr, "store_bench: %s\n", e.what());
        rc = 1;
    }
    if (scratch) {
        for (const char* s : {"", "-wal", "-shm"}) {
            std::error_code ec;
            fs::remove(path + s, ec);
        }
    }
    return rc;
}
