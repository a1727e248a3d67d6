// CSV reader. The file is read whole and parsed line by line with std::from_chars (locale
// independent, so "1.5" parses the same under every LC_NUMERIC). Quoted cells may hold the
// delimiter; a newline inside quotes is not supported (numeric tables never need it).
#include "core/data/csv_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cfloat>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/common/error.h"
#include "core/common/input_file.h"
#include "core/common/printable.h"
#include "core/common/rng.h"

namespace mpwb {
namespace {

struct Row {
    int64_t line;
    std::vector<std::string> cells;
};

// How much of a cell a message quotes: a cell may be megabytes long.
constexpr size_t kShownCellBytes = 64;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

std::vector<std::string> split_cells(std::string_view line, char delim, const std::string& path,
                                     int64_t line_no) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false, was_quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < line.size() && line[i + 1] == '"') {
                    cell += '"';
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                cell += c;
            }
        } else if (c == '"' && trim(cell).empty()) {
            quoted = was_quoted = true;
            cell.clear();
        } else if (c == delim) {
            cells.emplace_back(was_quoted ? cell : std::string(trim(cell)));
            cell.clear();
            was_quoted = false;
        } else {
            cell += c;
        }
    }
    if (quoted)
        throw DataError("CSV file " + quoted_text(path) + ", line " + std::to_string(line_no) +
                        ": unterminated quoted cell");
    cells.emplace_back(was_quoted ? cell : std::string(trim(cell)));
    return cells;
}

std::optional<double> parse_number(std::string_view s) {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ptr != s.data() + s.size()) return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
        // Overflow is reported as non-finite below; underflow is a harmless zero.
        const bool neg = s.front() == '-';
        const auto e = s.find_first_of("eE");
        const bool big_exponent = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] != '-';
        if (big_exponent) return neg ? -HUGE_VAL : HUGE_VAL;
        return neg ? -0.0 : 0.0;
    }
    if (ec != std::errc()) return std::nullopt;
    return v;
}

class CsvError {
public:
    CsvError(std::string path, const std::vector<std::string>* header)
        : path_(std::move(path)), header_(header) {}

    std::string where(int64_t line, size_t col) const {
        std::string s = "CSV file " + quoted_text(path_) + ", line " + std::to_string(line) + ", column " +
                        std::to_string(col + 1);
        if (header_ && col < header_->size()) s += " (" + quoted_text((*header_)[col]) + ")";
        return s;
    }
    // A finite float from a cell, or a DataError naming line, column and text.
    float number(const std::string& cell, int64_t line, size_t col) const {
        if (trim(cell).empty()) throw DataError(where(line, col) + ": empty cell");
        const auto v = parse_number(cell);
        if (!v)
            throw DataError(where(line, col) + ": " + quoted_text(cell, kShownCellBytes) +
                            " is not a number");
        if (std::isnan(*v))
            throw DataError(where(line, col) + ": NaN value " + quoted_text(cell, kShownCellBytes));
        if (!std::isfinite(*v) || std::fabs(*v) > FLT_MAX)
            throw DataError(where(line, col) + ": infinite value " + quoted_text(cell, kShownCellBytes) +
                            " (out of FP32 range)");
        return static_cast<float>(*v);
    }

private:
    std::string path_;
    const std::vector<std::string>* header_;
};

std::string number_name(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// The whole file, after the checks every input file gets (a folder read as a stream fails
// with "basic_filebuf::underflow"; a huge file is refused from its size).
std::string read_csv_text(const std::string& path) {
    if (const std::string problem = input_file_problem(path); !problem.empty())
        throw DataError("cannot open CSV file " + quoted_text(path) + ": it " + problem);
    const uint64_t size = input_file_size(path);
    if (size > kCsvMaxBytes)
        throw DataError("CSV file " + quoted_text(path) + " is " + byte_size_text(size) + ", more than the " +
                        byte_size_text(kCsvMaxBytes) + " limit");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError("cannot open CSV file " + quoted_text(path));
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) throw DataError("cannot read CSV file " + quoted_text(path));
    text.resize(static_cast<size_t>(in.gcount()));
    return text;
}

