// MainWindow's precision-rule wiring: the rules and what-if recipes live in the Precision panel
// (the next run's settings); the network editor's Precision column resolves them, and the
// editor's per-GEMM form and the Scaling tab's advisor add rules to them.
#include <QStatusBar>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "widgets/advisor_view.h"
#include "widgets/network_editor.h"
#include "widgets/precision_panel.h"
#include "widgets/scaling_view.h"

namespace mpwb {

void MainWindow::connectPrecisionRules() {
    connect(precision_, &PrecisionPanel::settingsChanged, this, &MainWindow::syncEditorPrecision);
    connect(editor_, &NetworkEditor::precisionRuleRequested, this, [this](const PrecisionRule& rule) {
        precision_->addPrecisionRule(rule);
        statusBar()->showMessage(tr("Rule %1 for the next run").arg(precision_rule_text(rule)), 8000);
    });
    AdvisorView* advisor = board_->scalingView()->advisor();
    connect(advisor, &AdvisorView::ruleRequested, this, [this, advisor](const PrecisionRule& rule) {
        precision_->addPrecisionRule(rule);
        const QString text = tr("%1 for the next run; Train again to use it.").arg(precision_rule_text(rule));
        advisor->setStatus(text);
        statusBar()->showMessage(text, 8000);
    });
    syncEditorPrecision();
}

void MainWindow::syncEditorPrecision() {
    EditorPrecisionSettings settings;
    settings.rules = precision_->precisionRules();
    settings.precision = precision_->precision();
    settings.fp8_attention = precision_->recipeConfig().fp8_attention;
    editor_->setPrecisionSettings(settings);
}

}  // namespace mpwb
