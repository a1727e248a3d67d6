// Tests of the workbench widgets: NetworkEditor (palette, add/remove/reorder, shape inference,
// errors per row, undo/redo, presets, JSON errors), DatasetPanel (spec round trip, preview, IDX
// folder errors), PrecisionPanel (inline validation, live requests) and RunBrowser (list,
// filters, rename/tag/delete against a real RunStore). Widgets are driven with QTest clicks and
// key presses. Set MPWB_SCREENSHOT_DIR to also save a PNG of each widget.
#include <QAbstractItemModel>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QtTest>

#include "core/data/idx_reader.h"
#include "core/optim/optimizer_registry.h"
#include "sessions/run_store.h"
#include "widgets/dataset_panel.h"
#include "widgets/network_editor.h"
#include "widgets/output_guard.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/series_plot.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"
#include "widgets/training_settings_panel.h"

using namespace mpwb;

namespace {

template <typename T>
T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QString::fromLatin1(name));
    if (!c) qFatal("no child %s", name);
    return c;
}

void click(QWidget* w) {
    QVERIFY2(w->isEnabled(), qPrintable(w->objectName() + " is disabled"));
    QTest::mouseClick(w, Qt::LeftButton);
}

// Replaces a spin box's text the way a user does: select all, type, Enter.
void type_into(QAbstractSpinBox* box, const QString& text) {
    box->setFocus();
    QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(box, text);
    QTest::keyClick(box, Qt::Key_Enter);
}

void click_palette(NetworkEditor& ed, const QString& kind) {
    auto* palette = child<QListWidget>(&ed, "palette");
    const auto items = palette->findItems(kind, Qt::MatchExactly);
    QVERIFY(items.size() == 1);
    const QRect r = palette->visualItemRect(items.first());
    QTest::mouseClick(palette->viewport(), Qt::LeftButton, {}, r.center());
    QCOMPARE(palette->currentItem()->text(), kind);
    click(child<QPushButton>(&ed, "addButton"));
}

void select_table_row(QTableView* view, int row) {
    const QRect r = view->visualRect(view->model()->index(row, 1));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, r.center());
}

std::vector<std::string> kinds(const NetworkEditor& ed) {
    const nlohmann::json net = ed.networkJson();  // a copy: the loop must not run over a temporary
    std::vector<std::string> k;
    for (const auto& l : net["layers"]) k.push_back(l["type"].get<std::string>());
    return k;
}

void screenshot(QWidget* w, const char* name) {
    const QByteArray dir = qgetenv("MPWB_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    QDir().mkpath(QString::fromLocal8Bit(dir));
    QCoreApplication::processEvents();
    w->grab().save(QDir(QString::fromLocal8Bit(dir)).filePath(QString::fromLatin1(name) + ".png"));
}

}  // namespace

class TestWidgets : public QObject {
    Q_OBJECT
private slots:
    void network_editor_builds_by_clicking();
    void network_editor_marks_errors_and_undoes();
    void network_editor_reorders_and_drops();
    void network_editor_preset_and_json();
    void network_editor_refuses_hostile_files();
    void exports_never_overwrite_the_run_database();
    void dataset_panel_round_trip_and_preview();
    void dataset_panel_idx_folder();
    void precision_panel_validation_and_live_requests();
    void training_settings_round_trip();
    void run_browser_lists_filters_and_edits();
    void run_browser_reports_bad_database();
};