Dataset parse_csv(const std::string& path, std::string text, const CsvOptions& opt);

}  // namespace

void set_label_column(CsvOptions& options, const std::string& text, const std::string& path) {
    options.label_name.clear();
    options.label_index = -1;
    if (text.empty()) return;
    if (text.find_first_not_of("-0123456789") != std::string::npos) {
        options.label_name = text;
        return;
    }
    int index = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (ec == std::errc::result_out_of_range)
        throw ConfigError("CSV label_column " + quoted_text(text) + " for " + quoted_text(path) +
                          " is out of range for a column index");
    if (ec != std::errc() || end != text.data() + text.size())
        throw ConfigError("CSV label_column " + quoted_text(text) + " for " + quoted_text(path) +
                          " is not a column index (an integer such as 0 or -1) or a column name");
    options.label_index = index;
}

Dataset load_csv_dataset(const std::string& path, const CsvOptions& opt) {
    if (!std::isfinite(opt.test_ratio) || opt.test_ratio <= 0.0 || opt.test_ratio >= 1.0)
        throw ConfigError("CSV test_ratio " + std::to_string(opt.test_ratio) + " out of range (0, 1)");
    std::string text = read_csv_text(path);
    const size_t size = text.size();
    try {
        return parse_csv(path, std::move(text), opt);
    } catch (const std::bad_alloc&) {
        throw DataError("not enough memory to load CSV file " + quoted_text(path) + " (" +
                        byte_size_text(size) + ")");
    }
}

namespace {

// The rows that hold cells: blank lines and '#' comments skipped, a UTF-8 byte order mark (from
// spreadsheet exports) dropped.
std::vector<Row> read_rows(const std::string& path, std::string text, char delimiter) {
    if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
        static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF)
        text.erase(0, 3);
    std::vector<Row> rows;
    int64_t line_no = 0;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        ++line_no;
        const std::string_view line = trim(std::string_view(text).substr(pos, end - pos));
        pos = end + 1;
        if (line.empty() || line.front() == '#') continue;
        rows.push_back({line_no, split_cells(line, delimiter, path, line_no)});
    }
    if (rows.empty()) throw DataError("CSV file " + quoted_text(path) + " is empty (no rows)");
    return rows;
}

// The table's layout: its header (when it has one), where the data rows start, how many columns
// the first row has; checked to leave a feature, a label and a train/test split.
struct CsvLayout {
    std::vector<std::string> header;  // empty without a header row
    bool has_header = false;
    size_t first = 0;  // the first data row
    size_t ncols = 0;
};

CsvLayout table_layout(const std::string& path, const std::vector<Row>& rows, CsvHeader header) {
    CsvLayout t;
    t.has_header = header == CsvHeader::Yes;
    if (header == CsvHeader::Auto) {
        t.has_header = std::none_of(rows[0].cells.begin(), rows[0].cells.end(),
                                    [](const std::string& c) { return parse_number(c).has_value(); });
    }
    if (t.has_header) t.header = rows[0].cells;
    t.first = t.has_header ? 1 : 0;
    t.ncols = rows[0].cells.size();
    if (t.ncols < 2)
        throw DataError("CSV file " + quoted_text(path) + " has " + std::to_string(t.ncols) +
                        " column; it needs at least one feature column and a label column");
    if (rows.size() <= t.first)
        throw DataError("CSV file " + quoted_text(path) + " has a header but no data rows");
    // Before the classes are counted: one row is one class, but the problem is the row count.
    if (rows.size() - t.first < 2)
        throw DataError("CSV file " + quoted_text(path) +
                        " has 1 data row; a train/test split needs at least 2");
    return t;
}

