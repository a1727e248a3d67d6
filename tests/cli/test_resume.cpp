// Tests of checkpoint and resume through the built mpwb-cli, as Slurm's preemption uses it: a
// run held after step 100 (the hidden --hold-after-step hook, so it is certainly still going at
// any machine speed) gets SIGTERM, checkpoints, ends INTERRUPTED with exit status 75, and
// `train --resume` continues it to a FINISHED run whose final weights digest equals an
// uninterrupted run's, with every step recorded once; a run killed outright resumes from its
// newest checkpoint, its later rows trimmed. Ctrl-C (SIGINT) still stops (STOPPED), and
// resuming a FINISHED run, an unknown run or with a setting that would change the run is refused
// by name. The tests wait on the database's state (bounded polls), never on time.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <optional>
#include <signal.h>

#include "program_runner.h"
#include "sessions/run_store.h"

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
constexpr int kExitResumable = 75;

QStringList spiral_run(const QString& db, int steps = 300) {
    return {"train",
            "--preset",
            "spiral-mlp",
            "--max-steps",
            QString::number(steps),
            "--checkpoint-every",
            "25",
            "--backend",
            "cpu",
            "--quiet",
            "--db",
            db};
}

QJsonObject parse_object(const QByteArray& text) {
    const auto doc = QJsonDocument::fromJson(text);
    return doc.isObject() ? doc.object() : QJsonObject{};
}

mpwb::RunStore read_only_store(const QString& db) {
    mpwb::RunStore::Options o;
    o.read_only = true;
    o.create = false;
    return mpwb::RunStore(db.toStdString(), o);
}

// The one run of the database once it holds after `step` steps: its "paused" event and an
// earlier checkpoint are committed (the trainer holds before it takes the step's own). Polls the file a
// bounded number of times; nullopt when that never happened (or the program ended first).
std::optional<std::int64_t> wait_until_held(const QString& db, QProcess& program, std::int64_t step) {
    for (int poll = 0; poll < 1200; ++poll) {
        // The pause between polls, which also notices a program that ended (and then returns
        // false at once, so the state is checked too).
        if (program.waitForFinished(100) || program.state() == QProcess::NotRunning) break;
        try {
            auto store = read_only_store(db);
            const auto runs = store.list_runs();
            if (runs.size() != 1) continue;
            const auto paused = store.events(runs[0].id, "paused");
            if (!paused.empty() && paused.back().step == step && store.latest_checkpoint(runs[0].id))
                return runs[0].id;
        } catch (const mpwb::StoreError&) {
            // Not created yet, or busy: poll again.
        }
    }
    return std::nullopt;
}

// Starts `args`, waits until it holds after `hold` steps, sends `signal` and returns its result.
ProgramResult interrupt_held_run(const QStringList& args, const QString& db, std::int64_t hold, int signal,
                                 std::int64_t* run_id) {
    QProcess p;
    p.start(kCli, args + QStringList{"--hold-after-step", QString::number(hold)});
    ProgramResult r;
    if (!p.waitForStarted(60000)) return r;
    const auto run = wait_until_held(db, p, hold);
    if (run) {
        *run_id = *run;
        ::kill(static_cast<pid_t>(p.processId()), signal);
    } else {
        p.kill();
    }
    r.finished = p.waitForFinished(300000);
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString final_digest(const QString& db, std::int64_t run) {
    const auto r = run_program(kCli, {"runs", "show", QString::number(run), "--json", "--db", db});
    if (r.exit_code != 0) return "runs show failed: " + QString::fromUtf8(r.err);
    return parse_object(r.out)["final_weights_digest"].toString();
}

}  // namespace

class TestResume : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    QString fresh() { return dir_.filePath(QString("runs_%1.sqlite").arg(++n_)); }

