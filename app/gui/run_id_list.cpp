// Run id lists for Open: repeats dropped in order, the count bounded before anything loads.
#include "app/gui/run_id_list.h"

#include <QSet>
#include <QStringList>

namespace mpwb {

QList<qint64> distinct_run_ids(const QList<qint64>& ids) {
    QList<qint64> out;
    QSet<qint64> seen;
    for (qint64 id : ids)
        if (!seen.contains(id)) {
            seen.insert(id);
            out << id;
        }
    return out;
}

OpenRunsArgument parse_open_runs(const QString& text) {
    constexpr int kQuotedChars = 40;  // of a long list in the message
    OpenRunsArgument result;
    QList<qint64> ids;
    for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong id = part.trimmed().toLongLong(&ok);  // refuses text beyond int64
        if (!ok || id < 1) {
            result.value = part;
            result.problem = QStringLiteral("is not a run id (a positive whole number)");
            return result;
        }
        ids << id;
    }
    result.ids = distinct_run_ids(ids);
    if (result.ids.isEmpty()) {
        result.value = text;
        result.problem = QStringLiteral("names no run id");
    } else if (result.ids.size() > kMaxOpenRuns) {
        result.value = text.size() > kQuotedChars ? text.left(kQuotedChars) + QStringLiteral("…") : text;
        result.problem = QStringLiteral("names %1 runs; the workbench shows at most %2 together")
                             .arg(result.ids.size())
                             .arg(kMaxOpenRuns);
        result.ids.clear();
    }
    return result;
}

}  // namespace mpwb