size_t label_column(const std::string& path, const CsvLayout& t, const CsvOptions& opt) {
    if (!opt.label_name.empty()) {
        if (!t.has_header)
            throw ConfigError("CSV label column " + quoted_text(opt.label_name) + " given by name, but " +
                              quoted_text(path) + " has no header row");
        const auto it = std::find(t.header.begin(), t.header.end(), opt.label_name);
        if (it == t.header.end()) {
            std::string names;
            for (const auto& h : t.header)
                names += (names.empty() ? "" : ", ") + printable_text(h, kShownCellBytes);
            throw ConfigError("CSV file " + quoted_text(path) + " has no column " +
                              quoted_text(opt.label_name) + " (columns: " + names + ")");
        }
        return static_cast<size_t>(it - t.header.begin());
    }
    const int64_t idx =
        opt.label_index < 0 ? static_cast<int64_t>(t.ncols) + opt.label_index : opt.label_index;
    if (idx < 0 || idx >= static_cast<int64_t>(t.ncols))
        throw ConfigError("CSV label column index " + std::to_string(opt.label_index) + " out of range for " +
                          quoted_text(path) + " with " + std::to_string(t.ncols) + " columns");
    return static_cast<size_t>(idx);
}

// The data rows' cells: the feature values, row-major, and each row's label text with its line.
struct CsvCells {
    std::vector<float> features;
    std::vector<std::string> label_text;
    std::vector<int64_t> label_line;
    int64_t rows = 0, features_per_row = 0;
};

CsvCells read_cells(const std::string& path, const std::vector<Row>& rows, const CsvLayout& t,
                    size_t label_col, const CsvError& err) {
    CsvCells cells;
    cells.rows = static_cast<int64_t>(rows.size() - t.first);
    cells.features_per_row = static_cast<int64_t>(t.ncols - 1);
    cells.features.resize(static_cast<size_t>(cells.rows * cells.features_per_row));
    float* f = cells.features.data();
    for (size_t r = t.first; r < rows.size(); ++r) {
        const Row& row = rows[r];
        if (row.cells.size() != t.ncols)
            throw DataError("CSV file " + quoted_text(path) + ", line " + std::to_string(row.line) +
                            ": ragged row with " + std::to_string(row.cells.size()) + " cells, expected " +
                            std::to_string(t.ncols) + " (as on line " + std::to_string(rows[0].line) + ")");
        for (size_t c = 0; c < t.ncols; ++c) {
            if (c == label_col) continue;
            *f++ = err.number(row.cells[c], row.line, c);
        }
        cells.label_text.push_back(row.cells[label_col]);
        cells.label_line.push_back(row.line);
    }
    return cells;
}

// Integer labels: 0..K-1 keep their meaning; anything else is renumbered in order.
std::vector<float> numeric_class_targets(const CsvCells& cells, size_t label_col, const CsvError& err,
                                         std::vector<std::string>& class_names) {
    std::vector<double> values(cells.label_text.size());
    std::set<double> distinct;
    for (size_t i = 0; i < values.size(); ++i) {
        const double v = err.number(cells.label_text[i], cells.label_line[i], label_col);
        if (v != std::floor(v))
            throw DataError(err.where(cells.label_line[i], label_col) + ": class label " +
                            quoted_text(cells.label_text[i], kShownCellBytes) +
                            " is not an integer (load the file as regression for continuous targets)");
        values[i] = v;
        distinct.insert(v);
    }
    const bool identity =
        *distinct.begin() == 0.0 && *distinct.rbegin() == static_cast<double>(distinct.size() - 1);
    std::map<double, int> index;
    for (double v : distinct) {
        index.emplace(v, static_cast<int>(index.size()));
        class_names.push_back(number_name(v));
    }
    std::vector<float> targets(values.size());
    for (size_t i = 0; i < values.size(); ++i)
        targets[i] = identity ? static_cast<float>(values[i]) : static_cast<float>(index.at(values[i]));
    return targets;
}