void TestWidgets::network_editor_builds_by_clicking() {
    NetworkEditor ed;
    ed.resize(1000, 520);
    ed.show();
    QVERIFY(QTest::qWaitForWindowExposed(&ed));
    ed.setInputShape({2});
    ed.setClassCount(3);
    QSignalSpy validity(&ed, &NetworkEditor::validityChanged);
    QVERIFY(!ed.isValid());  // empty network

    click_palette(ed, "Linear");
    click_palette(ed, "ReLU");
    click_palette(ed, "Linear");
    QCOMPARE(ed.layerCount(), 3);
    QCOMPARE(kinds(ed), (std::vector<std::string>{"Linear", "ReLU", "Linear"}));
    // Two Linear(64) layers: the last outputs 64, not the 3 classes.
    QVERIFY(!ed.isValid());
    QCOMPARE(ed.reports()[0].output, (Shape{64}));
    QCOMPARE(ed.reports()[0].parameters, int64_t(2 * 64 + 64));

    // The form of the selected (last added) layer: set its outputs to 3 by typing.
    QCOMPARE(ed.currentLayer(), 2);
    auto* out = child<QSpinBox>(&ed, "param_out");
    type_into(out, "3");
    QCOMPARE(ed.networkJson()["layers"][2]["out"].get<int>(), 3);
    QVERIFY(ed.isValid());
    QVERIFY(validity.count() >= 1);
    QCOMPARE(validity.last().at(0).toBool(), true);
    const int64_t expected = (2 * 64 + 64) + (64 * 3 + 3);
    QCOMPARE(ed.totalParameters(), expected);
    QCOMPARE(ed.reports()[2].output, (Shape{3}));
    QVERIFY2(ed.summaryText().contains(QLocale().toString(qlonglong(expected))),
             qPrintable(ed.summaryText()));

    // The table shows the shape and count of each row.
    auto* view = child<QTableView>(&ed, "layerTable");
    QCOMPARE(view->model()->rowCount(), 3);
    QCOMPARE(view->model()->index(0, 3).data().toString(), QStringLiteral("64"));
    QCOMPARE(view->model()->index(2, 4).data().toString(), QLocale().toString(qlonglong(64 * 3 + 3)));

    // Bias off on the last layer removes 3 parameters.
    auto* bias = child<QCheckBox>(&ed, "param_bias");
    QVERIFY(bias->isChecked());
    QTest::mouseClick(bias, Qt::LeftButton, {}, QPoint(8, bias->height() / 2));  // on the box itself
    QVERIFY(!bias->isChecked());
    QCOMPARE(ed.networkJson()["layers"][2]["bias"].get<bool>(), false);
    QCOMPARE(ed.totalParameters(), expected - 3);

    // Remove the ReLU via the button.
    select_table_row(view, 1);
    QCOMPARE(ed.currentLayer(), 1);
    click(child<QPushButton>(&ed, "removeButton"));
    QCOMPARE(kinds(ed), (std::vector<std::string>{"Linear", "Linear"}));
    screenshot(&ed, "network_editor");
}

void TestWidgets::network_editor_marks_errors_and_undoes() {
    NetworkEditor ed;
    ed.resize(1000, 520);
    ed.show();
    ed.setInputShape({2});
    click_palette(ed, "Linear");
    click_palette(ed, "ReLU");
    QVERIFY(ed.isValid());
    QSignalSpy validity(&ed, &NetworkEditor::validityChanged);
    auto* view = child<QTableView>(&ed, "layerTable");

    // Fix the first Linear's input width to 5 while the data has 2 features.
    select_table_row(view, 0);
    type_into(child<QSpinBox>(&ed, "param_in"), "5");
    QVERIFY(!ed.isValid());
    QCOMPARE(validity.count(), 1);
    QCOMPARE(validity.last().at(0).toBool(), false);
    const QString tip = view->model()->index(0, 1).data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains("expects 5 inputs, gets 2"), qPrintable(tip));
    QVERIFY(view->model()->index(0, 1).data(Qt::BackgroundRole).value<QColor>().isValid());
    QVERIFY(!view->model()->index(1, 1).data(Qt::BackgroundRole).value<QColor>().isValid());
    QVERIFY2(ed.summaryText().contains("layer 0"), qPrintable(ed.summaryText()));

    // Undo (one step, although "5" was typed as a spin edit) restores validity; redo breaks it again.
    click(child<QWidget>(&ed, "undoButton"));
    QVERIFY(ed.isValid());
    QVERIFY(!ed.networkJson()["layers"][0].contains("in"));
    QVERIFY(!view->model()->index(0, 1).data(Qt::BackgroundRole).value<QColor>().isValid());
    click(child<QWidget>(&ed, "redoButton"));
    QVERIFY(!ed.isValid());
    QCOMPARE(ed.networkJson()["layers"][0]["in"].get<int>(), 5);
    ed.undoStack()->undo();
    QVERIFY(ed.isValid());

    // Conv2d after Flatten: a [1x8x8] image flattened to 64 features cannot be convolved.
    NetworkEditor img;
    img.setInputShape({1, 8, 8});
    img.addLayer("Flatten");
    img.addLayer("Conv2d");
    img.addLayer("Linear");
    QCOMPARE(kinds(img), (std::vector<std::string>{"Flatten", "Conv2d", "Linear"}));
    QVERIFY(!img.isValid());
    QVERIFY(img.reports()[0].error.empty());
    QCOMPARE(img.reports()[0].output, (Shape{64}));
    QVERIFY(!img.reports()[1].error.empty());
    // Swapping the first two (Conv2d, Flatten, Linear) makes it fit.
    img.moveLayer(1, 0);
    QVERIFY(img.isValid());
    // Conv(16, k3, p1) on 1x8x8: 16*9+16 params; Flatten 16*64 = 1024; Linear(64): 1024*64+64.
    QCOMPARE(img.totalParameters(), int64_t(16 * 9 + 16 + 1024 * 64 + 64));
    // Every edit is one undo step: undo the move, then the three adds.
    QCOMPARE(img.undoStack()->count(), 4);
    img.undoStack()->undo();
    QCOMPARE(kinds(img), (std::vector<std::string>{"Flatten", "Conv2d", "Linear"}));
    img.undoStack()->setIndex(0);
    QCOMPARE(img.layerCount(), 0);
}

