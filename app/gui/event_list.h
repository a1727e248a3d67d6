// EventList: the Events dock. A table of the runs' events (run, step, kind, source, readable
// detail; the recorded JSON in the detail's tooltip) with two filters, by kind and by run, that
// hide rows as events arrive. The filters offer the kinds and runs the list has seen. The list
// keeps the newest rows only (the run store keeps them all).
#pragma once
#include <QString>
#include <QWidget>

#include <cstdint>

class QComboBox;
class QTableWidget;

namespace mpwb {

class EventList : public QWidget {
    Q_OBJECT
public:
    explicit EventList(QWidget* parent = nullptr);

    // text: the readable line (event_text); json: the recorded detail, shown as its tooltip.
    void addEvent(const QString& run, int64_t step, const QString& kind, const QString& source,
                  const QString& text, const QString& json);
    // Removes every row and the filters' choices but the chosen ones.
    void clear();
    // Collects many addEvent calls into one repaint; the newest row is scrolled to at the end.
    void beginBatch();
    void endBatch();

    QTableWidget* table() const { return table_; }
    QComboBox* kindFilter() const { return kind_filter_; }
    QComboBox* runFilter() const { return run_filter_; }
    // Rows the filters let through.
    int visibleRowCount() const;

private:
    bool shown(int row) const;
    void applyFilters();
    static void offer(QComboBox* filter, const QString& value);

    QTableWidget* table_ = nullptr;
    QComboBox* kind_filter_ = nullptr;
    QComboBox* run_filter_ = nullptr;
};

}  // namespace mpwb
