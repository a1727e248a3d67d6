// AdvisorView: the recipe advisor (sessions/recipe_advisor.h) as a table in the Scaling tab —
// one row per GEMM, a "this run" column with the recipe each GEMM ran in, and a column per what-if
// recipe — each cell the worst operand's SQNR at the last statistics step, coloured by the
// thresholds below (a legend line says them). A click on a what-if cell asks for a precision rule
// that runs that GEMM in that recipe in the next run (ruleRequested); the host adds it to the
// training settings and reports back with setStatus.
#pragma once
#include <QString>
#include <QWidget>

#include <map>
#include <tuple>
#include <vector>

#include "core/precision/precision_rules.h"
#include "core/train/run_records.h"
#include "sessions/advisor_grade.h"
#include "sessions/recipe_advisor.h"

class QLabel;
class QTableWidget;

namespace mpwb {

// "fp8-delayed (what-if): amax history of statistics steps only" for the delayed recipe's column.
QString advisor_column_tooltip(const std::string& column, const std::string& recipe);

class AdvisorView : public QWidget {
    Q_OBJECT
public:
    explicit AdvisorView(QWidget* parent = nullptr);

    // Keeps each (GEMM, operand, recipe, what-if) key's newest record: the advisor shows the last
    // statistics step, so a long run's history need not be held twice.
    void appendRecords(const std::vector<ScalingStatsRecord>& records);
    void clear();
    // Rebuilds the table when records arrived since the last call.
    void refresh();
    void setStatus(const QString& text);

    const AdvisorTable& table() const { return table_; }
    QTableWidget* tableWidget() const { return grid_; }
    QString statusText() const;

signals:
    // The rule that runs `rule.match`'s three passes in the clicked what-if recipe.
    void ruleRequested(const mpwb::PrecisionRule& rule);

private:
    void onCellClicked(int row, int column);
    void fillRow(int row, const AdvisorRow& advisor_row);

    using Key = std::tuple<size_t, std::string, std::string, std::string, bool>;
    std::map<Key, ScalingStatsRecord> latest_;
    bool dirty_ = false;
    AdvisorTable table_;
    QTableWidget* grid_ = nullptr;
    QLabel* legend_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace mpwb
