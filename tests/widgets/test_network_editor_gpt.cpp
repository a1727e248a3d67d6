// Tests that a small GPT can be built by clicking in the network editor (issue 26, item 7): the
// palette's kinds with the registry's help, "Add ×N" as one undo step, the compact text and the
// parameter count of an Embedding's and a TransformerBlock's row against the built network
// (Network::build), the live shape column, the inspector's named GEMMs with their shapes, the
// loss choice, and shape errors that name their field on their row and in the form. Real widgets
// clicked with QTest on the offscreen platform; the network is the fortunes-gpt preset's.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

#include "core/nn/gemm_shapes.h"
#include "core/nn/layer_registry.h"
#include "core/nn/network.h"
#include "resources/presets.h"
#include "widgets/network_editor.h"
#include "widget_test_support.h"

using namespace mpwb;

namespace {

constexpr int kContext = 64, kVocab = 65;  // a character-level text dataset

void click_palette(NetworkEditor& ed, const QString& kind) {
    auto* palette = child<QListWidget>(&ed, "palette");
    const auto items = palette->findItems(kind, Qt::MatchExactly);
    QCOMPARE(items.size(), 1);
    palette->scrollToItem(items.first());  // the sequence kinds sit below the fold
    QTest::mouseClick(palette->viewport(), Qt::LeftButton, {},
                      palette->visualItemRect(items.first()).center());
    QCOMPARE(palette->currentItem()->text(), kind);
    QTest::mouseClick(child<QPushButton>(&ed, "addButton"), Qt::LeftButton);
}

void type_into(QAbstractSpinBox* box, const QString& text) {
    box->setFocus();
    QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(box, text);
    QTest::keyClick(box, Qt::Key_Enter);
}

void select_row(NetworkEditor& ed, int row) {
    auto* view = child<QTableView>(&ed, "layerTable");
    view->scrollTo(view->model()->index(row, 1));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                      view->visualRect(view->model()->index(row, 1)).center());
    QCOMPARE(ed.currentLayer(), row);
}

QString cell(NetworkEditor& ed, int row, int column, int role = Qt::DisplayRole) {
    return child<QTableView>(&ed, "layerTable")->model()->index(row, column).data(role).toString();
}

void choose_loss(NetworkEditor& ed, const QString& loss) {
    auto* combo = child<QComboBox>(&ed, "lossCombo");
    const int i = combo->findText(loss);
    QVERIFY(i >= 0);
    combo->activated(i);  // what choosing the entry emits
}

// The text dataset's editor, shown at a laptop's size.
void show_editor(NetworkEditor& ed) {
    ed.resize(1300, 600);
    ed.show();
    QVERIFY(QTest::qWaitForWindowExposed(&ed));
    ed.setInputShape({kContext});
    ed.setClassCount(kVocab);
}

// Palette → Embedding, Add ×4 TransformerBlock, LayerNorm, Linear with 0 outputs (the dataset's
// classes), the per-position loss.
void build_gpt(NetworkEditor& ed) {
    click_palette(ed, "Embedding");
    type_into(child<QSpinBox>(&ed, "addCount"), "4");
    click_palette(ed, "TransformerBlock");
    type_into(child<QSpinBox>(&ed, "addCount"), "1");
    click_palette(ed, "LayerNorm");
    click_palette(ed, "Linear");
    type_into(child<QSpinBox>(&ed, "param_out"), "0");
    choose_loss(ed, "token_cross_entropy");
}

// With MPWB_SCREENSHOT_DIR set, the editor as a picture (for looking at, not compared).
void screenshot(QWidget* w, const char* name) {
    const QByteArray dir = qgetenv("MPWB_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    QDir().mkpath(QString::fromLocal8Bit(dir));
    QCoreApplication::processEvents();
    w->grab().save(QDir(QString::fromLocal8Bit(dir)).filePath(QString::fromLatin1(name) + ".png"));
}

}  // namespace

