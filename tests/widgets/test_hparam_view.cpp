// Tests of the hyperparameter view (widgets/hparam_*.h, widgets/parallel_coordinates_plot.h)
// on a real run database with four runs that differ in learning rate and precision: the table's
// columns and values, sorting by a header click, the column chooser, brushing an axis of the
// parallel-coordinates plot with the mouse (which hides runs in the plot and the table), and
// that selecting runs in the table or on the plot asks for their curves.
#include <QHeaderView>
#include <QMenu>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "sessions/metric_keys.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "widgets/hparam_table_model.h"
#include "widgets/hparam_view.h"
#include "widgets/parallel_coordinates_plot.h"

using namespace mpwb;

namespace {

struct HandMadeRun {
    double lr;
    const char* precision;
    double final_accuracy;
    qint64 id = 0;
};

// Column of the model whose header is `header`; fails the test when there is none.
int column(const HparamView& view, const QString& header) {
    const int c = view.model()->columnOf(header);
    if (c < 0) qFatal("no column %s", qPrintable(header));
    return c;
}

QList<qint64> shown_ids(const HparamView& view) {
    QList<qint64> ids;
    for (int r = 0; r < view.proxy()->rowCount(); ++r)
        ids << view.proxy()->index(r, 0).data(HparamTableModel::kRunIdRole).toLongLong();
    return ids;
}

QStringList shown_column(const HparamView& view, int c) {
    QStringList cells;
    for (int r = 0; r < view.proxy()->rowCount(); ++r) cells << view.proxy()->index(r, c).data().toString();
    return cells;
}

// Press on the axis at `from`, move to `to`, release: what a user's vertical drag sends.
void drag_on_axis(ParallelCoordinatesPlot* plot, int axis, double from, double to) {
    const QPoint start = plot->axisPoint(axis, from), end = plot->axisPoint(axis, to);
    QTest::mousePress(plot, Qt::LeftButton, {}, start);
    QTest::mouseMove(plot, (start + end) / 2);
    QTest::mouseMove(plot, end);
    QTest::mouseRelease(plot, Qt::LeftButton, {}, end);
}

}  // namespace

class TestHparamView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void axisLayout();
    void tableHasTheDifferingSettingsAndFigures();
    void headerClickSortsNumerically();
    void columnChooserHidesColumnAndAxis();
    void brushOnAxesFiltersPlotAndTable();
    void selectionAsksForOverlay();

private:
    void showView(HparamView& view);
    QTemporaryDir dir_;
    QString db_;
    std::vector<HandMadeRun> runs_ = {
        {0.1, "fp32", 0.90}, {0.1, "fp16-mixed", 0.88}, {0.01, "fp32", 0.70}, {0.01, "fp16-mixed", 0.095}};
};

void TestHparamView::initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("runs.sqlite");
    RunStore store(db_.toStdString());
    for (auto& r : runs_) {
        RunInfo info;
        info.name = std::string("spiral ") + r.precision;
        info.precision = r.precision;
        info.dataset = "spiral";
        info.config_json = "{\"lr\":" + std::to_string(r.lr) + ",\"precision\":\"" + r.precision +
                           "\",\"seed\":7,\"batch_size\":32}";
        r.id = store.create_run(info);
        RunWriter writer(db_.toStdString(), r.id);
        // The best accuracy comes before the final one, so the two figures differ.
        writer.log_metric(metric_key::test_accuracy, 50, store_now(), r.final_accuracy + 0.01);
        writer.log_metric(metric_key::test_accuracy, 100, store_now(), r.final_accuracy);
        writer.log_metric(metric_key::test_loss, 100, store_now(), 1.0 - r.final_accuracy);
        QVERIFY(writer.finish(RunStatus::Finished));
    }
}

