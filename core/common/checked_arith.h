// Overflow-checked integer arithmetic for sizes that come from input files: layer widths, image
// counts, shape products. A size product that wraps around turns a refused input into a small,
// wrong allocation and a heap overflow, so every such product goes through these helpers.
// Saturating forms clamp at INT64_MAX: a saturated size is always over any limit, and the limit
// check that follows names it.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mpwb {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// Largest dimension BLAS (int) and most GPU libraries accept.
inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// For non-negative sizes: a * b, or INT64_MAX when it does not fit.
inline int64_t saturating_mul(int64_t a, int64_t b) { return checked_mul(a, b).value_or(kInt64Max); }
inline int64_t saturating_add(int64_t a, int64_t b) { return checked_add(a, b).value_or(kInt64Max); }

// Product of non-negative dimensions, or nullopt when it overflows int64.
inline std::optional<int64_t> checked_product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
        const auto next = checked_mul(n, d);
        if (!next) return std::nullopt;
        n = *next;
    }
    return n;
}

// "1,234,567" for messages about sizes; "over 9,223,372,036,854,775,807" for a saturated one.
inline std::string size_text(int64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    const size_t first = digits.front() == '-' ? 1 : 0;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > first && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return n == kInt64Max ? "over " + out : out;
}

}  // namespace mpwb
