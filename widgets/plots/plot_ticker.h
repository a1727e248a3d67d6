// UniformTicker: the tick labels of one axis in one notation. QCustomPlot's default labels pick
// a notation per tick ("750000" next to "1.75·10⁶"), which reads as two scales on one axis. This
// ticker looks at all the ticks of the visible range together and writes them the same way:
// plain numbers for moderate values, SI suffixes (750k, 1.75M) for large ones, and one
// scientific form (2.5e-05) for tiny ones, each with the decimals the tick step needs.
#pragma once
#include <QString>
#include <QVector>
#include <qcustomplot.h>

namespace mpwb {

class UniformTicker : public QCPAxisTicker {
public:
    // The labels of ticks spaced `step` apart, all in one notation (public for tests and reuse).
    static QVector<QString> labels(const QVector<double>& ticks, double step);

protected:
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar formatChar,
                                       int precision) override;
};

// The same labels on a log axis (1, 10, 100, 1k, 10k).
class UniformLogTicker : public QCPAxisTickerLog {
protected:
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar formatChar,
                                       int precision) override;
};

QSharedPointer<QCPAxisTicker> make_uniform_ticker();
QSharedPointer<QCPAxisTicker> make_uniform_log_ticker();

}  // namespace mpwb
