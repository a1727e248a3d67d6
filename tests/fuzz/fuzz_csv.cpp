// libFuzzer harness: a CSV dataset file (core/data/csv_reader.cpp), read both ways the app
// offers: as classes with the label in the last column (header detected), and as a regression
// target in the first column with a header required.
#include "core/data/csv_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = mpwb::fuzz::write_input("data.csv", data, size);
    mpwb::fuzz::expect_app_errors([&] { (void)mpwb::load_csv_dataset(path); });
    mpwb::fuzz::expect_app_errors([&] {
        mpwb::CsvOptions options;
        options.header = mpwb::CsvHeader::Yes;
        options.label_index = 0;
        options.regression = true;
        (void)mpwb::load_csv_dataset(path, options);
    });
    return 0;
}
