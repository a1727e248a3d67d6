// Benchmarks of the run store, as functions so that `mpwb-cli bench --store` and the
// store_bench program print the same figures. They write into the database they are given.
#pragma once
#include <string>

namespace mpwb {

// Writes `rows` metrics through a RunWriter into a new run in db_path, flushes, and returns
// the committed rows per second (wall clock, including the final flush).
double bench_writer_rows_per_s(const std::string& db_path, int rows);

// Ensures db_path holds a run with a `points`-point series (created once, then reused), then
// returns the median over 5 calls of downsample(series, buckets), in milliseconds.
double bench_downsample_ms(const std::string& db_path, int points, int buckets);

}  // namespace mpwb
