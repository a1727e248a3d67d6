// Tests of the precision per GEMM in the widgets (issue 27): the Scaling tab's advisor fills from
// records with what-if rows (a "this run" column with the recipe each GEMM ran in, a column per
// what-if recipe, graded cells) while the plots keep the run's own rows, and a click on a what-if
// cell adds a rule that the Precision panel then writes into the training settings; the panel's
// what-if ticks and BF16 shortcuts write TrainConfig::what_if and precision_rules; the network
// editor's Precision column shows a GPT block's resolved passes, its form writes a rule, and a
// rule that does not resolve is shown, not thrown. Real widgets clicked with QTest, offscreen.
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>

#include "resources/presets.h"
#include "widgets/advisor_view.h"
#include "widgets/network_editor.h"
#include "widgets/precision_panel.h"
#include "widgets/scaling_view.h"
#include "widget_test_support.h"

using namespace mpwb;

namespace {

ScalingStatsRecord record(int64_t step, size_t layer, const std::string& label, const std::string& operand,
                          const std::string& recipe, bool what_if, double sqnr, double underflow = 0) {
    ScalingStatsRecord r;
    r.step = step;
    r.layer = layer;
    r.layer_label = label;
    r.stats.operand = operand;
    r.stats.recipe = recipe;
    r.stats.what_if = what_if;
    r.stats.sqnr_db = sqnr;
    r.stats.underflow_fraction = underflow;
    r.stats.amax = 1;
    return r;
}

// Two GEMMs of a block at statistics steps 10 and 20: the run's own in bf16, what-if mxfp8 and
// nvfp4; at step 20 qkv's nvfp4 dy underflows.
std::vector<ScalingStatsRecord> block_records() {
    std::vector<ScalingStatsRecord> out;
    for (int64_t step : {10, 20})
        for (const std::string gemm : {"1.attn.qkv", "1.mlp.fc1"})
            for (const std::string operand : {"x", "w", "dy"}) {
                out.push_back(record(step, 1, gemm, operand, "bf16", false, 50 + double(step)));
                out.push_back(record(step, 1, gemm, operand, "mxfp8", true, operand == "dy" ? 27 : 30));
                const bool bad = step == 20 && gemm == "1.attn.qkv" && operand == "dy";
                out.push_back(record(step, 1, gemm, operand, "nvfp4", true, bad ? 9 : 18, bad ? 0.05 : 0));
            }
    return out;
}

void click_cell(QTableWidget* table, int row, int column) {
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {},
                      table->visualRect(table->model()->index(row, column)).center());
}

QString header(QTableWidget* table, int column) { return table->horizontalHeaderItem(column)->text(); }

}  // namespace

