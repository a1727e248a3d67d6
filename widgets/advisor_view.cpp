// AdvisorView: the advisor table's cells, colours, legend and the click that makes a rule.
#include "widgets/advisor_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "core/common/text_format.h"

namespace mpwb {

namespace {

constexpr double kExactSqnr = 999;  // ScalingStats' stand-in for an exact quantization
const QColor kGoodColor(advisor_grade_colour(AdvisorGrade::Good));
const QColor kFairColor(advisor_grade_colour(AdvisorGrade::Fair));
const QColor kPoorColor(advisor_grade_colour(AdvisorGrade::Poor));

QString sqnr_text(double db) {
    if (std::isnan(db)) return QStringLiteral("NaN");
    return db >= kExactSqnr ? QStringLiteral("∞") : QString::number(db, 'f', 1);
}

QString percent(double fraction) { return QString::fromStdString(percent_text(fraction, 3)); }

// The attention products (Q·Kᵀ, P·V) follow the recipe's fp8_attention; no rule may name them.
bool is_attention_product(const std::string& rule_label) {
    const auto ends_with = [&](const std::string& tail) {
        return rule_label.size() >= tail.size() &&
               rule_label.compare(rule_label.size() - tail.size(), tail.size(), tail) == 0;
    };
    return ends_with(".attn.scores") || ends_with(".attn.values");
}

}  // namespace

QString advisor_column_tooltip(const std::string& column, const std::string& recipe) {
    if (recipe.empty()) return QObject::tr("The precision each GEMM ran in, and what its quantization did");
    QString tip = QObject::tr(
                      "%1: what this GEMM's operands would have lost in %2 (statistics only; "
                      "the run did not use them). Click a cell to run that GEMM in %2 next time.")
                      .arg(QString::fromStdString(column), QString::fromStdString(recipe));
    if (recipe == "fp8-delayed")
        tip = QObject::tr("fp8-delayed (what-if): amax history of statistics steps only. ") + tip;
    return tip;
}

AdvisorView::AdvisorView(QWidget* parent) : QWidget(parent) {
    grid_ = new QTableWidget;
    grid_->setObjectName(QStringLiteral("advisorTable"));
    grid_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    grid_->setSelectionMode(QAbstractItemView::NoSelection);
    grid_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    grid_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    grid_->setWordWrap(false);
    legend_ =
        new QLabel(tr("Cell: the worst operand's SQNR at the last statistics step. "
                      "<span style='background:%1'>&nbsp;SQNR ≥ %4 dB, no underflow&nbsp;</span> "
                      "<span style='background:%2'>&nbsp;between&nbsp;</span> "
                      "<span style='background:%3'>&nbsp;SQNR &lt; %5 dB or underflow &gt; %6&nbsp;</span> "
                      "· Click a what-if cell to use that recipe for the GEMM in the next run.")
                       .arg(kGoodColor.name(), kFairColor.name(), kPoorColor.name())
                       .arg(kAdvisorGoodSqnrDb)
                       .arg(kAdvisorPoorSqnrDb)
                       .arg(QString::number(100 * kAdvisorPoorUnderflow) + QLatin1Char('%')));
    legend_->setObjectName(QStringLiteral("advisorLegend"));
    legend_->setWordWrap(true);
    status_ = new QLabel;
    status_->setObjectName(QStringLiteral("advisorStatus"));
    status_->setWordWrap(true);
    status_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(legend_);
    layout->addWidget(grid_, 1);
    layout->addWidget(status_);
    connect(grid_, &QTableWidget::cellClicked, this, &AdvisorView::onCellClicked);
}

void AdvisorView::appendRecords(const std::vector<ScalingStatsRecord>& records) {
    for (const auto& r : records) {
        ScalingStatsRecord& held =
            latest_[{r.layer, r.layer_label, r.stats.operand, r.stats.recipe, r.stats.what_if}];
        if (held.layer_label.empty() || r.step >= held.step) held = r;
    }
    dirty_ = dirty_ || !records.empty();
}

void AdvisorView::clear() {
    latest_.clear();
    table_ = {};
    dirty_ = false;
    grid_->clear();
    grid_->setRowCount(0);
    grid_->setColumnCount(0);
    status_->hide();
}

void AdvisorView::refresh() {
    if (!dirty_) return;
    dirty_ = false;
    std::vector<ScalingStatsRecord> records;
    records.reserve(latest_.size());
    for (const auto& [key, r] : latest_) records.push_back(r);
    table_ = recipe_advisor(records);
    grid_->setColumnCount(static_cast<int>(table_.columns.size()));
    for (size_t c = 0; c < table_.columns.size(); ++c) {
        auto* header = new QTableWidgetItem(QString::fromStdString(table_.columns[c]));
        header->setToolTip(advisor_column_tooltip(table_.columns[c], table_.column_recipes[c]));
        grid_->setHorizontalHeaderItem(static_cast<int>(c), header);
    }
    grid_->setRowCount(static_cast<int>(table_.rows.size()));
    for (size_t r = 0; r < table_.rows.size(); ++r) fillRow(static_cast<int>(r), table_.rows[r]);
}

void AdvisorView::fillRow(int row, const AdvisorRow& advisor_row) {
    grid_->setVerticalHeaderItem(row, new QTableWidgetItem(QString::fromStdString(advisor_row.gemm_label)));
    const bool attention = is_attention_product(advisor_row.rule_label);
    for (size_t c = 0; c < advisor_row.cells.size(); ++c) {
        const AdvisorCell& cell = advisor_row.cells[c];
        auto* item = new QTableWidgetItem;
        if (cell.present) {
            QString text = tr("%1 dB").arg(sqnr_text(cell.min_sqnr_db));
            if (c == 0) text = QString::fromStdString(cell.recipe) + QStringLiteral(" · ") + text;
            if (cell.max_underflow > 0) text += tr(" · uf %1").arg(percent(cell.max_underflow));
            item->setText(text);
            const AdvisorGrade grade = advisor_grade(cell);
            item->setBackground(grade == AdvisorGrade::Good   ? kGoodColor
                                : grade == AdvisorGrade::Fair ? kFairColor
                                                              : kPoorColor);
            item->setForeground(QColor(Qt::black));
            QString tip =
                tr("%1 in %2 at step %3: worst operand %4, SQNR %5 dB, underflow %6, saturated %7")
                    .arg(QString::fromStdString(advisor_row.gemm_label), QString::fromStdString(cell.recipe))
                    .arg(cell.step)
                    .arg(QString::fromStdString(cell.worst_operand), sqnr_text(cell.min_sqnr_db),
                         percent(cell.max_underflow), percent(cell.max_saturate));
            if (c > 0)
                tip += attention
                           ? tr("\nAttention products follow the recipe's fp8_attention; no rule names them.")
                           : tr("\nClick: run %1 in %2 in the next run.")
                                 .arg(QString::fromStdString(advisor_row.rule_label),
                                      QString::fromStdString(table_.column_recipes[c]));
            item->setToolTip(tip);
        } else {
            item->setText(QStringLiteral("–"));
        }
        item->setTextAlignment(Qt::AlignCenter);
        grid_->setItem(row, static_cast<int>(c), item);
    }
}

void AdvisorView::onCellClicked(int row, int column) {
    if (row < 0 || column <= 0 || static_cast<size_t>(row) >= table_.rows.size() ||
        static_cast<size_t>(column) >= table_.column_recipes.size())
        return;
    const AdvisorRow& advisor_row = table_.rows[static_cast<size_t>(row)];
    if (!advisor_row.cells[static_cast<size_t>(column)].present) return;
    if (is_attention_product(advisor_row.rule_label)) {
        setStatus(tr("%1 is an attention product: it follows the recipe's fp8_attention setting, not a rule.")
                      .arg(QString::fromStdString(advisor_row.rule_label)));
        return;
    }
    const std::string& recipe = table_.column_recipes[static_cast<size_t>(column)];
    PrecisionRule rule;
    rule.match = advisor_row.rule_label;
    try {
        const PassRecipe pass = parse_pass_recipe(recipe, "advisor column");
        rule.passes = {pass, pass, pass};
    } catch (const std::exception& e) {  // a stored run's unknown recipe name
        setStatus(QString::fromUtf8(e.what()));
        return;
    }
    emit ruleRequested(rule);
}

void AdvisorView::setStatus(const QString& text) {
    status_->setText(text);
    status_->setVisible(!text.isEmpty());
}

QString AdvisorView::statusText() const { return status_->text(); }

}  // namespace mpwb
