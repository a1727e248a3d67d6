// Tests of the Scaling view (widgets/scaling_view.h) fed with ScalingStatsRecords as the
// trainer's observer delivers them: the layer and operand selectors fill from the records, the
// plots hold exactly the records' amax, scale, SQNR and block-scale exponents (data, not pixels),
// choosing another operand with the keyboard redraws from its records, and the view without
// records says what to do instead of showing empty axes.
#include <QComboBox>
#include <QLabel>
#include <QtTest>

#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/plot_widget.h"
#include "widgets/scaling_view.h"

using namespace mpwb;

namespace {

ScalingStatsRecord tensor_record(int64_t step, const char* layer, const char* operand, float amax,
                                 float scale) {
    ScalingStatsRecord r;
    r.step = step;
    r.layer_label = layer;
    r.stats.operand = operand;
    r.stats.element = Format::E5M2;
    r.stats.amax = amax;
    r.stats.scale = scale;
    r.stats.sqnr_db = 999;  // exact: not drawn
    return r;
}

// A record of an mxfp8-like block operand: scale 0 (no per-tensor scale), three blocks whose
// scale exponents are -9, -9 and -7.
ScalingStatsRecord block_record(int64_t step, const char* layer, const char* operand, float amax) {
    ScalingStatsRecord r = tensor_record(step, layer, operand, amax, 0.0f);
    r.stats.element = Format::E4M3;
    r.stats.values = 96;
    r.stats.sqnr_db = 30.0 + static_cast<double>(step);
    r.stats.blocks = 3;
    r.stats.clipped_blocks = 1;
    r.stats.block_exponent_min = -9;
    r.stats.block_exponent_counts = {2, 0, 1};
    return r;
}

QVector<double> values_of(QCPGraph* g) {
    QVector<double> v;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) v.push_back(it->value);
    return v;
}

}  // namespace

class TestScalingView : public QObject {
    Q_OBJECT
private slots:
    void withoutRecordsItSaysWhatToDo() {
        ScalingView view;
        view.show();
        QVERIFY(!view.showsPlots());
        auto* empty = view.findChild<QLabel*>("scalingEmpty");
        QVERIFY(empty && empty->isVisible());
        QVERIFY2(empty->text().contains("fp8-delayed") && empty->text().contains("mxfp8"),
                 qPrintable(empty->text()));
        view.appendRecords({block_record(10, "0 Linear", "x", 2.0f)});
        view.refresh();
        QVERIFY(view.showsPlots());
        QVERIFY(!empty->isVisible());
    }

    void combosAndPlotsFollowTheRecords() {
        ScalingView view;
        view.show();
        // Two batches, as two drain ticks deliver them; layers out of order, operands of two layers.
        view.appendRecords({block_record(10, "2 Linear", "x", 1.0f), block_record(10, "0 Linear", "x", 4.0f),
                            block_record(10, "0 Linear", "dy", 0.5f)});
        view.refresh();
        view.appendRecords({block_record(20, "0 Linear", "x", 8.0f),
                            block_record(20, "0 Linear", "dy", 0.25f),
                            block_record(30, "0 Linear", "x", 16.0f)});
        view.refresh();
        QComboBox* layer = view.layerSelector();
        QComboBox* operand = view.operandSelector();
        QCOMPARE(layer->count(), 2);
        QCOMPARE(layer->itemText(0), QStringLiteral("0 Linear"));  // numeric order
        QCOMPARE(layer->currentText(), QStringLiteral("0 Linear"));
        QCOMPARE(operand->count(), 2);
        QCOMPARE(operand->itemText(0), QStringLiteral("x"));
        QCOMPARE(operand->itemText(1), QStringLiteral("dy"));
        // dy is shown first; x, chosen with the keyboard, has three statistics steps.
        QCOMPARE(operand->currentText(), QStringLiteral("dy"));
        QCOMPARE(values_of(view.amaxPlot()->graph(0)), (QVector<double>{0.5, 0.25}));
        operand->setFocus();
        QTest::keyClick(operand, Qt::Key_Up);
        QCOMPARE(operand->currentText(), QStringLiteral("x"));
        QCOMPARE(values_of(view.amaxPlot()->graph(0)), (QVector<double>{4, 8, 16}));
        QCOMPARE(view.amaxPlot()->graph(1)->dataCount(), 0);  // block recipe: no per-tensor scale
        QCOMPARE(values_of(view.sqnrPlot()->graph(0)), (QVector<double>{40, 50, 60}));
        QCOMPARE(view.blockHeatmap()->columnCount(), 3);
        QVERIFY(std::isfinite(view.blockHeatmap()->cellValue(30, -9)));
        QCOMPARE(view.blockHeatmap()->cellValue(30, -9), std::log10(2.0 / 3.0));
        QVERIFY(std::isnan(view.blockHeatmap()->cellValue(30, -8)));
        QCOMPARE(view.blockBars()->dataCount(), 2);  // exponents -9 and -7 (the empty bin left out)
        QCOMPARE(view.blockBars()->data()->at(0)->key, -9.0);
        QCOMPARE(view.blockBars()->data()->at(0)->value, 2.0);
        QCOMPARE(view.blockBars()->data()->at(1)->key, -7.0);
        // Back to dy: redrawn from dy's records only.
        QTest::keyClick(operand, Qt::Key_Down);
        QCOMPARE(operand->currentText(), QStringLiteral("dy"));
        QCOMPARE(values_of(view.amaxPlot()->graph(0)), (QVector<double>{0.5, 0.25}));
        QCOMPARE(view.blockHeatmap()->columnCount(), 2);
        // A new batch for the shown series is appended, not redrawn from the start.
        view.appendRecords({block_record(30, "0 Linear", "dy", 0.125f)});
        view.refresh();
        QCOMPARE(values_of(view.amaxPlot()->graph(0)), (QVector<double>{0.5, 0.25, 0.125}));
        QLabel* readout = view.findChild<QLabel*>("scalingReadout");
        QVERIFY(readout->text().contains("clipped blocks 1 of 3"));
        QVERIFY(!readout->text().contains("scaled to 4"));
        // nvfp4's 4 over 6 says how many blocks it scaled to 4.
        ScalingStatsRecord four = block_record(40, "0 Linear", "dy", 0.125f);
        four.stats.blocks_scaled_to_4 = 2;
        view.appendRecords({four});
        view.refresh();
        QVERIFY2(readout->text().contains("scaled to 4: 2 of 3"), qPrintable(readout->text()));
    }

    // A per-tensor recipe: the scale is the second line; an exact quantization has no SQNR point;
    // the block plots give way to a note.
    void perTensorRecordsDrawTheScale() {
        ScalingView view;
        view.show();
        view.appendRecords({tensor_record(5, "1 Linear", "dy", 0.001f, 32768.0f),
                            tensor_record(10, "1 Linear", "dy", 0.002f, 16384.0f)});
        view.refresh();
        QCOMPARE(values_of(view.amaxPlot()->graph(1)), (QVector<double>{32768, 16384}));
        QCOMPARE(view.sqnrPlot()->graph(0)->dataCount(), 0);
        QVERIFY(!view.blockHistogramPlot()->isVisible());
        QVERIFY(view.findChild<QLabel*>("scalingBlockNote")->isVisible());
        QCOMPARE(view.amaxPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    }
};

QTEST_MAIN(TestScalingView)
#include "test_scaling_view.moc"
