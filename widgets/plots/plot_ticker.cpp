// UniformTicker: one notation for all the tick labels of an axis.
#include "widgets/plots/plot_ticker.h"

#include <algorithm>
#include <cmath>

namespace mpwb {
namespace {

enum class Notation { Plain, Si, Scientific };

// Decimals needed to tell apart ticks `step` apart once divided by `unit`.
int decimals_for(double step, double unit) {
    const double s = step / unit;
    if (!(s > 0) || !std::isfinite(s)) return 0;
    // The fewest decimals that write the step exactly (0.25 -> 2, 5 -> 0, 0.2 -> 1).
    for (int d = 0; d < 9; ++d) {
        const double scaled = s * std::pow(10.0, d);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
    }
    return 9;
}

// Trailing zeros of a fixed-point text removed ("1.50" -> "1.5", "2.00" -> "2").
QString trimmed_fixed(double v, int decimals) {
    QString s = QString::number(v, 'f', decimals);
    if (s.contains(QLatin1Char('.'))) {
        while (s.endsWith(QLatin1Char('0'))) s.chop(1);
        if (s.endsWith(QLatin1Char('.'))) s.chop(1);
    }
    if (s == QLatin1String("-0")) s = QStringLiteral("0");
    return s;
}

}  // namespace

QVector<QString> UniformTicker::labels(const QVector<double>& ticks, double step) {
    double largest = 0;
    for (double t : ticks) largest = std::max(largest, std::abs(t));
    const Notation notation = largest >= 1e4                    ? Notation::Si
                              : (largest > 0 && largest < 1e-3) ? Notation::Scientific
                                                                : Notation::Plain;
    QVector<QString> out;
    out.reserve(ticks.size());
    static const struct {
        double unit;
        const char* suffix;
    } kSi[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
    for (double t : ticks) {
        if (std::abs(t) < step * 1e-9) t = 0;  // -1.1e-16 is a zero tick
        switch (notation) {
            case Notation::Plain:
                out.append(trimmed_fixed(t, decimals_for(step, 1)));
                break;
            case Notation::Si: {
                const double a = std::abs(t);
                const auto* si = std::find_if(std::begin(kSi), std::end(kSi),
                                              [&](const auto& s) { return a >= s.unit * (1 - 1e-12); });
                if (si == std::end(kSi)) si = std::end(kSi) - 1;
                out.append(trimmed_fixed(t / si->unit, decimals_for(step, si->unit)) +
                           QLatin1String(si->suffix));
                break;
            }
            case Notation::Scientific: {
                const int mantissa_decimals =
                    std::clamp(static_cast<int>(std::ceil(std::log10(largest / step) - 1e-9)), 0, 6);
                out.append(t == 0 ? QStringLiteral("0") : QString::number(t, 'e', mantissa_decimals));
                break;
            }
        }
    }
    return out;
}

QVector<QString> UniformTicker::createLabelVector(const QVector<double>& ticks, const QLocale&, QChar, int) {
    double step = 0;
    for (int i = 1; i < ticks.size(); ++i) {
        const double d = std::abs(ticks[i] - ticks[i - 1]);
        if (d > 0) step = step > 0 ? std::min(step, d) : d;
    }
    if (step <= 0) step = ticks.isEmpty() ? 1 : std::max(std::abs(ticks.front()), 1e-300);
    return labels(ticks, step);
}

QVector<QString> UniformLogTicker::createLabelVector(const QVector<double>& ticks, const QLocale&, QChar,
                                                     int) {
    double smallest = 0;
    for (double t : ticks)
        if (t > 0) smallest = smallest > 0 ? std::min(smallest, t) : t;
    return UniformTicker::labels(ticks, smallest > 0 ? smallest : 1);
}

QSharedPointer<QCPAxisTicker> make_uniform_ticker() {
    return QSharedPointer<QCPAxisTicker>(new UniformTicker);
}
QSharedPointer<QCPAxisTicker> make_uniform_log_ticker() {
    return QSharedPointer<QCPAxisTicker>(new UniformLogTicker);
}

}  // namespace mpwb
