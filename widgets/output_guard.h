// The workbench's side of the rule that nothing it writes overwrites the run database it reads:
// the main window names its database once, and every file the widgets write (plot exports, a
// saved network) asks here first. The check itself is sessions' writes_into_database (device and
// inode, so a symlink, hard link or relative spelling of the database is caught too).
#pragma once
#include <QString>

namespace mpwb {

// The run database of this process; empty: none (nothing is guarded).
void set_guarded_database(const QString& db_path);

// Empty when `output` may be written; otherwise the sentence saying why not, naming the file.
QString output_refusal(const QString& output, const QString& what);

}  // namespace mpwb