class TestNetworkEditorGpt : public QObject {
    Q_OBJECT

private slots:
    // The palette has the sequence kinds, each with the registry's help as its tooltip and, once
    // added and selected, in the form's title.
    void paletteHasTheSequenceKindsWithTheirHelp() {
        NetworkEditor ed;
        show_editor(ed);
        auto* palette = child<QListWidget>(&ed, "palette");
        for (const char* name : {"Embedding", "LayerNorm", "RMSNorm", "TransformerBlock"}) {
            const LayerKind* kind = find_layer_kind(name);
            QVERIFY(kind);
            const auto items = palette->findItems(name, Qt::MatchExactly);
            QCOMPARE(items.size(), 1);
            QVERIFY(items.first()->toolTip().startsWith(QString::fromStdString(kind->help)));
            click_palette(ed, name);
            const QString title = child<QLabel>(&ed, "layerFormTitle")->text();
            QVERIFY2(title.contains(QString::fromStdString(kind->help).toHtmlEscaped()), qPrintable(title));
        }
    }

    // The fortunes-gpt network by clicking: Add ×4 is one undo step, the rows' text, shapes and
    // parameter counts match the built network, and the network is the preset's.
    void gptByClicking() {
        NetworkEditor ed;
        show_editor(ed);
        click_palette(ed, "Embedding");
        type_into(child<QSpinBox>(&ed, "addCount"), "4");
        click_palette(ed, "TransformerBlock");
        QCOMPARE(ed.layerCount(), 5);
        QCOMPARE(ed.currentLayer(), 4);  // the last of the four: the next Add goes after them
        QCOMPARE(ed.undoStack()->undoText(), QStringLiteral("Add 4 × TransformerBlock"));
        auto* undo = child<QToolButton>(&ed, "undoButton");
        QTest::mouseClick(undo, Qt::LeftButton);
        QCOMPARE(ed.layerCount(), 1);  // one undo removes all four
        QTest::mouseClick(child<QToolButton>(&ed, "redoButton"), Qt::LeftButton);
        QCOMPARE(ed.layerCount(), 5);
        type_into(child<QSpinBox>(&ed, "addCount"), "1");
        click_palette(ed, "LayerNorm");
        click_palette(ed, "Linear");
        type_into(child<QSpinBox>(&ed, "param_out"), "0");

        // The default loss reads one class per sample: the loss choice is named and refused.
        QVERIFY(!ed.isValid());
        QVERIFY2(ed.summaryText().contains("\"loss\"") && ed.summaryText().contains("token_cross_entropy"),
                 qPrintable(ed.summaryText()));
        choose_loss(ed, "token_cross_entropy");
        QVERIFY2(ed.isValid(), qPrintable(ed.summaryText()));

        QCOMPARE(cell(ed, 0, 2), QStringLiteral("vocab 65 (dataset) · d 128 · context 64"));
        for (int row = 1; row <= 4; ++row)
            QCOMPARE(cell(ed, row, 2),
                     QStringLiteral("4 heads · d 128 · MLP ×4 GELU · LayerNorm · QK-norm off"));
        // The live shape column: [T] → [T, 128] ... → [T, vocabulary].
        for (int row = 0; row <= 5; ++row) QCOMPARE(cell(ed, row, 3), QStringLiteral("64 × 128"));
        QCOMPARE(cell(ed, 6, 3), QStringLiteral("64 × 65"));
        QCOMPARE(cell(ed, 6, 2), QStringLiteral("out=65 (the dataset's classes)"));

        // Each row's count is the built layer's.
        Network built = Network::from_json(ed.networkJson());
        built.build({kContext}, 1, kVocab);
        QCOMPARE(int(built.size()), ed.layerCount());
        for (size_t i = 0; i < built.size(); ++i)
            QCOMPARE(cell(ed, int(i), 4), QLocale().toString(qlonglong(built.layer(i).parameter_count())));
        QCOMPARE(ed.totalParameters(), built.parameter_count());

        // The same network as the preset.
        Network preset = Network::from_json(load_preset("fortunes-gpt").network);
        preset.build({kContext}, 1, kVocab);
        QCOMPARE(built.to_json()["layers"], preset.to_json()["layers"]);
        QCOMPARE(built.to_json()["loss"], preset.to_json()["loss"]);
    }

