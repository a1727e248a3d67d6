// Tests of PrecisionPanel's scaler form (widgets/scaler_form.h), built from the loss scaler's
// field table: a value the scaler refuses, typed into the real editor, marks exactly the field
// the issue names (as data, not by searching the message) and shows the scaler's own message;
// every field of the table has an editor, enabled when the field applies. The scaled recipes:
// the policy list offers each with its one-line explanation, the recipe form is built from
// scaled_recipe_fields() with the fields the recipe does not use disabled, and a setting changed
// while a run goes on is posted as a request (only then, and only when valid).
#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <string_view>

#include "tests/widgets/widget_test_support.h"
#include "widgets/precision_panel.h"

using namespace mpwb;

namespace {

// Replaces a spin box's text the way a user does: select all, type, Enter.
// Clicks a check box on its indicator (a form row makes the box wide; its centre is empty space).
void click_box(QCheckBox* box) { QTest::mouseClick(box, Qt::LeftButton, {}, QPoint(8, box->height() / 2)); }

void type_into(QAbstractSpinBox* box, const QString& text) {
    box->setFocus();
    QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(box, text);
    QTest::keyClick(box, Qt::Key_Enter);
}

}  // namespace

class TestPrecisionPanel : public QObject {
    Q_OBJECT
private slots:
    // For each setting a value the scaler refuses is typed into its editor and Apply is clicked:
    // nothing is sent, exactly that field's editor is marked, the scaler's message is shown.
    void theFieldAnIssueNamesIsMarked_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("typed");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("valid");
        QTest::newRow("growth") << "growth_factor"
                                << "1"
                                << "growth_factor must be a finite number greater than 1 (got 1)"
                                << "3";
        QTest::newRow("backoff") << "backoff_factor"
                                 << "1"
                                 << "backoff_factor must be a finite number in (0, 1) (got 1)"
                                 << "0.25";
        QTest::newRow("max") << "max_scale"
                             << "128"
                             << "max_scale 3.402823669209385e+38 exceeds the largest FP32 value"
                             << "20";
        // min above max: the message names both, only min_scale is the issue's field.
        QTest::newRow("min") << "min_scale"
                             << "30"
                             << "min_scale 1073741824 is greater than max_scale 16777216"
                             << "-20";
        QTest::newRow("initial") << "initial_scale"
                                 << "-30"
                                 << "initial_scale 9.313225746154785e-10 is outside [min_scale, max_scale]"
                                 << "10";
    }

    void theFieldAnIssueNamesIsMarked() {
        QFETCH(QString, field);
        QFETCH(QString, typed);
        QFETCH(QString, message);
        QFETCH(QString, valid);
        PrecisionPanel p;
        p.show();
        p.setPrecision(PrecisionKind::FP16Mixed);
        p.setRunning(true);
        QSignalSpy requested(&p, &PrecisionPanel::scalerConfigRequested);
        auto* editor = qobject_cast<QAbstractSpinBox*>(p.scalerFieldEditor(field.toStdString()));
        QVERIFY(editor);
        QCOMPARE(editor->objectName(), "scaler_" + field);
        type_into(editor, typed);
        QTest::mouseClick(child<QPushButton>(&p, "applyButton"), Qt::LeftButton);
        QCOMPARE(requested.count(), 0);
        QCOMPARE(p.scalerIssues().size(), size_t{1});
        QCOMPARE(QString::fromStdString(p.scalerIssues().front().field), field);
        auto* shown = child<QLabel>(&p, "scalerError");
        QVERIFY(shown->isVisible());
        QVERIFY2(shown->text().contains(message), qPrintable(shown->text()));
        QCOMPARE(editor->toolTip(), shown->text());
        for (const auto& f : loss_scaler_fields()) {
            const bool marked = !p.scalerFieldEditor(f.name)->styleSheet().isEmpty();
            QVERIFY2(marked == (field == f.name),
                     qPrintable(QString("%1 marked: %2").arg(f.name).arg(marked)));
        }
        // A valid value clears the mark and the message, and Apply sends it.
        type_into(editor, valid);
        QVERIFY(p.scalerIssues().empty());
        QVERIFY(editor->styleSheet().isEmpty());
        QVERIFY(!shown->isVisible());
        QTest::mouseClick(child<QPushButton>(&p, "applyButton"), Qt::LeftButton);
        QCOMPARE(requested.count(), 1);
    }

    // Every setting of the table has an editor, explained and enabled by the table, and the form
    // gives back exactly the configuration it was given.
    void theFormFollowsTheFieldTable() {
        PrecisionPanel p;
        for (const auto& f : loss_scaler_fields()) {
            QWidget* editor = p.scalerFieldEditor(f.name);
            QVERIFY2(editor, f.name);
            QCOMPARE(editor->toolTip(), QString::fromLatin1(f.help));
        }
        QCOMPARE(p.scalerFieldEditor("growth_intervall"), nullptr);
        LossScalerConfig c = loss_scaler_preset("nnabla");
        c.hysteresis = 3;
        p.setScalerConfig(c);
        QVERIFY(p.scalerConfig() == c);
        for (const auto& f : loss_scaler_fields())
            QCOMPARE(p.scalerFieldEditor(f.name)->isEnabled(), f.applies(c));
        c.mode = ScalerMode::None;
        p.setScalerConfig(c);
        QVERIFY(!p.scalerFieldEditor("growth_factor")->isEnabled());
        QVERIFY(!p.scalerFieldEditor("initial_scale")->isEnabled());
        QVERIFY(p.scalerFieldEditor("count_skipped_steps")->isEnabled());
    }

    // Every scaled recipe is in the policy list with its explanation; choosing it shows the
    // explanation and the recipe form, whose editors are enabled exactly where field.applies.
    void thePanelOffersEachRecipeWithItsExplanation() {
        PrecisionPanel p;
        p.show();
        auto* policy = child<QComboBox>(&p, "policyCombo");
        auto* summary = child<QLabel>(&p, "policySummary");
        int recipes = 0;
        for (const PrecisionKind kind : precision_kinds()) {
            const ScaledRecipe recipe = PrecisionPolicy::make(kind).recipe;
            const int item = policy->findData(QString::fromStdString(precision_name(kind)));
            QVERIFY2(item >= 0, precision_name(kind).c_str());
            policy->setCurrentIndex(item);
            QCOMPARE(p.precision(), kind);
            auto* form = qobject_cast<QGroupBox*>(p.recipeFieldEditor("margin")->parentWidget());
            QVERIFY(form);
            if (recipe == ScaledRecipe::None) {
                QVERIFY(!summary->isVisible());
                QVERIFY(!form->isVisible());
                continue;
            }
            ++recipes;
            const QString explanation = QString::fromLatin1(scaled_recipe_summary(recipe));
            QVERIFY(!explanation.isEmpty());
            QCOMPARE(summary->text(), explanation);
            QVERIFY(summary->isVisible());
            QCOMPARE(policy->itemData(item, Qt::ToolTipRole).toString(), explanation);
            QVERIFY(form->isVisible());
            QCOMPARE(p.recipeConfig().recipe, recipe);
            ScaledRecipeConfig c;
            c.recipe = recipe;
            int enabled = 0, disabled = 0;
            for (const auto& f : scaled_recipe_fields()) {
                QWidget* editor = p.recipeFieldEditor(f.name);
                QVERIFY2(editor, f.name);
                QCOMPARE(editor->objectName(), QStringLiteral("recipe_%1").arg(f.name));
                QVERIFY2(editor->isEnabled() == f.applies(c), f.name);
                (f.applies(c) ? enabled : disabled)++;
            }
            QVERIFY2(enabled > 0 && disabled > 0, scaled_recipe_name(recipe));
        }
        QCOMPARE(recipes, 6);  // fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4, mxfp4
    }

    // While a run goes on, a recipe setting typed or clicked is posted at once with the run's
    // recipe; a disabled field cannot be clicked; nothing is posted when no run goes on.
    void aRecipeChangeWhileRunningIsRequested() {
        PrecisionPanel p;
        p.show();
        p.setPrecision(PrecisionKind::Fp8Delayed);
        QSignalSpy requested(&p, &PrecisionPanel::recipeConfigRequested);
        auto* history = qobject_cast<QAbstractSpinBox*>(p.recipeFieldEditor("amax_history_len"));
        QVERIFY(history);
        type_into(history, "8");
        QCOMPARE(requested.count(), 0);  // not running: the setting is for the next run
        QCOMPARE(p.applyTo(TrainConfig{}).recipe.amax_history_len, int64_t{8});

        p.setRunning(true);
        type_into(history, "16");
        QCOMPARE(requested.count(), 1);
        auto sent = requested.takeFirst().at(0).value<ScaledRecipeConfig>();
        QCOMPARE(sent.amax_history_len, int64_t{16});
        QCOMPARE(sent.recipe, ScaledRecipe::Fp8Delayed);

        // nvfp4's stochastic rounding does not apply to fp8-delayed: its box is disabled.
        auto* stochastic = qobject_cast<QCheckBox*>(p.recipeFieldEditor("stochastic_rounding"));
        QVERIFY(stochastic);
        QVERIFY(!stochastic->isEnabled());
        click_box(stochastic);
        QCOMPARE(requested.count(), 0);

        p.setRunning(false);
        p.setPrecision(PrecisionKind::NvFp4);
        p.setRunning(true);
        QVERIFY(stochastic->isEnabled());
        const bool before = stochastic->isChecked();
        click_box(stochastic);
        QCOMPARE(requested.count(), 1);
        sent = requested.takeFirst().at(0).value<ScaledRecipeConfig>();
        QCOMPARE(sent.stochastic_rounding, !before);
        QCOMPARE(sent.recipe, ScaledRecipe::NvFp4);
    }

    // mxfp4 is a policy of the combo; its form enables the FP4 settings it has (stochastic
    // rounding, Hadamard and its signs, MX scale rounding) and not nvfp4's 4 over 6, whose error
    // measure is enabled only while 4 over 6 is on.
    void fp4SettingsFollowTheirRecipe() {
        PrecisionPanel p;
        auto* combo = p.findChild<QComboBox*>("policyCombo");
        QVERIFY(combo->findData(QStringLiteral("mxfp4")) >= 0);
        p.setPrecision(PrecisionKind::MxFp4);
        QCOMPARE(p.precision(), PrecisionKind::MxFp4);
        QVERIFY(p.policySummary().contains(QStringLiteral("E8M0")));
        auto enabled = [&](const char* field) {
            QWidget* w = p.recipeFieldEditor(field);
            return w && w->isEnabled();
        };
        for (const char* field : {"stochastic_rounding", "hadamard", "hadamard_signs", "mx_scale_rounding"})
            QVERIFY2(enabled(field), field);
        for (const char* field : {"nvfp4_4over6", "nvfp4_4over6_error", "mx_element", "margin"})
            QVERIFY2(!enabled(field), field);
        p.setPrecision(PrecisionKind::NvFp4);
        QVERIFY(enabled("nvfp4_4over6"));
        QVERIFY(!enabled("nvfp4_4over6_error"));
        auto* four = qobject_cast<QCheckBox*>(p.recipeFieldEditor("nvfp4_4over6"));
        QVERIFY(four && !four->isChecked());
        click_box(four);
        QVERIFY(enabled("nvfp4_4over6_error"));
        QVERIFY(p.applyTo(TrainConfig{}).recipe.nvfp4_4over6);
    }
};

QTEST_MAIN(TestPrecisionPanel)
#include "test_precision_panel.moc"
