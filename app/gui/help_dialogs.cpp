// The Help menu's texts and dialogs: About, keyboard shortcuts, the documentation's place.
#include "app/gui/help_dialogs.h"

#include <QAction>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenu>
#include <QTableWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cblas.h>
#include <functional>
#include <set>

#include "sessions/run_recorder.h"

#ifndef MPWB_VERSION
#define MPWB_VERSION "unknown"
#endif

namespace mpwb {

QStringList library_versions() {
    const nlohmann::json v = RunRecorder::versions();  // what every recorded run stores
    const auto text = [&](const char* key) {
        return v.contains(key) && v[key].is_string() ? QString::fromStdString(v[key].get<std::string>())
                                                     : QObject::tr("unknown");
    };
    QStringList lines = {
        QStringLiteral("Qt %1 (built with %2)")
            .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR)),
        QStringLiteral("QCustomPlot %1").arg(QStringLiteral(QCUSTOMPLOT_VERSION_STR)),
        QStringLiteral("SQLite %1").arg(text("sqlite")),
        QString::fromLatin1(openblas_get_config()).trimmed(),
        QStringLiteral("nlohmann-json %1").arg(text("json")),
        QStringLiteral("Compiler: %1").arg(text("compiler")),
    };
#ifdef MPWB_CUDA_TOOLKIT_VERSION
    lines << QStringLiteral("CUDA %1 (the GPU module, loaded when a GPU is present)")
                 .arg(QStringLiteral(MPWB_CUDA_TOOLKIT_VERSION));
#else
    lines << QObject::tr("CUDA: not built (CPU only)");
#endif
    return lines;
}

QString about_text(const QString& device) {
    QString libraries;
    for (const QString& line : library_versions())
        libraries += QStringLiteral("<li>%1</li>").arg(line.toHtmlEscaped());
    return QObject::tr(
               "<h3>MP Workbench %1</h3>"
               "<p>Mixed-precision training, watched step by step: loss scaling, formats, "
               "gradients that underflow or overflow.</p>"
               "<p>Licence: GNU GPL version 3 or later (as QCustomPlot requires).</p>"
               "<p>Device: %2</p><p>Libraries:</p><ul>%3</ul>")
        .arg(QStringLiteral(MPWB_VERSION), device.toHtmlEscaped(), libraries);
}

QList<QAction*> menu_actions(const QList<QAction*>& menu_bar_actions) {
    QList<QAction*> out;
    std::set<QAction*> seen;
    std::function<void(const QList<QAction*>&)> walk = [&](const QList<QAction*>& actions) {
        for (QAction* a : actions) {
            if (a->isSeparator() || !seen.insert(a).second) continue;
            if (QMenu* sub = a->menu())
                walk(sub->actions());
            else
                out << a;
        }
    };
    walk(menu_bar_actions);
    return out;
}

std::vector<ShortcutRow> shortcut_rows(const QList<QAction*>& actions) {
    std::vector<ShortcutRow> rows;
    for (QAction* a : actions) {
        if (a->shortcuts().isEmpty()) continue;
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        QString name = a->text();
        name.remove(QLatin1Char('&')).remove(QStringLiteral("…"));
        rows.push_back({name.trimmed(), keys.join(QStringLiteral(", "))});
    }
    return rows;
}

QDialog* make_shortcuts_dialog(const std::vector<ShortcutRow>& rows, QWidget* parent) {
    auto* dialog = new QDialog(parent);
    dialog->setObjectName(QStringLiteral("shortcutsDialog"));
    dialog->setWindowTitle(QObject::tr("Keyboard shortcuts"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto* table = new QTableWidget(int(rows.size()), 2, dialog);
    table->setObjectName(QStringLiteral("shortcutTable"));
    table->setHorizontalHeaderLabels({QObject::tr("Action"), QObject::tr("Shortcut")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table->horizontalHeader()->setStretchLastSection(true);
    for (int r = 0; r < int(rows.size()); ++r) {
        table->setItem(r, 0, new QTableWidgetItem(rows[size_t(r)].action));
        table->setItem(r, 1, new QTableWidgetItem(rows[size_t(r)].shortcuts));
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    auto* column = new QVBoxLayout(dialog);
    column->addWidget(table, 1);
    column->addWidget(buttons);
    dialog->resize(460, 360);
    return dialog;
}

QString documentation_folder() {
    const QString installed =
        QDir(QCoreApplication::applicationDirPath()).absoluteFilePath(QStringLiteral("../share/doc/mpwb"));
    for (const QString& folder : {installed, QStringLiteral(MPWB_SOURCE_DIR)})
        if (QFileInfo::exists(QDir(folder).filePath(QStringLiteral("README.md"))))
            return QDir(folder).canonicalPath();
    // The package's folder holds at least its copyright and changelog.
    return QFileInfo(installed).isDir() ? QDir(installed).canonicalPath() : QString();
}

}  // namespace mpwb