void TestWidgets::network_editor_reorders_and_drops() {
    NetworkEditor ed;
    ed.resize(1000, 520);
    ed.show();
    ed.setInputShape({4});
    ed.addLayer("Linear");
    ed.addLayer("ReLU");
    ed.addLayer("Dropout");
    auto* view = child<QTableView>(&ed, "layerTable");
    select_table_row(view, 0);
    click(child<QPushButton>(&ed, "downButton"));
    QCOMPARE(kinds(ed), (std::vector<std::string>{"ReLU", "Linear", "Dropout"}));
    QCOMPARE(ed.currentLayer(), 1);  // the selection follows the moved layer
    click(child<QPushButton>(&ed, "downButton"));
    QCOMPARE(kinds(ed), (std::vector<std::string>{"ReLU", "Dropout", "Linear"}));
    QVERIFY(!child<QPushButton>(&ed, "downButton")->isEnabled());
    click(child<QPushButton>(&ed, "upButton"));
    QCOMPARE(kinds(ed), (std::vector<std::string>{"ReLU", "Linear", "Dropout"}));
    ed.undoStack()->undo();
    ed.undoStack()->undo();
    ed.undoStack()->undo();
    QCOMPARE(kinds(ed), (std::vector<std::string>{"Linear", "ReLU", "Dropout"}));

    // Drag-and-drop data: a palette kind dropped on row 1 inserts there; a row dropped moves.
    QAbstractItemModel* m = view->model();
    auto* palette = child<QListWidget>(&ed, "palette");
    const int tanh_row = palette->row(palette->findItems("Tanh", Qt::MatchExactly).first());
    QMimeData* kind = palette->model()->mimeData({palette->model()->index(tanh_row, 0)});
    QVERIFY(m->canDropMimeData(kind, Qt::CopyAction, 1, 0, {}));
    m->dropMimeData(kind, Qt::CopyAction, 1, 0, {});
    delete kind;
    QCOMPARE(kinds(ed), (std::vector<std::string>{"Linear", "Tanh", "ReLU", "Dropout"}));
    QMimeData* row = m->mimeData({m->index(0, 0)});
    m->dropMimeData(row, Qt::MoveAction, 3, 0, {});  // before Dropout
    delete row;
    QCOMPARE(kinds(ed), (std::vector<std::string>{"Tanh", "ReLU", "Linear", "Dropout"}));
    QCOMPARE(m->rowCount(), 4);
}

