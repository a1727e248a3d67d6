// Output guard of the widgets (see output_guard.h).
#include "widgets/output_guard.h"

#include <QCoreApplication>

#include "sessions/file_identity.h"

namespace mpwb {
namespace {

QString& guarded_database() {
    static QString path;  // set once by the GUI thread before any export can be asked for
    return path;
}

}  // namespace

void set_guarded_database(const QString& db_path) { guarded_database() = db_path; }

QString output_refusal(const QString& output, const QString& what) {
    const QString& db = guarded_database();
    if (!writes_into_database(output.toStdString(), db.toStdString())) return {};
    return QCoreApplication::translate(
               "mpwb",
               "Cannot write %1 to %2: it is the run database %3 (or one of its files), "
               "which the workbench reads. Choose another file.")
        .arg(what, output, db);
}

}  // namespace mpwb