void TestHparamView::showView(HparamView& view) {
    view.resize(1300, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setDatabase(db_);
    QList<qint64> ids;
    for (const auto& r : runs_) ids << r.id;
    QVERIFY2(view.showRuns(ids), qPrintable(view.errorText()));
    view.plot()->replot();  // lays the plot out, so axisPoint maps to where the axes are drawn
}

void TestHparamView::axisLayout() {
    const auto lr = HparamAxis::from_json_values("lr", {"0.1", "0.01", "0.001"});
    QCOMPARE(lr.scale(), HparamAxis::Scale::Log);  // spans decades
    QCOMPARE(*lr.position(0), 1.0);
    QCOMPARE(*lr.position(2), 0.0);
    QVERIFY(std::abs(*lr.position(1) - 0.5) < 1e-12);
    const auto batch = HparamAxis::from_json_values("batch", {"32", "48", "64"});
    QCOMPARE(batch.scale(), HparamAxis::Scale::Linear);
    QCOMPARE(*batch.position(1), 0.5);
    const auto precision =
        HparamAxis::from_json_values("precision", {"\"fp32\"", "\"bf16-mixed\"", std::nullopt});
    QCOMPARE(precision.scale(), HparamAxis::Scale::Categorical);
    QCOMPARE(precision.ticks().size(), std::size_t(3));  // evenly spaced: 0, 0.5, 1
    QCOMPARE(precision.label(0), std::string("fp32"));
    QCOMPARE(*precision.position(1), 0.0);  // "bf16-mixed" sorts first
    QCOMPARE(*precision.position(0), 0.5);
    QCOMPARE(*precision.position(2), 1.0);  // a missing value ("—") is a category of its own
    const auto figure = HparamAxis::from_numbers("acc", {0.5, std::nullopt, 0.7});
    QVERIFY(!figure.position(1).has_value());
}

void TestHparamView::tableHasTheDifferingSettingsAndFigures() {
    HparamView view;
    showView(view);
    const auto* model = view.model();
    // Run, the two settings that differ (seed and batch_size are the same everywhere), figures.
    QCOMPARE(model->headerData(0, Qt::Horizontal).toString(), QStringLiteral("Run"));
    QCOMPARE(model->headerData(1, Qt::Horizontal).toString(), QStringLiteral("lr"));
    QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QStringLiteral("precision"));
    QCOMPARE(model->firstFigureColumn(), 3);
    QCOMPARE(model->columnOf("seed"), -1);
    QCOMPARE(model->rowCount(), 4);
    QCOMPARE(model->index(1, 1).data().toString(), QStringLiteral("0.1"));
    QCOMPARE(model->index(1, 2).data().toString(), QStringLiteral("fp16-mixed"));
    QCOMPARE(model->index(1, column(view, "Final test acc")).data().toString(), QStringLiteral("88.00%"));
    QCOMPARE(model->index(1, column(view, "Best test acc")).data().toString(), QStringLiteral("89.00%"));
    QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("#%1 spiral fp32").arg(runs_[0].id));
    // The plot: one axis per setting, then the metric.
    QCOMPARE(view.plot()->axisCount(), 3);
    QCOMPARE(view.plot()->axis(2).name(), std::string("Final test acc"));
    // Lines coloured by the metric: the best and the worst run differ.
    QVERIFY(view.plot()->lineColor(runs_[0].id) != view.plot()->lineColor(runs_[3].id));
}

void TestHparamView::headerClickSortsNumerically() {
    HparamView view;
    showView(view);
    auto* header = view.table()->horizontalHeader();
    const int lr = column(view, "lr");
    const QPoint at(header->sectionViewportPosition(lr) + header->sectionSize(lr) / 2, header->height() / 2);
    const QStringList ascending{"0.01", "0.01", "0.1", "0.1"}, descending{"0.1", "0.1", "0.01", "0.01"};
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(header->sortIndicatorSection(), lr);
    const bool up = header->sortIndicatorOrder() == Qt::AscendingOrder;
    QCOMPARE(shown_column(view, lr), up ? ascending : descending);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, at);  // the other way round
    QCOMPARE(shown_column(view, lr), up ? descending : ascending);
    // A figure column sorts by value, not by its text ("9.50%" sorts before "70.00%").
    const int acc = column(view, "Final test acc");
    const QPoint acc_at(header->sectionViewportPosition(acc) + header->sectionSize(acc) / 2,
                        header->height() / 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, acc_at);
    if (header->sortIndicatorOrder() != Qt::AscendingOrder)
        QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, acc_at);
    QCOMPARE(shown_ids(view), (QList<qint64>{runs_[3].id, runs_[2].id, runs_[1].id, runs_[0].id}));
}

void TestHparamView::columnChooserHidesColumnAndAxis() {
    HparamView view;
    showView(view);
    const int precision = column(view, "precision");
    QVERIFY(view.columnShown(precision));
    // The header's context menu is the column chooser.
    auto* header = view.table()->horizontalHeader();
    QContextMenuEvent event(QContextMenuEvent::Mouse, QPoint(10, header->height() / 2),
                            header->mapToGlobal(QPoint(10, header->height() / 2)));
    QApplication::sendEvent(header->viewport(), &event);
    QMenu* menu = view.columnMenu();
    QTRY_VERIFY(menu->isVisible());
    QAction* action = menu->findChild<QAction*>(QStringLiteral("column_%1").arg(precision));
    QVERIFY(action && action->isChecked());
    QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(action).center());
    QVERIFY(!view.columnShown(precision));
    QVERIFY(view.table()->isColumnHidden(precision));
    QCOMPARE(view.plot()->axisCount(), 2);  // lr and the metric
    QCOMPARE(view.plot()->axis(0).name(), std::string("lr"));
    // Checking it again brings both back.
    view.setColumnShown(precision, true);
    QVERIFY(action->isChecked());
    QCOMPARE(view.plot()->axisCount(), 3);
}