void TestWidgets::network_editor_preset_and_json() {
    NetworkEditor ed;
    ed.setInputShape({1, 28, 28});
    ed.setClassCount(10);
    QSignalSpy loaded(&ed, &NetworkEditor::presetLoaded);
    auto* combo = child<QComboBox>(&ed, "presetCombo");
    const int i = combo->findText("fashion-cnn");
    QVERIFY(i > 0);
    combo->activated(i);  // what choosing the entry emits
    QCOMPARE(loaded.count(), 1);
    QVERIFY(ed.isValid());
    // conv 1->16 k3: 16*1*9+16; conv 16->32 k3: 32*16*9+32; two 2x2 pools: 28 -> 14 -> 7;
    // dense 32*7*7 -> 128 and 128 -> 10, with biases.
    const int64_t conv1 = 16 * 1 * 9 + 16, conv2 = 32 * 16 * 9 + 32;
    const int64_t fc1 = (32 * 7 * 7) * 128 + 128, fc2 = 128 * 10 + 10;
    QCOMPARE(ed.totalParameters(), conv1 + conv2 + fc1 + fc2);
    QCOMPARE(ed.reports()[5].output, (Shape{32, 7, 7}));

    // Malformed JSON: an error naming the position, network unchanged.
    const auto before = ed.networkJson();
    QString err = ed.loadJson("{\"layers\": [ {\"type\": \"Linear\", \"out\": 10 }\n  ");
    QVERIFY2(err.contains("Not valid JSON") && err.contains("line 2"), qPrintable(err));
    QCOMPARE(ed.networkJson(), before);
    err = ed.loadJson(R"({"layers": [{"type": "Linaer", "out": 10}]})");
    QVERIFY2(err.contains("Linaer"), qPrintable(err));
    err = ed.loadJson(R"({"layers": [{"type": "Linear", "outs": 10}]})");
    QVERIFY2(err.contains("outs"), qPrintable(err));
    err = ed.loadJson(R"([1, 2])");
    QVERIFY2(!err.isEmpty(), "an array is not a network");
    QCOMPARE(ed.networkJson(), before);

    // Save, then open: the same network comes back.
    QTemporaryDir dir;
    const QString path = dir.filePath("net.json");
    QVERIFY(ed.saveFile(path, false));
    ed.loadJson(R"({"layers": [{"type": "ReLU"}]})");
    QCOMPARE(ed.layerCount(), 1);
    QVERIFY(ed.openFile(path, false));
    QCOMPARE(ed.networkJson()["layers"], before["layers"]);
    QVERIFY(!ed.openFile(dir.filePath("missing.json"), false));
}

// Files that crashed the editor: 100k-deep JSON (stack overflow), a number beyond double range
// (an uncaught out_of_range, std::terminate), a folder; a layer too large to allocate is marked
// with the numbers instead of being allocated.
void TestWidgets::network_editor_refuses_hostile_files() {
    NetworkEditor ed;
    ed.setInputShape({1, 28, 28});
    const auto before = ed.networkJson();
    QString err = ed.loadJson("{\"layers\": " + QByteArray(100000, '[') + QByteArray(100000, ']') + "}");
    QVERIFY2(err.contains("nested deeper than 64"), qPrintable(err));
    err = ed.loadJson(R"({"layers": [{"type": "Linear", "out": 1e400}]})");
    QVERIFY2(err.contains("layers[0].out") && err.contains("1e400"), qPrintable(err));
    QCOMPARE(ed.networkJson(), before);

    QTemporaryDir dir;
    err = ed.loadFile(dir.path());
    QVERIFY2(err.contains("is a folder") && err.contains(dir.path()), qPrintable(err));
    const QString name = dir.filePath("name.json");
    QFile f(name);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": 5, "layers": [{"type": "ReLU"}]})");
    f.close();
    err = ed.loadFile(name);
    QVERIFY2(err.contains("name.json") && err.contains("\"name\""), qPrintable(err));

    QVERIFY(
        ed.loadJson(R"({"layers": [{"type": "Flatten"}, {"type": "Linear", "out": 2000000000}]})").isEmpty());
    QVERIFY(!ed.isValid());
    const QString row = QString::fromStdString(ed.reports().at(1).error);
    QVERIFY2(row.contains("1,570,000,000,000 parameters") && row.contains("268,435,456"), qPrintable(row));
}

