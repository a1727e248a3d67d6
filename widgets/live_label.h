// Labels that change many times a second while training (the scaler readout, the ETA) get a
// fixed size, wide enough for their widest text. A QLabel whose size may follow its text asks
// its parent for a relayout on every change; with a fixed size an update is a repaint of the
// label alone, which keeps the GUI thread's time per tick small.
#pragma once
#include <QLabel>
#include <QStringList>

#include <algorithm>

namespace mpwb {

inline void fix_label_size(QLabel* label, const QStringList& widest_texts) {
    const QFontMetrics fm(label->font());
    int width = 0;
    for (const QString& t : widest_texts) width = std::max(width, fm.horizontalAdvance(t));
    const QMargins m = label->contentsMargins();
    label->setFixedSize(width + m.left() + m.right() + 2 * label->margin() + 4,
                        std::max(label->sizeHint().height(), fm.height() + m.top() + m.bottom()));
}

}  // namespace mpwb