    // The inspector lists a block's GEMMs by the names the network gives them, with their
    // shapes at the dataset's context; a Linear's one GEMM; SwiGLU's gate and up.
    void inspectorListsTheGemms() {
        NetworkEditor ed;
        show_editor(ed);
        build_gpt(ed);
        select_row(ed, 3);
        QString list = child<QLabel>(&ed, "gemmList")->text();
        Network built = Network::from_json(ed.networkJson());
        built.build({kContext}, 1, kVocab);
        QCOMPARE(built.gemms(3).size(), size_t{6});
        for (const NamedGemm& g : built.gemms(3))
            QVERIFY2(list.contains(QString::fromStdString(built.gemm_label(3, g.name))), qPrintable(list));
        for (const char* shape : {"[64,128]×[128,384]", "4 × [64,32]×[32,64]", "4 × [64,64]×[64,32]",
                                  "[64,128]×[128,128]", "[64,128]×[128,512]", "[64,512]×[512,128]"})
            QVERIFY2(list.contains(QString::fromUtf8(shape)), qPrintable(list));

        screenshot(&ed, "network_editor_gpt_gemms");
        // At the height of the workbench's network dock at 1366 × 768 the block's form scrolls
        // instead of squeezing its rows.
        ed.resize(1366, 280);
        QTRY_VERIFY(child<QScrollArea>(&ed, "layerFormScroll")->verticalScrollBar()->isVisible());
        screenshot(&ed, "network_editor_gpt_block");

        QVERIFY(cell(ed, 3, 2, Qt::ToolTipRole).contains("3.attn.qkv"));  // hovering the row shows them too
        select_row(ed, 6);
        list = child<QLabel>(&ed, "gemmList")->text();
        QVERIFY2(list.contains("6 Linear") && list.contains(QString::fromUtf8("[64,128]×[128,65]")),
                 qPrintable(list));

        select_row(ed, 3);
        auto* swiglu_box = child<QWidget>(&ed, "param_swiglu");
        child<QScrollArea>(&ed, "layerFormScroll")->ensureWidgetVisible(swiglu_box);
        QTest::mouseClick(swiglu_box, Qt::LeftButton, {}, QPoint(8, swiglu_box->height() / 2));  // on the box
        QVERIFY(cell(ed, 3, 2).contains("SwiGLU"));
        list = child<QLabel>(&ed, "gemmList")->text();
        // LLaMA's hidden width: 2/3 · 4 · 128 rounded up to a multiple of 8.
        for (const char* part : {"3.mlp.gate", "3.mlp.up", "[64,128]×[128,344]", "[64,344]×[344,128]"})
            QVERIFY2(list.contains(QString::fromUtf8(part)), qPrintable(list));
        QVERIFY(!list.contains("3.mlp.fc1"));
        Network swiglu = Network::from_json(ed.networkJson());
        swiglu.build({kContext}, 1, kVocab);
        QCOMPARE(cell(ed, 3, 4), QLocale().toString(qlonglong(swiglu.layer(3).parameter_count())));
    }

    // The shapes the inspector lists, kind by kind: a convolution's im2col product, a Linear on
    // features, a kind without GEMMs.
    void gemmShapesOfEachKind() {
        const auto conv =
            layer_gemm_shapes({{"type", "Conv2d"}, {"out_channels", 16}, {"kernel", 3}}, {2, 28, 28}, 0);
        QCOMPARE(conv.size(), size_t{1});
        QCOMPARE(gemm_shape_text(conv[0]), std::string("[16,18]×[18,676]"));
        const auto linear = layer_gemm_shapes({{"type", "Linear"}, {"out", 0}}, {784}, 10);
        QCOMPARE(gemm_shape_text(linear.at(0)), std::string("[1,784]×[784,10]"));
        QVERIFY(layer_gemm_shapes({{"type", "ReLU"}}, {64, 128}, 0).empty());
        const auto rms_qk = layer_gemm_shapes(
            {{"type", "TransformerBlock"}, {"heads", 2}, {"mlp_ratio", 2}, {"qk_norm", true}}, {16, 32}, 0);
        QCOMPARE(rms_qk.size(), size_t{6});
        QCOMPARE(gemm_shape_text(rms_qk[1]), std::string("2 × [16,16]×[16,16]"));
        QCOMPARE(gemm_shape_text(rms_qk[4]), std::string("[16,32]×[32,64]"));
    }