// A plot export or a saved network aimed at the run database (here through a symlink) is
// refused with a sentence naming both files, and the database keeps every byte.
void TestWidgets::exports_never_overwrite_the_run_database() {
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    const QByteArray content("SQLite format 3\0 stand-in bytes", 31);
    QFile f(db);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content);
    f.close();
    const QString alias = dir.filePath("plot.csv");
    QVERIFY(QFile::link(db, alias));
    set_guarded_database(db);

    SeriesPlot plot(SeriesPlot::Kind::Loss);
    QString error;
    QVERIFY(!export_plot(&plot, alias, &error));
    QVERIFY2(error.contains(alias) && error.contains(db) && error.contains("run database"),
             qPrintable(error));
    NetworkEditor ed;
    QVERIFY(!ed.saveFile(db, false));
    QVERIFY(!ed.saveFile(db + "-wal", false));  // the WAL beside it, even before it exists
    QVERIFY(!QFile::exists(db + "-wal"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), content);
    f.close();
    QVERIFY(ed.saveFile(dir.filePath("net.json"), false));  // other files are written as before
    QVERIFY(export_plot(&plot, dir.filePath("plot.png"), &error));
    set_guarded_database({});
}

void TestWidgets::dataset_panel_round_trip_and_preview() {
    DatasetPanel p;
    p.resize(420, 620);
    p.show();
    QSignalSpy changed(&p, &DatasetPanel::datasetChanged);
    DatasetSpec s;
    s.kind = "moons";
    s.samples = 500;
    s.noise = 0.15f;
    s.test_ratio = 0.3;
    s.seed = 7;
    s.normalize = false;
    p.setDatasetSpec(s);
    QCOMPARE(changed.count(), 1);
    const DatasetSpec r = p.datasetSpec();
    QCOMPARE(r.kind, s.kind);
    QCOMPARE(r.samples, s.samples);
    QCOMPARE(r.noise, s.noise);
    QCOMPARE(r.test_ratio, s.test_ratio);
    QCOMPARE(r.seed, s.seed);
    QCOMPARE(r.normalize, false);
    QCOMPARE(r.classes, 2);
    QCOMPARE(p.sampleShape(), (Shape{2}));
    QCOMPARE(p.previewPointCount(), 500);
    QVERIFY(p.isValid());

    // Typing a new sample count regenerates the preview and announces the change.
    changed.clear();
    type_into(child<QSpinBox>(&p, "samplesSpin"), "800");
    QVERIFY(changed.count() >= 1);
    QCOMPARE(p.previewPointCount(), 800);
    QCOMPARE(p.datasetSpec().samples, int64_t(800));

    // Spiral with 4 arms.
    auto* source = child<QComboBox>(&p, "sourceCombo");
    source->setCurrentIndex(source->findData("spiral"));
    type_into(child<QSpinBox>(&p, "classesSpin"), "4");
    QCOMPARE(p.datasetSpec().kind, std::string("spiral"));
    QCOMPARE(p.datasetSpec().classes, 4);
    QCOMPARE(p.classCount(), 4);
    screenshot(&p, "dataset_panel_synthetic");
}

