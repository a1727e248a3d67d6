// The Help menu's contents: the About text (version, licence, the libraries and their versions),
// the keyboard-shortcut list read from the window's own actions (so it never disagrees with
// them), and where the local documentation is (installed, or the source tree's).
#pragma once
#include <QList>
#include <QString>
#include <QStringList>

#include <vector>

class QAction;
class QDialog;
class QWidget;

namespace mpwb {

// The About box's text (HTML). device: the device line the status bar shows.
QString about_text(const QString& device);
// "Library version" lines: Qt, QCustomPlot, SQLite, OpenBLAS, nlohmann-json, CUDA when built.
QStringList library_versions();

// One row per action that has a shortcut, in the order given (menus in menu-bar order).
struct ShortcutRow {
    QString action;     // the action's text without '&' and '…'
    QString shortcuts;  // its shortcuts in the platform's spelling, ", "-separated
};
std::vector<ShortcutRow> shortcut_rows(const QList<QAction*>& actions);
// Every action of the menus of a menu bar, submenus included, each once.
QList<QAction*> menu_actions(const QList<QAction*>& menu_bar_actions);
// A non-modal dialog (deleted on close) with the shortcut table (object name "shortcutTable").
QDialog* make_shortcuts_dialog(const std::vector<ShortcutRow>& rows, QWidget* parent);

// The folder holding README.md: the installed documentation next to the program
// (../share/doc/mpwb), else the source tree the program was built from, else the installed
// folder without it; empty when none is there.
QString documentation_folder();

}  // namespace mpwb
