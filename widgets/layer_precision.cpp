// The network editor's Precision column and the inspector's per-GEMM precision form.
#include "widgets/layer_precision.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/nn/gemm_shapes.h"
#include "core/nn/network.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

namespace {

// "mxfp8 / mxfp8 / bf16" (fprop / dgrad / wgrad); one name when the three passes agree.
QString passes_text(const GemmPrecisionPlan& plan, const GemmPrecision& g) {
    QStringList parts;
    for (const PassRecipe recipe : g.passes) parts << QString::fromStdString(plan.pass_label(recipe));
    if (parts[0] == parts[1] && parts[1] == parts[2]) return parts[0];
    return parts.join(QStringLiteral(" / "));
}

}  // namespace

GemmPrecisionPlan resolve_editor_precisions(const nlohmann::json& network, const Shape& input, int classes,
                                            const EditorPrecisionSettings& settings, std::string& error) {
    error.clear();
    std::vector<std::vector<NamedGemm>> gemms;
    const nlohmann::json layers =
        network.is_object() ? network.value("layers", nlohmann::json::array()) : nlohmann::json::array();
    Shape shape = input;
    const auto reports =
        input.empty() ? std::vector<LayerReport>{} : Network::inspect(network, input, 1, classes);
    for (size_t i = 0; i < layers.size(); ++i) {
        std::vector<NamedGemm> named;
        const bool fits = i < reports.size() && reports[i].error.empty() && !shape.empty();
        try {
            if (fits)
                for (const GemmShape& g : layer_gemm_shapes(layers[i], shape, classes))
                    named.push_back({g.name, g.attention_product});
        } catch (const std::exception&) {
            named.clear();  // the layer's own error is shown on its row
        }
        gemms.push_back(std::move(named));
        shape = fits ? reports[i].output : Shape{};
    }
    try {
        return resolve_gemm_precisions(gemms, settings.rules, PrecisionPolicy::make(settings.precision),
                                       settings.fp8_attention);
    } catch (const std::exception& e) {
        error = e.what();
        return {};
    }
}

QString layer_precision_text(const GemmPrecisionPlan& plan, size_t layer) {
    QStringList distinct;
    for (const GemmPrecision& g : plan.gemms) {
        if (g.layer != layer || g.attention_product) continue;
        const QString text = passes_text(plan, g);
        if (!distinct.contains(text)) distinct << text;
    }
    if (distinct.size() <= 1) return distinct.isEmpty() ? QString() : distinct.front();
    return QObject::tr("mixed: %1").arg(distinct.join(QStringLiteral(", ")));
}

QString layer_precision_tooltip(const GemmPrecisionPlan& plan, size_t layer) {
    QStringList lines;
    for (const GemmPrecision& g : plan.gemms)
        if (g.layer == layer)
            lines << QStringLiteral("%1: %2%3")
                         .arg(QString::fromStdString(g.label), passes_text(plan, g),
                              g.attention_product ? QObject::tr(" (attention product: fp8_attention)")
                                                  : QString());
    if (lines.isEmpty()) return {};
    return QObject::tr("fprop / dgrad / wgrad of each GEMM:\n") + lines.join(QLatin1Char('\n'));
}

LayerPrecisionForm::LayerPrecisionForm(QWidget* parent) : QGroupBox(tr("Precision per GEMM"), parent) {
    setObjectName(QStringLiteral("layerPrecisionForm"));
    gemm_ = new QComboBox;
    gemm_->setObjectName(QStringLiteral("precisionGemm"));
    auto* form = new QFormLayout;
    form->addRow(tr("GEMM"), gemm_);
    for (size_t p = 0; p < passes_.size(); ++p) {
        auto* combo = new QComboBox;
        const QString pass = QString::fromLatin1(gemm_pass_name(static_cast<GemmPass>(p)));
        combo->setObjectName(QStringLiteral("precision_") + pass);
        combo->addItem(tr("as the run"), QString());
        combo->addItem(QStringLiteral("bf16"), QStringLiteral("bf16"));
        for (const ScaledRecipe r : scaled_recipes())
            combo->addItem(QString::fromLatin1(scaled_recipe_name(r)),
                           QString::fromLatin1(scaled_recipe_name(r)));
        form->addRow(pass, combo);
        passes_[p] = combo;
    }
    resolved_ = new QLabel;
    resolved_->setObjectName(QStringLiteral("precisionResolved"));
    resolved_->setWordWrap(true);
    set_ = new QPushButton(tr("Set for the next run"));
    set_->setObjectName(QStringLiteral("precisionSetButton"));
    set_->setToolTip(
        tr("Adds a precision rule for this GEMM to the training settings (replacing one "
           "with the same match); the Precision panel lists the rules."));
    auto* column = new QVBoxLayout(this);
    column->addLayout(form);
    column->addWidget(resolved_);
    column->addWidget(set_);
    connect(gemm_, &QComboBox::currentIndexChanged, this, [this] { showChosenGemm(); });
    connect(set_, &QPushButton::clicked, this, &LayerPrecisionForm::emitRule);
    hide();
}

void LayerPrecisionForm::showLayer(const GemmPrecisionPlan& plan, size_t layer) {
    plan_ = plan;
    const QString kept = gemm_->currentData().toString();
    const QSignalBlocker quiet(gemm_);
    gemm_->clear();
    int named = 0;
    for (const GemmPrecision& g : plan.gemms) {
        if (g.layer != layer || g.attention_product) continue;
        gemm_->addItem(QString::fromStdString(g.label), QString::fromStdString(g.label));
        ++named;
    }
    // A block's GEMMs at once ("3.*" skips the attention products, which no rule names).
    if (named > 1) gemm_->addItem(tr("all of layer %1 (%1.*)").arg(layer), QStringLiteral("%1.*").arg(layer));
    const int i = gemm_->findData(kept);
    gemm_->setCurrentIndex(i >= 0 ? i : 0);
    setVisible(named > 0);
    showChosenGemm();
}

// The chosen GEMM's resolved passes preselect the combos ("as the run" where they are the run's).
void LayerPrecisionForm::showChosenGemm() {
    const QString label = gemm_->currentData().toString();
    const GemmPrecision* chosen = nullptr;
    for (const GemmPrecision& g : plan_.gemms)
        if (QString::fromStdString(g.label) == label) chosen = &g;
    resolved_->setText(chosen ? tr("Now: %1 (fprop / dgrad / wgrad)").arg(passes_text(plan_, *chosen))
                              : QString());
    for (size_t p = 0; p < passes_.size(); ++p) {
        const bool own = chosen && chosen->passes[p] != plan_.policy.recipe;
        const QString name = own ? QString::fromStdString(pass_recipe_name(chosen->passes[p])) : QString();
        const int i = passes_[p]->findData(name);
        passes_[p]->setCurrentIndex(i >= 0 ? i : 0);
    }
}

void LayerPrecisionForm::emitRule() {
    PrecisionRule rule;
    rule.match = gemm_->currentData().toString().toStdString();
    if (rule.match.empty()) return;
    for (size_t p = 0; p < passes_.size(); ++p) {
        const QString name = passes_[p]->currentData().toString();
        if (!name.isEmpty()) rule.passes[p] = parse_pass_recipe(name.toStdString(), "precision form");
    }
    emit ruleRequested(rule);
}

}  // namespace mpwb