void TestWidgets::dataset_panel_idx_folder() {
    DatasetPanel p;
    p.resize(420, 520);
    p.show();
    // A folder without the IDX files: the error names a missing file.
    QTemporaryDir empty;
    DatasetSpec s;
    s.kind = "mnist";
    s.path = empty.path().toStdString();
    p.setDatasetSpec(s);
    QVERIFY(!p.isValid());
    QVERIFY2(p.errorText().contains("t10k-images-idx3-ubyte"), qPrintable(p.errorText()));
    QCOMPARE(p.thumbnailCount(), 0);
    // A truncated test-images file: the reader's message reaches the panel.
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"}) {
        QFile out(empty.filePath(f));
        QVERIFY(out.open(QIODevice::WriteOnly));
    }
    {
        QFile out(empty.filePath("t10k-images-idx3-ubyte"));
        QVERIFY(out.open(QIODevice::WriteOnly));
        const char header[] = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 28, 0, 0, 0, 28};
        out.write(header, sizeof header);
        out.write(QByteArray(100, '\x7f'));
    }
    p.setDatasetSpec(s);
    QVERIFY(!p.isValid());
    QVERIFY2(p.errorText().contains("t10k-images"), qPrintable(p.errorText()));

    if (!QFileInfo::exists(QString::fromLatin1(kDebianFashionMnistDir))) {
        QSKIP("Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist");
    }
    s.kind = "fashion-mnist";
    s.path = kDebianFashionMnistDir;
    QElapsedTimer t;
    t.start();
    p.setDatasetSpec(s);
    qInfo("IDX folder check and thumbnails: %lld ms", t.elapsed());
    QVERIFY2(p.isValid(), qPrintable(p.errorText()));
    QCOMPARE(p.sampleShape(), (Shape{1, 28, 28}));
    QCOMPARE(p.thumbnailCount(), 16);
    QCOMPARE(p.classCount(), 10);
    QCOMPARE(p.datasetSpec().path, std::string(kDebianFashionMnistDir));
    screenshot(&p, "dataset_panel_fashion");
}

void TestWidgets::precision_panel_validation_and_live_requests() {
    PrecisionPanel p;
    p.resize(980, 700);
    p.show();
    QSignalSpy requested(&p, &PrecisionPanel::scalerConfigRequested);
    QSignalSpy lr(&p, &PrecisionPanel::learningRateRequested);
    auto* policy = child<QComboBox>(&p, "policyCombo");
    policy->setCurrentIndex(policy->findData("fp16-mixed"));
    QCOMPARE(p.precision(), PrecisionKind::FP16Mixed);
    QCOMPARE(p.scalerConfig().mode, ScalerMode::Dynamic);

    // Not running: nothing is sent.
    QVERIFY(!child<QPushButton>(&p, "applyButton")->isEnabled());
    p.setRunning(true);
    QVERIFY(!policy->isEnabled());  // the policy cannot change mid-run

    // growth factor 1.0 is rejected by LossScalerConfig::validate: shown, not emitted.
    auto* growth = child<QDoubleSpinBox>(&p, "scaler_growth_factor");
    type_into(growth, "1");
    QCOMPARE(growth->value(), 1.0);
    QVERIFY2(p.scalerError().contains("growth_factor"), qPrintable(p.scalerError()));
    auto* err = child<QLabel>(&p, "scalerError");
    QVERIFY(err->isVisible());
    QCOMPARE(err->text(), p.scalerError());
    QVERIFY(!child<QPushButton>(&p, "applyButton")->isEnabled());
    QTest::mouseClick(child<QPushButton>(&p, "applyButton"), Qt::LeftButton);
    QCOMPARE(requested.count(), 0);
    screenshot(&p, "precision_panel_error");

    // A valid edit while running is emitted with the edited value and the other fields unchanged.
    type_into(growth, "3");
    QVERIFY(p.scalerError().isEmpty());
    QVERIFY(!err->isVisible());
    type_into(child<QSpinBox>(&p, "scaler_growth_interval"), "500");
    click(child<QPushButton>(&p, "applyButton"));
    QCOMPARE(requested.count(), 1);
    const auto sent = requested.first().at(0).value<LossScalerConfig>();
    LossScalerConfig expected;  // the defaults, with the two edits
    expected.growth_factor = 3.0;
    expected.growth_interval = 500;
    QVERIFY(sent == expected);

    // Learning rate.
    auto* lr_edit = child<QLineEdit>(&p, "lrEdit");
    lr_edit->clear();
    QTest::keyClicks(lr_edit, "0.02");
    click(child<QPushButton>(&p, "setLrButton"));
    QCOMPARE(lr.count(), 1);
    QCOMPARE(lr.first().at(0).toFloat(), 0.02f);

    // Presets survive the round trip through the fields exactly (including FLT_MAX clamps).
    for (const char* name : {"pytorch", "deepspeed", "megatron", "nnabla", "static", "none", "default"}) {
        p.applyScalerPreset(name);
        QVERIFY2(p.scalerConfig() == loss_scaler_preset(name), name);
        QVERIFY2(p.scalerError().isEmpty(), name);
    }
    TrainConfig tc = p.applyTo(TrainConfig{});
    QCOMPARE(tc.precision, PrecisionKind::FP16Mixed);
    QVERIFY(tc.scaler && *tc.scaler == loss_scaler_preset("default"));

    p.setReadout(32768.0f, 3, 5, 4.5f);
    QVERIFY(child<QLabel>(&p, "scaleReadout")->text().contains("2^15"));
    p.addEvent(120, "scale_backoff", "scaler", "65536 -> 32768");
    p.addEvent(130, "config_change", "user", "growth_factor 2 -> 3");
    QCOMPARE(p.eventCount(), 2);
    p.setDevices({"cuda:0 NVIDIA H100"});
    p.setRunning(false);
    auto* device = child<QComboBox>(&p, "deviceCombo");
    device->setCurrentIndex(1);
    QCOMPARE(p.device(), QStringLiteral("cuda:0"));
    screenshot(&p, "precision_panel");
}