void TestHparamView::brushOnAxesFiltersPlotAndTable() {
    HparamView view;
    showView(view);
    auto* plot = view.plot();
    QSignalSpy filter(plot, &ParallelCoordinatesPlot::filterChanged);
    // lr is on a log axis: 0.01 at the bottom, 0.1 at the top. Drag over the upper part.
    drag_on_axis(plot, 0, 1.0, 0.6);
    QVERIFY(filter.count() > 0);
    const auto brush = plot->brush(0);
    QVERIFY(brush.has_value());
    QVERIFY(brush->lo > 0.5 && brush->lo < 0.7);
    QCOMPARE(plot->visibleRuns(), (QSet<qint64>{runs_[0].id, runs_[1].id}));
    QVERIFY(plot->lineVisible(runs_[0].id));
    QVERIFY(!plot->lineVisible(runs_[2].id));
    QCOMPARE(view.proxy()->rowCount(), 2);
    // A second brush on precision (fp16-mixed at the bottom, fp32 at the top) combines.
    drag_on_axis(plot, 1, 0.8, 1.0);
    QCOMPARE(plot->visibleRuns(), (QSet<qint64>{runs_[0].id}));
    QCOMPARE(shown_ids(view), (QList<qint64>{runs_[0].id}));
    // A click on the lr axis removes its brush: precision's alone keeps the fp32 runs.
    const QPoint on_lr = plot->axisPoint(0, 0.3);
    QTest::mouseClick(plot, Qt::LeftButton, {}, on_lr);
    QVERIFY(!plot->brush(0).has_value());
    QCOMPARE(plot->visibleRuns(), (QSet<qint64>{runs_[0].id, runs_[2].id}));
    QCOMPARE(view.proxy()->rowCount(), 2);
    // Clear filters shows everything again.
    QTest::mouseClick(view.findChild<QPushButton*>("hparamClearFilters"), Qt::LeftButton);
    QCOMPARE(view.proxy()->rowCount(), 4);
    QVERIFY(plot->lineVisible(runs_[2].id));
}

void TestHparamView::selectionAsksForOverlay() {
    HparamView view;
    showView(view);
    QSignalSpy overlay(&view, &HparamView::overlayRequested);
    // A row clicked in the table.
    auto* table = view.table();
    const QRect row = table->visualRect(view.proxy()->index(2, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, row.center());
    QCOMPARE(overlay.count(), 1);
    const qint64 clicked = view.proxy()->index(2, 0).data(HparamTableModel::kRunIdRole).toLongLong();
    QCOMPARE(overlay.takeFirst().at(0).value<QList<qint64>>(), QList<qint64>{clicked});
    QCOMPARE(view.plot()->selectedRuns(), QList<qint64>{clicked});
    // A line clicked on the plot, halfway between the lr and precision axes of run 3
    // (lr 0.01 at the bottom, fp16-mixed at the bottom: the line runs along y = 0).
    auto* plot = view.plot();
    const QPoint a = plot->axisPoint(0, 0.0), b = plot->axisPoint(1, 0.0);
    QTest::mouseClick(plot, Qt::LeftButton, {}, (a + b) / 2);
    QCOMPARE(overlay.count(), 1);
    QCOMPARE(overlay.takeFirst().at(0).value<QList<qint64>>(), QList<qint64>{runs_[3].id});
    QCOMPARE(view.selectedRunIds(), QList<qint64>{runs_[3].id});
    // Ctrl+click on run 0's line (lr 0.1 and fp32, both at the top) adds it.
    const QPoint c = plot->axisPoint(0, 1.0), d = plot->axisPoint(1, 1.0);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::ControlModifier, (c + d) / 2);
    QCOMPARE(overlay.count(), 1);
    auto both = overlay.takeFirst().at(0).value<QList<qint64>>();
    std::sort(both.begin(), both.end());
    QCOMPARE(both, (QList<qint64>{runs_[0].id, runs_[3].id}));
}

QTEST_MAIN(TestHparamView)
#include "test_hparam_view.moc"