class TestPrecisionGui : public QObject {
    Q_OBJECT

private slots:
    void advisorFillsAndAClickWritesTheRule() {
        ScalingView view;
        PrecisionPanel panel;
        connect(view.advisor(), &AdvisorView::ruleRequested, &panel, &PrecisionPanel::addPrecisionRule);
        view.resize(900, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.appendRecords(block_records());
        view.refresh();
        // The plots keep the run's own rows only.
        QCOMPARE(view.series("1.attn.qkv", "dy").size(), size_t(2));
        for (const auto& r : view.series("1.attn.qkv", "dy")) QVERIFY(!r.stats.what_if);

        view.pages()->setCurrentWidget(view.advisor());
        auto* table = child<QTableWidget>(&view, "advisorTable");
        QCOMPARE(table->columnCount(), 3);
        QCOMPARE(header(table, 0), QStringLiteral("this run"));
        QCOMPARE(header(table, 1), QStringLiteral("mxfp8 (what-if)"));
        QCOMPARE(header(table, 2), QStringLiteral("nvfp4 (what-if)"));
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->verticalHeaderItem(0)->text(), QStringLiteral("1.attn.qkv"));
        // The last statistics step's worst operand, the run's recipe in the first column.
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("bf16 · 70.0 dB"));
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("27.0 dB"));
        QVERIFY(table->item(0, 2)->text().startsWith(QStringLiteral("9.0 dB · uf 5")));
        QCOMPARE(table->item(0, 1)->background().color(), QColor(0xc8, 0xe6, 0xc9));  // good
        QCOMPARE(table->item(0, 2)->background().color(), QColor(0xff, 0xcd, 0xd2));  // poor
        QCOMPARE(table->item(1, 2)->background().color(), QColor(0xff, 0xec, 0xb3));  // fair
        QVERIFY(child<QLabel>(&view, "advisorLegend")->text().contains(QStringLiteral("25 dB")));

        click_cell(table, 0, 1);
        TrainConfig config = panel.applyTo({});
        QCOMPARE(config.precision_rules.rules.size(), size_t(1));
        const PrecisionRule& rule = config.precision_rules.rules[0];
        QCOMPARE(rule.match, std::string("1.attn.qkv"));
        for (const auto& pass : rule.passes) QCOMPARE(pass, std::optional<PassRecipe>(ScaledRecipe::MxFp8));
        // The same GEMM again replaces its rule; a click on "this run" adds none.
        click_cell(table, 0, 2);
        click_cell(table, 1, 0);
        config = panel.applyTo({});
        QCOMPARE(config.precision_rules.rules.size(), size_t(1));
        QCOMPARE(config.precision_rules.rules[0].passes[0], std::optional<PassRecipe>(ScaledRecipe::NvFp4));
        QVERIFY(child<QLabel>(&panel, "precisionRulesText")
                    ->text()
                    .contains(QStringLiteral("1.attn.qkv → nvfp4")));
    }

    void delayedWhatIfColumnSaysItsHistory() {
        AdvisorView advisor;
        advisor.appendRecords({record(10, 0, "0 Linear", "x", "fp8", false, 20),
                               record(10, 0, "0 Linear", "x", "fp8-delayed", true, 20)});
        advisor.refresh();
        auto* table = advisor.tableWidget();
        QCOMPARE(header(table, 1), QStringLiteral("fp8-delayed (what-if)"));
        QVERIFY(table->horizontalHeaderItem(1)->toolTip().contains(
            QStringLiteral("amax history of statistics steps only")));
    }

    void panelTicksWriteWhatIfAndShortcuts() {
        PrecisionPanel panel;
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QSignalSpy changed(&panel, &PrecisionPanel::settingsChanged);
        for (const char* name : {"whatIf_nvfp4", "whatIf_mxfp8", "keepEndsBf16", "backwardBf16"}) {
            auto* tick = child<QCheckBox>(&panel, QString::fromLatin1(name));
            QTest::mouseClick(tick, Qt::LeftButton, {}, QPoint(8, tick->height() / 2));
            QVERIFY2(tick->isChecked(), name);
        }
        QCOMPARE(changed.count(), 4);
        TrainConfig config = panel.applyTo({});
        // In scaled_recipes() order, whatever the order of the clicks.
        QCOMPARE(config.what_if, (std::vector<ScaledRecipe>{ScaledRecipe::MxFp8, ScaledRecipe::NvFp4}));
        QVERIFY(config.precision_rules.keep_ends_bf16);
        QVERIFY(config.precision_rules.backward_bf16);
        auto* mxfp8 = child<QCheckBox>(&panel, "whatIf_mxfp8");
        QTest::mouseClick(mxfp8, Qt::LeftButton, {}, QPoint(8, mxfp8->height() / 2));
        QCOMPARE(panel.applyTo({}).what_if, std::vector<ScaledRecipe>{ScaledRecipe::NvFp4});

        // A loaded configuration sets the ticks; the panel gives back what it was given.
        TrainConfig loaded;
        loaded.what_if = {ScaledRecipe::Fp8Delayed};
        loaded.precision_rules.rules = {parse_precision_rule("3.attn.*=fprop:mxfp8")};
        panel.setWhatIf(loaded.what_if);
        panel.setPrecisionRules(loaded.precision_rules);
        config = panel.applyTo({});
        QCOMPARE(config.what_if, loaded.what_if);
        QCOMPARE(config.precision_rules, loaded.precision_rules);
        QVERIFY(!child<QCheckBox>(&panel, "keepEndsBf16")->isChecked());
        QTest::mouseClick(child<QPushButton>(&panel, "clearRulesButton"), Qt::LeftButton);
        QVERIFY(panel.applyTo({}).precision_rules.rules.empty());
    }

    void editorShowsAndEditsTheBlocksPrecision() {
        NetworkEditor editor;
        editor.resize(1300, 700);
        editor.show();
        QVERIFY(QTest::qWaitForWindowExposed(&editor));
        editor.setInputShape({64});
        editor.setClassCount(65);
        editor.setNetworkJson(load_preset("fortunes-gpt").network);
        EditorPrecisionSettings settings;
        settings.precision = PrecisionKind::MxFp8;
        settings.rules.rules = {parse_precision_rule("1.attn.qkv=wgrad:bf16")};
        settings.rules.keep_ends_bf16 = true;
        editor.setPrecisionSettings(settings);
        QVERIFY2(editor.precisionErrorText().isEmpty(), qPrintable(editor.precisionErrorText()));
        auto* model = child<QTableView>(&editor, "layerTable")->model();
        QCOMPARE(model->headerData(5, Qt::Horizontal).toString(), QStringLiteral("Precision"));
        const auto cell = [&](int row, int role = Qt::DisplayRole) {
            return model->index(row, 5).data(role).toString();
        };
        QCOMPARE(cell(0), QString());               // an Embedding has no GEMM
        QCOMPARE(cell(1), QStringLiteral("bf16"));  // the first GEMM layer, kept
        QCOMPARE(cell(2), QStringLiteral("mxfp8"));
        QCOMPARE(cell(6), QStringLiteral("bf16"));  // the last
        settings.rules.keep_ends_bf16 = false;
        editor.setPrecisionSettings(settings);
        QCOMPARE(cell(1), QStringLiteral("mixed: mxfp8 / mxfp8 / bf16, mxfp8"));  // qkv's wgrad differs
        QVERIFY(cell(1, Qt::ToolTipRole).contains(QStringLiteral("1.attn.qkv: mxfp8 / mxfp8 / bf16")));

        // The inspector's form: block 2's mlp.fc2 with dgrad and wgrad in bf16.
        QSignalSpy requested(&editor, &NetworkEditor::precisionRuleRequested);
        auto* view = child<QTableView>(&editor, "layerTable");
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                          view->visualRect(model->index(2, 1)).center());
        QCOMPARE(editor.currentLayer(), 2);
        auto* gemm = child<QComboBox>(&editor, "precisionGemm");
        QVERIFY(gemm->isVisible());
        QVERIFY(gemm->findData(QStringLiteral("2.attn.scores")) < 0);  // attention products: no rule
        gemm->setCurrentIndex(gemm->findData(QStringLiteral("2.mlp.fc2")));
        for (const char* pass : {"precision_dgrad", "precision_wgrad"}) {
            auto* combo = child<QComboBox>(&editor, QString::fromLatin1(pass));
            combo->setCurrentIndex(combo->findData(QStringLiteral("bf16")));
        }
        QTest::mouseClick(child<QPushButton>(&editor, "precisionSetButton"), Qt::LeftButton);
        QCOMPARE(requested.count(), 1);
        const auto rule = requested.at(0).at(0).value<PrecisionRule>();
        QCOMPARE(rule.match, std::string("2.mlp.fc2"));
        QCOMPARE(rule.passes[0], std::optional<PassRecipe>());
        QCOMPARE(rule.passes[1], std::optional<PassRecipe>(ScaledRecipe::None));
        QCOMPARE(rule.passes[2], std::optional<PassRecipe>(ScaledRecipe::None));

        // bf16 in an fp32 run does not resolve: said in red, the column left empty, nothing thrown.
        settings.precision = PrecisionKind::FP32;
        editor.setPrecisionSettings(settings);
        auto* error = child<QLabel>(&editor, "precisionError");
        QVERIFY(error->isVisible());
        QVERIFY2(error->text().contains(QStringLiteral("1.attn.qkv")), qPrintable(error->text()));
        QCOMPARE(cell(2), QString());
    }
};

QTEST_MAIN(TestPrecisionGui)
#include "test_precision_gui.moc"
