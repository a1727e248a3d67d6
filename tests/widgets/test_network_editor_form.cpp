// Tests that the network editor's palette and settings forms are built from the layer registry
// (core/nn/layer_registry.h): a layer added by clicking the palette gets the registry's new-layer
// values, its form has one editor per registry field with the field's label, help and range,
// typing past the range is refused by the spin box, and a value the range excludes, loaded from
// a file, is marked on its row with the registry's message. Driven with QTest clicks and keys.
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QtTest>

#include "core/nn/layer_registry.h"
#include "widgets/network_editor.h"
#include "widget_test_support.h"

using namespace mpwb;

namespace {

void click_palette(NetworkEditor& ed, const QString& kind) {
    auto* palette = child<QListWidget>(&ed, "palette");
    const auto items = palette->findItems(kind, Qt::MatchExactly);
    QCOMPARE(items.size(), 1);
    QTest::mouseClick(palette->viewport(), Qt::LeftButton, {},
                      palette->visualItemRect(items.first()).center());
    QTest::mouseClick(child<QPushButton>(&ed, "addButton"), Qt::LeftButton);
}

void type_into(QAbstractSpinBox* box, const QString& text) {
    box->setFocus();
    QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(box, text);
    QTest::keyClick(box, Qt::Key_Enter);
}

QString form_label(NetworkEditor& ed, QWidget* field) {
    auto* form = qobject_cast<QFormLayout*>(child<QWidget>(&ed, "layerForm")->layout());
    auto* label = qobject_cast<QLabel*>(form->labelForField(field));
    return label ? label->text() : QString();
}

}  // namespace

class TestNetworkEditorForm : public QObject {
    Q_OBJECT

private slots:
    // Every kind of the registry is in the palette, in its order.
    void paletteListsTheRegistry() {
        NetworkEditor ed;
        auto* palette = child<QListWidget>(&ed, "palette");
        QCOMPARE(palette->count(), int(layer_registry().size()));
        for (int i = 0; i < palette->count(); ++i)
            QCOMPARE(palette->item(i)->text().toStdString(), layer_registry()[size_t(i)].name);
    }

    // Each kind, added by clicking, shows one editor per registry field with its label, help and range.
    void formsFollowTheFieldTable() {
        NetworkEditor ed;
        ed.resize(1000, 520);
        ed.show();
        QVERIFY(QTest::qWaitForWindowExposed(&ed));
        for (const LayerKind& kind : layer_registry()) {
            click_palette(ed, QString::fromStdString(kind.name));
            QCOMPARE(ed.networkJson()["layers"].back(), new_layer_json(kind));
            for (const LayerField& f : kind.fields) {
                const QString name = QStringLiteral("param_") + QString::fromStdString(f.key);
                auto* field = child<QWidget>(&ed, name);
                QCOMPARE(field->toolTip().toStdString(), f.help);
                QVERIFY2(form_label(ed, field).startsWith(QString::fromStdString(f.label)), qPrintable(name));
                if (auto* box = qobject_cast<QSpinBox*>(field)) {
                    QCOMPARE(box->minimum(), int(f.editor_min()));
                    QCOMPARE(box->maximum(), int(std::min(f.editor_max(), 2147483647.0)));
                } else if (auto* box = qobject_cast<QDoubleSpinBox*>(field)) {
                    QCOMPARE(box->minimum(), f.editor_min());
                    QCOMPARE(box->maximum(), f.editor_max());
                } else {
                    QVERIFY(qobject_cast<QCheckBox*>(field));
                }
            }
        }
    }

    // Typing a value past the range leaves the field within it; a value in range is stored.
    void typingIsHeldToTheRange() {
        NetworkEditor ed;
        ed.resize(1000, 520);
        ed.show();
        QVERIFY(QTest::qWaitForWindowExposed(&ed));
        ed.setInputShape({4});
        click_palette(ed, "Dropout");
        auto* p = child<QDoubleSpinBox>(&ed, "param_p");
        type_into(p, "0.25");
        QCOMPARE(ed.networkJson()["layers"][0]["p"].get<double>(), 0.25);
        type_into(p, "1.5");  // the drop probability must stay below 1
        QVERIFY(ed.networkJson()["layers"][0]["p"].get<double>() < 1.0);
        QVERIFY(ed.isValid());

        click_palette(ed, "MaxPool2d");
        auto* stride = child<QSpinBox>(&ed, "param_stride");
        QCOMPARE(form_label(ed, stride), QStringLiteral("Stride (0 = kernel)"));
        type_into(stride, "3");
        QCOMPARE(ed.networkJson()["layers"][1]["stride"].get<int>(), 3);
        type_into(stride, "0");  // 0: not set, the kernel
        QVERIFY(!ed.networkJson()["layers"][1].contains("stride"));
    }

    // A file with a value outside the range is refused, and a description set as it is marks the
    // row with the registry's message.
    void outOfRangeFromAFileIsMarked() {
        NetworkEditor ed;
        ed.setInputShape({4});
        const QString refused = ed.loadJson(R"({"layers": [{"type": "Dropout", "p": 1.0}]})");
        QVERIFY2(refused.contains("layer 0 (Dropout): \"p\" (drop probability) must be in [0, 1)"),
                 qPrintable(refused));
        QCOMPARE(ed.layerCount(), 0);
        ed.setNetworkJson(
            {{"layers", {{{"type", "Linear"}, {"out", 3}}, {{"type", "Dropout"}, {"p", 1.0}}}}});
        QVERIFY(!ed.isValid());
        const QString tip =
            child<QTableView>(&ed, "layerTable")->model()->index(1, 1).data(Qt::ToolTipRole).toString();
        QCOMPARE(tip,
                 QStringLiteral("layer 1 (Dropout): \"p\" (drop probability) must be in [0, 1), gets 1"));
    }
};

QTEST_MAIN(TestNetworkEditorForm)
#include "test_network_editor_form.moc"
