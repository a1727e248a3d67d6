// The run ids Open takes (app/gui/run_id_list.h): `mpwb --open-runs` with one id given 1,000
// times loaded 1,000 copies and kept the window busy past --quit-after; repeats now count once,
// and more than kMaxOpenRuns different runs are refused before anything loads.
#include <QtTest>

#include "app/gui/run_id_list.h"

using namespace mpwb;

class TestRunIdList : public QObject {
    Q_OBJECT

private slots:
    void repeatsCountOnceInTheirFirstPlace() {
        QCOMPARE(distinct_run_ids({7, 3, 7, 5, 3}), (QList<qint64>{7, 3, 5}));
        QStringList thousand;
        for (int i = 0; i < 1000; ++i) thousand << QStringLiteral("12");
        const OpenRunsArgument a = parse_open_runs(thousand.join(QLatin1Char(',')));
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
        QCOMPARE(a.ids, (QList<qint64>{12}));
        const OpenRunsArgument b = parse_open_runs(QStringLiteral(" 4, 2,,4 ,9"));
        QVERIFY2(b.problem.isEmpty(), qPrintable(b.problem));
        QCOMPARE(b.ids, (QList<qint64>{4, 2, 9}));
    }

    void moreThanTheLimitIsRefused() {
        QStringList ids;
        for (int i = 1; i <= kMaxOpenRuns; ++i) ids << QString::number(i);
        QCOMPARE(parse_open_runs(ids.join(QLatin1Char(','))).ids.size(), kMaxOpenRuns);
        ids << QString::number(kMaxOpenRuns + 1);
        const OpenRunsArgument a = parse_open_runs(ids.join(QLatin1Char(',')));
        QVERIFY(a.ids.isEmpty());
        QVERIFY2(a.problem.contains(QStringLiteral("names %1 runs").arg(kMaxOpenRuns + 1)),
                 qPrintable(a.problem));
        QVERIFY2(a.problem.contains(QStringLiteral("at most %1").arg(kMaxOpenRuns)), qPrintable(a.problem));
        QVERIFY2(a.value.size() < 50 && a.value.startsWith(QStringLiteral("1,2,3")), qPrintable(a.value));
    }

    void partsThatAreNoRunIdAreNamed() {
        for (const QString& bad : {QStringLiteral("0"), QStringLiteral("-3"), QStringLiteral("x"),
                                   QStringLiteral("99999999999999999999"), QStringLiteral("1.5")}) {
            const OpenRunsArgument a = parse_open_runs(QStringLiteral("4,") + bad);
            QCOMPARE(a.value, bad);
            QCOMPARE(a.problem, QStringLiteral("is not a run id (a positive whole number)"));
        }
        QCOMPARE(parse_open_runs(QStringLiteral(",,")).problem, QStringLiteral("names no run id"));
    }
};

QTEST_APPLESS_MAIN(TestRunIdList)
#include "test_run_id_list.moc"