void TestWidgets::training_settings_round_trip() {
    TrainingSettingsPanel p;
    TrainConfig c;
    c.epochs = 7;
    c.batch_size = 64;
    c.lr = 0.05f;
    c.optimizer.kind = "sgd";
    c.optimizer.momentum = 0.8f;
    c.optimizer.nesterov = true;
    c.schedule.kind = "cosine";
    c.seed = 9;
    c.stats_every = 25;
    p.setFromConfig(c);
    const TrainConfig r = p.applyTo(TrainConfig{});
    QCOMPARE(r.epochs, c.epochs);
    QCOMPARE(r.batch_size, c.batch_size);
    QCOMPARE(r.lr, c.lr);
    QVERIFY(r.optimizer == c.optimizer);
    QCOMPARE(r.schedule.kind, c.schedule.kind);
    QCOMPARE(r.seed, c.seed);
    QCOMPARE(r.stats_every, c.stats_every);
    QVERIFY(p.errorText().isEmpty());
    auto* lr = child<QLineEdit>(&p, "lrEdit");
    lr->clear();
    QVERIFY(!p.errorText().isEmpty());
    // The optimizer registry's choices; momentum only for the optimizers that read it.
    auto* optimizer = child<QComboBox>(&p, "optimizerCombo");
    QCOMPARE(optimizer->count(), int(optimizer_registry().size()));
    for (const OptimizerDefinition& o : optimizer_registry()) {
        optimizer->setCurrentText(QString::fromStdString(o.name));
        QCOMPARE(child<QDoubleSpinBox>(&p, "momentumSpin")->isEnabled(), o.reads("momentum"));
    }
    optimizer->setCurrentText("sgd");
    screenshot(&p, "training_settings");
}

