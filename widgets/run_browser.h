// RunBrowser: the table of runs in a RunStore (the SQLite run database): filter by text,
// precision, dataset, status and tag; rename, tag, annotate, delete (soft, with confirmation)
// and restore; open runs (their curves overlay), train again with a run's settings, or ask for
// a comparison report of several. The list comes from
// list_runs, whose latest-metrics summary means it never scans a metric series. A database
// that is locked, corrupt or written by a newer version is explained in the widget.
#pragma once
#include <QList>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "sessions/run_types.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;

namespace mpwb {

class RunStore;

class RunBrowser : public QWidget {
    Q_OBJECT
public:
    explicit RunBrowser(QWidget* parent = nullptr);
    ~RunBrowser() override;

    // Opens (or creates) the database; on failure the widget shows the StoreError's message
    // and returns false.
    bool setDatabase(const QString& path);
    QString databasePath() const { return path_; }
    // Re-reads the list with the current filter, keeping the selection where it can.
    void refresh();
    // Empty when the database opened and the last query worked.
    QString errorText() const { return error_; }

    int rowCount() const;
    qint64 runIdAt(int row) const;
    QList<qint64> selectedRunIds() const;
    void selectRuns(const QList<qint64>& ids);

    // The actions, without dialogs (the buttons call these after asking). Each returns false
    // and shows the message when the store refuses.
    bool renameRun(qint64 id, const QString& name);
    bool tagRun(qint64 id, const QString& expression);  // "key" or "key=value"
    bool untagRun(qint64 id, const QString& key);
    bool setRunNote(qint64 id, const QString& note);
    bool deleteRuns(const QList<qint64>& ids);
    bool restoreRuns(const QList<qint64>& ids);
    // Soft-deleted runs only (the trash) when on.
    void setShowDeleted(bool on);
    // Why Resume is disabled for the selection (empty when it is enabled).
    QString resumeBlockReason() const;

signals:
    // "Open" (or a double-click): show the runs; the app loads the first one's settings.
    void openRunsRequested(const QList<qint64>& ids);
    // "Train again": start a new run with this run's network and settings.
    void trainAgainRequested(qint64 id);
    void compareRequested(const QList<qint64>& ids);
    void reportRequested(const QList<qint64>& ids);
    // "Export for PyTorch…" (context menu): the run's final weights and an nn.Sequential script.
    void pytorchExportRequested(qint64 id);
    // "Hyperparameters": the selected runs in the hyperparameter view.
    void hparamsRequested(const QList<qint64>& ids);
    // "Resume": continue an INTERRUPTED run from its newest checkpoint.
    void resumeRequested(qint64 id);
    void selectionChanged(const QList<qint64>& ids);

private:
    QLayout* makeFilterBar();
    QWidget* makeTablePane();
    QWidget* makeDetailsPane();
    void onSelectionChanged();
    void showContextMenu(const QPoint& at);
    void onDeleteClicked();
    void onRestoreClicked();
    void onRenameClicked();
    void onTagClicked();
    void onUntagClicked();
    void onSaveNoteClicked();
    void onFilterChanged();
    void refillChoices();
    void setError(const QString& message);
    void fillRow(int row, const Run& run);
    RunFilter currentFilter() const;

    std::unique_ptr<RunStore> store_;
    QString path_;
    QString error_;
    bool filling_ = false;
    std::vector<Run> runs_;

    QLineEdit* text_filter_ = nullptr;
    QComboBox* precision_filter_ = nullptr;
    QComboBox* dataset_filter_ = nullptr;
    QComboBox* status_filter_ = nullptr;
    QLineEdit* tag_filter_ = nullptr;
    QCheckBox* show_deleted_ = nullptr;
    QTableWidget* table_ = nullptr;
    QLabel* error_label_ = nullptr;
    QLabel* count_label_ = nullptr;
    QPushButton* open_ = nullptr;
    QPushButton* train_again_ = nullptr;
    QPushButton* compare_ = nullptr;
    QPushButton* report_ = nullptr;
    QPushButton* hparams_ = nullptr;
    QPushButton* resume_ = nullptr;
    QPushButton* delete_ = nullptr;
    QPushButton* restore_ = nullptr;
    QLineEdit* name_edit_ = nullptr;
    QPushButton* rename_ = nullptr;
    QLineEdit* tag_edit_ = nullptr;
    QPushButton* tag_ = nullptr;
    QPushButton* untag_ = nullptr;
    QPlainTextEdit* note_ = nullptr;
    QPushButton* save_note_ = nullptr;
    QLabel* details_ = nullptr;
};

}  // namespace mpwb