private slots:
    void sigtermCheckpointsAndResumeMatchesAnUninterruptedRun() {
        const QString db = fresh();
        std::int64_t run = 0;
        const auto killed = interrupt_held_run(spiral_run(db), db, 100, SIGTERM, &run);
        QVERIFY2(run > 0, killed.err.constData());
        QVERIFY2(killed.exit_code == kExitResumable, killed.err.constData());
        QVERIFY(killed.err.contains("--resume"));
        {
            auto store = read_only_store(db);
            QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Interrupted);
            QCOMPARE(store.latest_checkpoint(run)->step, std::int64_t{100});
            // Nothing after the hold was trained.
            QCOMPARE(store.series(run, "train_loss").back().step, std::int64_t{100});
        }
        const auto resumed = run_program(kCli, {"train", "--resume", QString::number(run), "--db", db,
                                                "--quiet", "--json", "--backend", "cpu"});
        QVERIFY2(resumed.exit_code == 0, resumed.err.constData());
        QCOMPARE(parse_object(resumed.out)["run_id"].toInteger(), static_cast<qint64>(run));

        const QString reference_db = fresh();
        const auto reference = run_program(kCli, spiral_run(reference_db) + QStringList{"--json"});
        QVERIFY2(reference.exit_code == 0, reference.err.constData());
        const auto reference_run = parse_object(reference.out)["run_id"].toInteger();

        auto store = read_only_store(db);
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Finished);
        const QString digest = final_digest(db, run);
        QVERIFY2(digest.size() >= 16, qPrintable(digest));
        QCOMPARE(digest, final_digest(reference_db, reference_run));
        // Every step once, 1..300, in every training series.
        for (const char* key : {"train_loss", "lr", "loss_scale"}) {
            const auto points = store.series(run, key);
            QCOMPARE(points.size(), std::size_t(300));
            for (std::size_t i = 0; i < points.size(); ++i)
                QCOMPARE(points[i].step, static_cast<std::int64_t>(i + 1));
        }
        // Bundles carry no checkpoints; the digest travels in the run's summary.
        const QString bundle = dir_.filePath("resumed.mpwb"), imported_db = fresh();
        QCOMPARE(run_program(kCli, {"runs", "export", QString::number(run), "--out", bundle, "--db", db})
                     .exit_code,
                 0);
        QCOMPARE(run_program(kCli, {"runs", "import", bundle, "--db", imported_db}).exit_code, 0);
        QVERIFY(!read_only_store(imported_db).latest_checkpoint(1));
        QCOMPARE(final_digest(imported_db, 1), digest);
        // The resumed losses are the uninterrupted run's, bit for bit.
        auto reference_store = read_only_store(reference_db);
        const auto resumed_loss = store.series(run, "train_loss");
        const auto reference_loss = reference_store.series(reference_run, "train_loss");
        QCOMPARE(resumed_loss.size(), reference_loss.size());
        for (std::size_t i = 0; i < resumed_loss.size(); ++i)
            QCOMPARE(resumed_loss[i].value, reference_loss[i].value);
    }

    // A run killed outright (SIGKILL, a node lost) stays RUNNING with rows past its newest
    // checkpoint (75, held after 100); the resume trims them and still ends like the reference.
    void killedRunResumesFromItsNewestCheckpoint() {
        const QString db = fresh();
        std::int64_t run = 0;
        const auto killed = interrupt_held_run(spiral_run(db), db, 100, SIGKILL, &run);
        QVERIFY2(run > 0, killed.err.constData());
        QCOMPARE(killed.exit_code, -1);
        {
            auto store = read_only_store(db);
            QCOMPARE(store.latest_checkpoint(run)->step, std::int64_t{75});
            QCOMPARE(store.series(run, "train_loss").back().step, std::int64_t{100});
        }
        const auto resumed =
            run_program(kCli, {"train", "--resume", QString::number(run), "--db", db, "--quiet"});
        QVERIFY2(resumed.exit_code == 0, resumed.err.constData());
        auto store = read_only_store(db);
        QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Finished);
        const auto points = store.series(run, "train_loss");
        QCOMPARE(points.size(), std::size_t(300));
        for (std::size_t i = 0; i < points.size(); ++i)
            QCOMPARE(points[i].step, static_cast<std::int64_t>(i + 1));
        QCOMPARE(store.get_run(run).latest.at("train_loss").count, std::int64_t{300});
        const QString reference_db = fresh();
        const auto reference = run_program(kCli, spiral_run(reference_db) + QStringList{"--json"});
        QVERIFY2(reference.exit_code == 0, reference.err.constData());
        QCOMPARE(final_digest(db, run),
                 final_digest(reference_db, parse_object(reference.out)["run_id"].toInteger()));
    }

    void ctrlCStillStops() {
        const QString db = fresh();
        std::int64_t run = 0;
        const auto stopped = interrupt_held_run(spiral_run(db), db, 50, SIGINT, &run);
        QVERIFY2(run > 0, stopped.err.constData());
        QVERIFY2(stopped.exit_code == 0, stopped.err.constData());
        auto store = read_only_store(db);
        QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Stopped);
        QCOMPARE(store.series(run, "train_loss").back().step, std::int64_t{50});
    }

    void resumeRefusesWhatItCannotContinue() {
        const QString db = fresh();
        const auto finished = run_program(kCli, spiral_run(db, 30) + QStringList{"--json"});
        QVERIFY2(finished.exit_code == 0, finished.err.constData());
        const QString id = QString::number(parse_object(finished.out)["run_id"].toInteger());
        const auto again = run_program(kCli, {"train", "--resume", id, "--db", db, "--quiet"});
        QCOMPARE(again.exit_code, 1);
        QVERIFY2(again.err.contains("run " + id.toUtf8() + " is FINISHED"), again.err.constData());
        const auto unknown = run_program(kCli, {"train", "--resume", "999", "--db", db, "--quiet"});
        QCOMPARE(unknown.exit_code, 1);
        QVERIFY2(unknown.err.contains("run 999 does not exist"), unknown.err.constData());
        const auto changed = run_program(kCli, {"train", "--resume", id, "--db", db, "--lr", "0.5"});
        QCOMPARE(changed.exit_code, 1);
        QVERIFY2(changed.err.contains("--lr cannot be used with --resume"), changed.err.constData());
        // Refusals leave the run as it was.
        QCOMPARE(read_only_store(db).get_run(id.toLongLong()).status, mpwb::RunStatus::Finished);
    }
};

QTEST_GUILESS_MAIN(TestResume)
#include "test_resume.moc"