void TestWidgets::run_browser_lists_filters_and_edits() {
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    int64_t alpha = 0, beta = 0;
    {
        RunStore store(db.toStdString());
        RunInfo a;
        a.name = "alpha spiral";
        a.precision = "fp32";
        a.dataset = "spiral";
        alpha = store.create_run(a);
        store.set_status(alpha, RunStatus::Finished, store_now());
        RunInfo b;
        b.name = "beta fashion";
        b.precision = "fp16-mixed";
        b.dataset = "fashion-mnist";
        beta = store.create_run(b);
        store.set_status(beta, RunStatus::Finished, store_now());
    }
    RunBrowser rb;
    rb.resize(1200, 560);
    rb.show();
    QVERIFY(rb.setDatabase(db));
    QVERIFY(rb.errorText().isEmpty());
    QCOMPARE(rb.rowCount(), 2);

    // Text filter.
    auto* text = child<QLineEdit>(&rb, "textFilter");
    QTest::keyClicks(text, "alpha");
    QCOMPARE(rb.rowCount(), 1);
    QCOMPARE(rb.runIdAt(0), qint64(alpha));
    text->clear();
    QCOMPARE(rb.rowCount(), 2);
    // Precision filter offers what the database holds.
    auto* prec = child<QComboBox>(&rb, "precisionFilter");
    QVERIFY(prec->findText("fp16-mixed") > 0);
    prec->setCurrentIndex(prec->findText("fp16-mixed"));
    QCOMPARE(rb.rowCount(), 1);
    QCOMPARE(rb.runIdAt(0), qint64(beta));
    prec->setCurrentIndex(0);
    QCOMPARE(rb.rowCount(), 2);

    // Select alpha by clicking, rename it and tag it through the detail fields.
    auto* table = child<QTableWidget>(&rb, "runTable");
    int alpha_row = rb.runIdAt(0) == alpha ? 0 : 1;
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {},
                      table->visualItemRect(table->item(alpha_row, 1)).center());
    QCOMPARE(rb.selectedRunIds(), QList<qint64>{alpha});
    auto* name = child<QLineEdit>(&rb, "nameEdit");
    QCOMPARE(name->text(), QStringLiteral("alpha spiral"));
    name->clear();
    QTest::keyClicks(name, "baseline fp32");
    click(child<QPushButton>(&rb, "renameButton"));
    QTest::keyClicks(child<QLineEdit>(&rb, "tagEdit"), "paper=fig3");
    click(child<QPushButton>(&rb, "tagButton"));
    {
        RunStore check(db.toStdString());
        const Run r = check.get_run(alpha);
        QCOMPARE(r.name, std::string("baseline fp32"));
        QCOMPARE(r.tags.count("paper"), size_t(1));
        QCOMPARE(r.tags.at("paper"), std::string("fig3"));
    }
    // The tag filter narrows to the tagged run.
    QTest::keyClicks(child<QLineEdit>(&rb, "tagFilter"), "paper");
    QCOMPARE(rb.rowCount(), 1);
    QCOMPARE(rb.runIdAt(0), qint64(alpha));
    child<QLineEdit>(&rb, "tagFilter")->clear();
    QCOMPARE(rb.rowCount(), 2);

    // Several selected: Export report asks for exactly those.
    QSignalSpy report(&rb, &RunBrowser::reportRequested);
    table->selectAll();
    click(child<QPushButton>(&rb, "reportButton"));
    QCOMPARE(report.count(), 1);
    QCOMPARE(report.first().at(0).value<QList<qint64>>(), (QList<qint64>{alpha, beta}));
    screenshot(&rb, "run_browser");

    // Delete beta: the confirmation is answered Yes; the store marks it deleted, the list drops it.
    rb.selectRuns({beta});
    QTimer::singleShot(0, [] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (box) box->button(QMessageBox::Yes)->click();
    });
    click(child<QPushButton>(&rb, "deleteButton"));
    QCOMPARE(rb.rowCount(), 1);
    {
        RunStore check(db.toStdString());
        QVERIFY(check.get_run(beta).deleted);
        QVERIFY(!check.get_run(alpha).deleted);
    }
    // The trash shows it; Restore brings it back.
    click(child<QCheckBox>(&rb, "showDeleted"));
    QCOMPARE(rb.rowCount(), 1);
    QCOMPARE(rb.runIdAt(0), qint64(beta));
    rb.selectRuns({beta});
    click(child<QPushButton>(&rb, "restoreButton"));
    QCOMPARE(rb.rowCount(), 0);
    rb.setShowDeleted(false);
    QCOMPARE(rb.rowCount(), 2);
    RunStore check(db.toStdString());
    QVERIFY(!check.get_run(beta).deleted);
}

void TestWidgets::run_browser_reports_bad_database() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("garbage.sqlite");
    {
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(8192, 'x'));
    }
    RunBrowser rb;
    rb.show();
    QVERIFY(!rb.setDatabase(bad));
    QVERIFY(!rb.errorText().isEmpty());
    QVERIFY(child<QLabel>(&rb, "errorLabel")->isVisible());
    QCOMPARE(rb.rowCount(), 0);
    QVERIFY(!child<QPushButton>(&rb, "deleteButton")->isEnabled());
    // The file is left as it was.
    QFile f(bad);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray(8192, 'x'));
}

QTEST_MAIN(TestWidgets)
#include "test_widgets.moc"
