// The network editor's text of a layer (see layer_row_text.h). Every setting is read through the
// layer registry (read_layer_settings), so defaults and absent fields read as the core reads them.
#include "widgets/layer_row_text.h"

#include <QLocale>
#include <QStringList>

#include "core/nn/gemm_shapes.h"
#include "core/nn/layer_registry.h"

namespace mpwb {

namespace {

// What a field's 0 means when it takes the dataset's classes (LayerField::zero_means).
const char* const kDatasetClasses = "the dataset's classes";

QString key_value_text(const LayerKind* kind, const std::string& key, const nlohmann::json& value,
                       int64_t dataset_classes) {
    const QString name = QString::fromStdString(key);
    if (value.is_boolean()) return value.get<bool>() ? name : QStringLiteral("no ") + name;
    if (value.is_number_float()) return name + "=" + QString::number(value.get<double>(), 'g', 6);
    const LayerField* field = nullptr;
    if (kind)
        for (const LayerField& f : kind->fields)
            if (f.key == key) field = &f;
    // 0 of "out" is what zero_means says ("infer", the dataset's classes: then how many).
    if (field && !field->zero_means.empty() && value.is_number_integer() && value.get<int64_t>() == 0) {
        const QString meaning = QString::fromStdString(field->zero_means);
        if (dataset_classes > 0 && field->zero_means == kDatasetClasses)
            return QStringLiteral("%1=%2 (%3)").arg(name).arg(dataset_classes).arg(meaning);
        return name + "=" + meaning;
    }
    return name + "=" + QString::fromStdString(value.dump());
}

// Any kind: its settings as key=value, as written in its description, and a setting whose
// absence means the dataset's classes (a language model's head) with their number.
QString generic_text(const LayerKind* kind, const nlohmann::json& spec, int64_t dataset_classes) {
    if (!spec.is_object()) return QString::fromStdString(spec.dump());
    QStringList parts;
    for (const auto& [key, value] : spec.items())
        if (key != "type") parts << key_value_text(kind, key, value, dataset_classes);
    for (const LayerField& f : kind ? kind->fields : std::vector<LayerField>{})
        if (!spec.contains(f.key) && f.when_absent == WhenAbsent::Default && f.default_value == 0 &&
            f.zero_means == kDatasetClasses)
            parts.prepend(key_value_text(kind, f.key, 0, dataset_classes));
    return parts.join(", ");
}

QString width_text(const Shape& input) {
    return input.size() == 2 ? QString::number(input[1]) : QStringLiteral("?");
}

// "4 heads · d 128 · MLP ×4 GELU · LayerNorm · QK-norm off", then dropout and bias when set.
QString block_text(const LayerSettings& s, const Shape& input) {
    QStringList parts{QStringLiteral("%1 heads").arg(s.integer("heads")),
                      QStringLiteral("d %1").arg(width_text(input)),
                      QStringLiteral("MLP ×%1 %2")
                          .arg(s.integer("mlp_ratio"))
                          .arg(s.flag("swiglu") ? QStringLiteral("SwiGLU") : QStringLiteral("GELU")),
                      s.flag("rmsnorm") ? QStringLiteral("RMSNorm") : QStringLiteral("LayerNorm"),
                      s.flag("qk_norm") ? QStringLiteral("QK-norm on") : QStringLiteral("QK-norm off")};
    if (s.real("attn_dropout") > 0 || s.real("resid_dropout") > 0)
        parts << QStringLiteral("dropout %1/%2").arg(s.real("attn_dropout")).arg(s.real("resid_dropout"));
    if (!s.flag("bias")) parts << QStringLiteral("no bias");
    return parts.join(QStringLiteral(" · "));
}

// "vocab 65 (dataset) · d 128 · context 64"; "vocab from dataset" before one is known.
QString embedding_text(const LayerSettings& s, int64_t dataset_classes) {
    const int64_t vocab = s.integer("vocab");
    const QString vocab_text = vocab != 0 ? QStringLiteral("vocab %1").arg(vocab)
                               : dataset_classes > 0
                                   ? QStringLiteral("vocab %1 (dataset)").arg(dataset_classes)
                                   : QStringLiteral("vocab from dataset");
    return QStringList{vocab_text, QStringLiteral("d %1").arg(s.integer("d_model")),
                       QStringLiteral("context %1").arg(s.integer("context"))}
        .join(QStringLiteral(" · "));
}

}  // namespace

QString layer_settings_text(const nlohmann::json& spec, const Shape& input, int64_t dataset_classes) {
    const LayerKind* kind = spec.is_object() && spec.contains("type") && spec["type"].is_string()
                                ? find_layer_kind(spec["type"].get<std::string>())
                                : nullptr;
    if (kind && (kind->name == "TransformerBlock" || kind->name == "Embedding")) {
        try {
            const LayerSettings s = read_layer_settings(*kind, spec);
            return kind->name == "Embedding" ? embedding_text(s, dataset_classes) : block_text(s, input);
        } catch (const std::exception&) {
            // A setting out of range: the row's error says which; show the settings as written.
        }
    }
    return generic_text(kind, spec, dataset_classes);
}

std::string error_field(const nlohmann::json& spec, const std::string& message) {
    if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string()) return {};
    const LayerKind* kind = find_layer_kind(spec["type"].get<std::string>());
    if (!kind) return {};
    std::string named;
    size_t first = std::string::npos;
    for (const LayerField& f : kind->fields) {
        const size_t at = message.find("\"" + f.key + "\"");
        if (at < first) {
            first = at;
            named = f.key;
        }
    }
    return named;
}

QString gemm_list_html(const nlohmann::json& spec, int layer_index, const Shape& input,
                       int64_t dataset_classes) {
    std::vector<GemmShape> gemms;
    try {
        gemms = layer_gemm_shapes(spec, input, dataset_classes);
    } catch (const std::exception&) {
        return {};  // the row's error says why the layer does not fit
    }
    if (gemms.empty()) return {};
    const QString kind = QString::fromStdString(spec.value("type", std::string()));
    QString rows;
    for (const GemmShape& g : gemms) {
        const QString label =
            g.name.empty() ? QStringLiteral("%1 %2").arg(layer_index).arg(kind)
                           : QStringLiteral("%1.%2").arg(layer_index).arg(QString::fromStdString(g.name));
        rows += QStringLiteral("<tr><td>%1</td><td>&nbsp;&nbsp;%2</td></tr>")
                    .arg(label.toHtmlEscaped(), QString::fromStdString(gemm_shape_text(g)).toHtmlEscaped());
    }
    return QStringLiteral("<b>GEMMs</b> per sample:<table>%1</table>").arg(rows);
}

}  // namespace mpwb
