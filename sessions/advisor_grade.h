// The recipe advisor's grade of a cell (sessions/recipe_advisor.h): the thresholds the Scaling
// tab's advisor colours by and the report's advisor table uses, in one place so both agree.
#pragma once
#include <cmath>

#include "sessions/recipe_advisor.h"

namespace mpwb {

// Poor below kAdvisorPoorSqnrDb, or with more than kAdvisorPoorUnderflow of the non-zero values
// underflowing (a dB figure hides values lost entirely); good at or above kAdvisorGoodSqnrDb with
// no underflow; fair between.
inline constexpr double kAdvisorPoorSqnrDb = 15;
inline constexpr double kAdvisorGoodSqnrDb = 25;
inline constexpr double kAdvisorPoorUnderflow = 0.01;

enum class AdvisorGrade { Good, Fair, Poor };

inline AdvisorGrade advisor_grade(const AdvisorCell& cell) {
    if (std::isnan(cell.min_sqnr_db) || cell.min_sqnr_db < kAdvisorPoorSqnrDb ||
        cell.max_underflow > kAdvisorPoorUnderflow)
        return AdvisorGrade::Poor;
    if (cell.min_sqnr_db >= kAdvisorGoodSqnrDb && cell.max_underflow == 0) return AdvisorGrade::Good;
    return AdvisorGrade::Fair;
}

// The background colours of the grades (light, so black text stays readable).
inline const char* advisor_grade_colour(AdvisorGrade grade) {
    switch (grade) {
        case AdvisorGrade::Good:
            return "#c8e6c9";
        case AdvisorGrade::Fair:
            return "#ffecb3";
        case AdvisorGrade::Poor:
            return "#ffcdd2";
    }
    return "";
}

}  // namespace mpwb