    // The palette's context menu adds several layers as one undo step.
    void paletteMenuAddsSeveral() {
        NetworkEditor ed;
        show_editor(ed);
        click_palette(ed, "Embedding");
        auto* palette = child<QListWidget>(&ed, "palette");
        QListWidgetItem* block = palette->findItems("TransformerBlock", Qt::MatchExactly).first();
        palette->scrollToItem(block);
        bool chosen = false;
        // The menu runs its own event loop: choose the entry from inside it.
        QTimer::singleShot(0, &ed, [&] {
            auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
            QVERIFY(menu);
            for (QAction* action : menu->actions())
                if (action->text() == QStringLiteral("Add 4 × TransformerBlock")) {
                    action->trigger();
                    chosen = true;
                }
            menu->close();
        });
        emit palette->customContextMenuRequested(palette->visualItemRect(block).center());
        QVERIFY(chosen);
        QCOMPARE(ed.layerCount(), 5);
        QTest::mouseClick(child<QToolButton>(&ed, "undoButton"), Qt::LeftButton);
        QCOMPARE(ed.layerCount(), 1);
    }

    // Shape errors name the field, on the row they belong to and in the form.
    void errorsNameTheField() {
        NetworkEditor ed;
        show_editor(ed);
        click_palette(ed, "TransformerBlock");  // before any Embedding
        QVERIFY2(cell(ed, 0, 1, Qt::ToolTipRole).contains("put an Embedding before it"),
                 qPrintable(cell(ed, 0, 1, Qt::ToolTipRole)));
        QTest::mouseClick(child<QToolButton>(&ed, "undoButton"), Qt::LeftButton);
        build_gpt(ed);
        QVERIFY(ed.isValid());

        select_row(ed, 2);
        type_into(child<QSpinBox>(&ed, "param_heads"), "3");
        QVERIFY(!ed.isValid());
        QCOMPARE(
            cell(ed, 2, 1, Qt::ToolTipRole),
            QStringLiteral("layer 2 (TransformerBlock): \"heads\": the model width d 128 is not divisible "
                           "by 3 heads; 2 or 4 heads divide it"));
        QVERIFY(child<QWidget>(&ed, "param_heads")->property("fieldError").toBool());
        // Only the block's own row is in error: the rows after it wait for a known input.
        QVERIFY(!cell(ed, 6, 1, Qt::ToolTipRole).contains("layer 6"));
        screenshot(&ed, "network_editor_gpt_heads_error");
        QVERIFY(!child<QWidget>(&ed, "param_mlp_ratio")->property("fieldError").toBool());
        type_into(child<QSpinBox>(&ed, "param_heads"), "8");
        QVERIFY(ed.isValid());

        // A dataset context longer than the embedding's.
        ed.setInputShape({128});
        QVERIFY(!ed.isValid());
        QVERIFY2(cell(ed, 0, 1, Qt::ToolTipRole).contains("\"context\" is 64 positions, the input has 128"),
                 qPrintable(cell(ed, 0, 1, Qt::ToolTipRole)));
        select_row(ed, 0);
        QVERIFY(child<QWidget>(&ed, "param_context")->property("fieldError").toBool());
        QVERIFY(!child<QWidget>(&ed, "param_d_model")->property("fieldError").toBool());
        ed.setInputShape({kContext});

        // A vocabulary smaller than the dataset's.
        select_row(ed, 0);
        type_into(child<QSpinBox>(&ed, "param_vocab"), "50");
        QVERIFY(!ed.isValid());
        QVERIFY2(cell(ed, 0, 1, Qt::ToolTipRole)
                     .contains("\"vocab\" (vocabulary) is 50 tokens, the dataset has 65"),
                 qPrintable(cell(ed, 0, 1, Qt::ToolTipRole)));
        QVERIFY(child<QWidget>(&ed, "param_vocab")->property("fieldError").toBool());
    }
};

QTEST_MAIN(TestNetworkEditorGpt)
#include "test_network_editor_gpt.moc"