// Text labels: classes in sorted order, named by their text.
std::vector<float> text_class_targets(const CsvCells& cells, size_t label_col, const CsvError& err,
                                      std::vector<std::string>& class_names) {
    std::map<std::string, int> string_class;
    for (size_t i = 0; i < cells.label_text.size(); ++i) {
        if (trim(cells.label_text[i]).empty())
            throw DataError(err.where(cells.label_line[i], label_col) + ": empty label");
        string_class.emplace(cells.label_text[i], 0);
    }
    int k = 0;
    for (auto& [name, index] : string_class) {
        index = k++;
        class_names.push_back(printable_text(name));
    }
    std::vector<float> targets(cells.label_text.size());
    for (size_t i = 0; i < targets.size(); ++i)
        targets[i] = static_cast<float>(string_class.at(cells.label_text[i]));
    return targets;
}

// The targets of every row, and the dataset's classes (none for regression).
std::vector<float> targets_of(const std::string& path, const CsvCells& cells, size_t label_col,
                              const CsvError& err, bool regression, Dataset& ds) {
    if (regression) {
        std::vector<float> targets(cells.label_text.size());
        for (size_t i = 0; i < targets.size(); ++i)
            targets[i] = err.number(cells.label_text[i], cells.label_line[i], label_col);
        ds.num_classes = 0;
        return targets;
    }
    // Classes: numbers if every label is one, else strings.
    const bool all_numeric = std::all_of(cells.label_text.begin(), cells.label_text.end(),
                                         [](const std::string& t) { return parse_number(t).has_value(); });
    std::vector<float> targets = all_numeric ? numeric_class_targets(cells, label_col, err, ds.class_names)
                                             : text_class_targets(cells, label_col, err, ds.class_names);
    ds.num_classes = static_cast<int>(ds.class_names.size());
    if (ds.num_classes < 2)
        throw DataError("CSV file " + quoted_text(path) + ": label column " + std::to_string(label_col + 1) +
                        " holds a single class " + quoted_text(ds.class_names[0]) +
                        "; classification needs at least 2 (or load it as regression)");
    return targets;
}

// The rows shuffled from the seed, test_ratio of them (at least one, and one left) held out.
void split_train_test(const CsvCells& cells, const std::vector<float>& targets, const CsvOptions& opt,
                      Dataset& ds) {
    const int64_t n = cells.rows, nf = cells.features_per_row;
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    Rng rng(opt.seed);
    for (int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<size_t>(i)],
                  order[static_cast<size_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
    const int64_t n_test =
        std::clamp<int64_t>(std::llround(static_cast<double>(n) * opt.test_ratio), 1, n - 1);
    const int64_t n_train = n - n_test;

    const Shape ys = ds.is_classification() ? Shape{} : Shape{1};
    ds.train_x.resize(with_batch(n_train, ds.sample_shape));
    ds.test_x.resize(with_batch(n_test, ds.sample_shape));
    ds.train_y.resize(with_batch(n_train, ys));
    ds.test_y.resize(with_batch(n_test, ys));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t src = order[static_cast<size_t>(i)];
        const bool train = i < n_train;
        const int64_t j = train ? i : i - n_train;
        std::copy_n(cells.features.data() + src * nf, nf, (train ? ds.train_x : ds.test_x).data() + j * nf);
        (train ? ds.train_y : ds.test_y)[j] = targets[static_cast<size_t>(src)];
    }
}

Dataset parse_csv(const std::string& path, std::string text, const CsvOptions& opt) {
    const std::vector<Row> rows = read_rows(path, std::move(text), opt.delimiter);
    const CsvLayout layout = table_layout(path, rows, opt.header);
    const size_t label_col = label_column(path, layout, opt);
    const CsvError err(path, layout.has_header ? &layout.header : nullptr);
    const CsvCells cells = read_cells(path, rows, layout, label_col, err);
    Dataset ds;
    ds.name = printable_text(std::filesystem::path(path).stem().string());
    ds.sample_shape = {cells.features_per_row};
    const std::vector<float> targets = targets_of(path, cells, label_col, err, opt.regression, ds);
    split_train_test(cells, targets, opt, ds);
    return ds;
}

}  // namespace

}  // namespace mpwb
