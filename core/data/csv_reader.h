// Reader for numeric CSV tables: one sample per row, one column is the label (class or regression
// target), the others are features. Errors name the line and column, because a CSV that fails to
// load is nearly always one bad cell in a large file.
#pragma once
#include <cstdint>
#include <string>

#include "core/data/dataset.h"

namespace mpwb {

enum class CsvHeader {
    Auto,  // the first row is a header when none of its cells is a number
    Yes,
    No,
};

struct CsvOptions {
    CsvHeader header = CsvHeader::Auto;
    // Label column: by name (needs a header) when label_name is set, else by index;
    // a negative index counts from the end (-1 = last column).
    std::string label_name;
    int label_index = -1;
    // false: classification. Labels that are exactly the integers 0..K-1 are used as is; any
    // other labels (strings, other integers) are mapped to 0..K-1 in sorted order (numeric order
    // when all are numbers) and keep their text as class names.
    // true: regression, y is [N, 1].
    bool regression = false;
    double test_ratio = 0.2;  // rows held out, chosen by a seeded shuffle; 0 < r < 1
    uint64_t seed = 1;
    char delimiter = ',';
};

// Largest CSV file read (the parsed cells take several times the file's size in memory).
inline constexpr uint64_t kCsvMaxBytes = uint64_t{256} << 20;

// Sets the label column from its text form as configs and the CLI give it: an integer ("0",
// "-1") is an index, anything else a column name. ConfigError naming label_column, the text
// and the file when it is made of digits and '-' but is not an integer in range ("-", "1-").
void set_label_column(CsvOptions& options, const std::string& text, const std::string& path);

// Blank lines and lines starting with '#' are skipped; cells may be surrounded by spaces or
// double quotes. Throws DataError for an empty file, a ragged row (line number and cell counts),
// a non-numeric feature cell (line, column, text), NaN or infinite values (line, column), too few
// rows to split, a folder or a file over kCsvMaxBytes (before reading it); ConfigError for a
// label column that does not exist.
Dataset load_csv_dataset(const std::string& path, const CsvOptions& options = {});

}  // namespace mpwb
