// The report's precision tables: each GEMM's precision per pass (the "gemm_precisions" event a
// run stores) and the recipe advisor (sessions/recipe_advisor.h), its cells graded as the
// Scaling tab's advisor grades them (sessions/advisor_grade.h).
#include <cmath>

#include "app/report/report_html.h"
#include "sessions/advisor_grade.h"

namespace mpwb::report_detail {

namespace {

QString grade_colour(const AdvisorCell& cell) {
    return QString::fromLatin1(advisor_grade_colour(advisor_grade(cell)));
}

QString cell_text(const AdvisorCell& cell, bool with_recipe) {
    if (!cell.present) return QStringLiteral("—");
    QString text = std::isnan(cell.min_sqnr_db) ? QStringLiteral("NaN")
                   : cell.min_sqnr_db >= 999
                       ? QStringLiteral("lossless")
                       : QString::number(cell.min_sqnr_db, 'f', 1) + QStringLiteral(" dB");
    if (with_recipe) text = html_escape(QString::fromStdString(cell.recipe)) + QStringLiteral(" · ") + text;
    if (cell.max_underflow > 0) text += QStringLiteral(" · underflow ") + percent_text(cell.max_underflow, 2);
    return text;
}

}  // namespace

extern const QString kGemmPrecisionNote = QStringLiteral(
    "The precision each GEMM's forward (fprop), data-gradient (dgrad) and weight-gradient (wgrad) "
    "pass ran in, as the run resolved its precision rules.");

extern const QString kAdvisorNote =
    QStringLiteral(
        "Per GEMM, the worst operand's SQNR at the last statistics step under the run's own precision "
        "and under each what-if recipe (statistics only: the run did not use them). Green: SQNR ≥ %1 dB "
        "and no underflow; red: SQNR < %2 dB or more than %3% of the non-zero values underflow; amber "
        "between. A what-if fp8-delayed column's amax history covers statistics steps only.")
        .arg(kAdvisorGoodSqnrDb)
        .arg(kAdvisorPoorSqnrDb)
        .arg(100 * kAdvisorPoorUnderflow);

extern const QString kWhatIfNote =
    QStringLiteral("The what-if recipes' statistics of the same operands, per layer and operand, as above.");

Table gemm_precision_table(const ScalingSection& section) {
    Table t;
    t.header = {QStringLiteral("GEMM"), QStringLiteral("fprop"), QStringLiteral("dgrad"),
                QStringLiteral("wgrad")};
    t.widths = {40, 20, 20, 20};
    for (const QStringList& row : section.gemm_precisions) {
        QStringList cells;
        for (const QString& cell : row) cells << html_escape(cell);
        t.rows << cells;
    }
    return t;
}

Table advisor_table(const AdvisorTable& advisor) {
    Table t;
    t.header << QStringLiteral("GEMM");
    for (const std::string& column : advisor.columns) t.header << html_escape(QString::fromStdString(column));
    for (const AdvisorRow& row : advisor.rows) {
        QStringList cells{html_escape(QString::fromStdString(row.gemm_label))};
        QStringList backgrounds{QString()};
        for (size_t c = 0; c < row.cells.size(); ++c) {
            cells << cell_text(row.cells[c], c == 0);
            backgrounds << (row.cells[c].present ? grade_colour(row.cells[c]) : QString());
        }
        t.rows << cells;
        t.backgrounds << backgrounds;
    }
    return t;
}

}  // namespace mpwb::report_detail
