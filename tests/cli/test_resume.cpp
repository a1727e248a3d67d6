// Tests of checkpoint and resume through the built mpwb-cli, as Slurm's preemption uses it: a
// run held after step 100 (the hidden --hold-after-step hook, so it is certainly still going at
// any machine speed) gets SIGTERM, checkpoints, ends INTERRUPTED with exit status 75, and
// `train --resume` continues it to a FINISHED run whose final weights digest equals an
// uninterrupted run's, with every step recorded once; a run killed outright resumes from its
// newest checkpoint, its later rows trimmed. Ctrl-C (SIGINT) still stops (STOPPED), and
// resuming a FINISHED run, an unknown run or with a setting that would change the run is refused
// by name. A damaged newest checkpoint (a right checksum over an Adam state without second
// moments) is refused by name and the run goes on from the one before; with every checkpoint
// damaged the run stays INTERRUPTED. A resume on changed data is refused naming both digests
// unless --allow-changed-data; a resume never creates a database; the loser of two resumes is
// told which process has the run; a run without checkpoints still has its final weights digest.
// The tests wait on the database's state (bounded polls), never on time.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <signal.h>

#include "core/train/checkpoint_state.h"
#include "program_runner.h"
#include "tests/cli/held_run.h"
#include "sessions/run_store.h"
#include "tests/train/optimizer_blob.h"

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

// The run's checkpoints as stored, (step, state), newest first, read behind the store's back.
std::vector<std::pair<std::int64_t, std::vector<uint8_t>>> stored_checkpoints(const QString& db,
                                                                              std::int64_t run) {
    std::vector<std::pair<std::int64_t, std::vector<uint8_t>>> rows;
    sqlite3* handle = nullptr;
    sqlite3_stmt* select = nullptr;
    if (sqlite3_open(db.toUtf8().constData(), &handle) == SQLITE_OK &&
        sqlite3_prepare_v2(handle, "SELECT step, state FROM checkpoints WHERE run_id=? ORDER BY step DESC",
                           -1, &select, nullptr) == SQLITE_OK &&
        sqlite3_bind_int64(select, 1, run) == SQLITE_OK) {
        while (sqlite3_step(select) == SQLITE_ROW) {
            const auto* bytes = static_cast<const uint8_t*>(sqlite3_column_blob(select, 1));
            rows.emplace_back(sqlite3_column_int64(select, 0),
                              std::vector<uint8_t>(bytes, bytes + sqlite3_column_bytes(select, 1)));
        }
    }
    sqlite3_finalize(select);
    sqlite3_close(handle);
    return rows;
}

// Replaces the state of the run's checkpoint at `step`, behind the store's back.
bool set_checkpoint_state(const QString& db, std::int64_t run, std::int64_t step,
                          const std::vector<uint8_t>& state) {
    sqlite3* handle = nullptr;
    bool done = sqlite3_open(db.toUtf8().constData(), &handle) == SQLITE_OK;
    sqlite3_stmt* update = nullptr;
    done = done && sqlite3_prepare_v2(handle, "UPDATE checkpoints SET state=? WHERE run_id=? AND step=?", -1,
                                      &update, nullptr) == SQLITE_OK;
    done = done && sqlite3_bind_blob(update, 1, state.data(), static_cast<int>(state.size()),
                                     SQLITE_TRANSIENT) == SQLITE_OK;
    done = done && sqlite3_bind_int64(update, 2, run) == SQLITE_OK &&
           sqlite3_bind_int64(update, 3, step) == SQLITE_OK;
    done = done && sqlite3_step(update) == SQLITE_DONE && sqlite3_changes(handle) == 1;
    sqlite3_finalize(update);
    sqlite3_close(handle);
    return done;
}

// The damage: a right checksum over an Adam state whose third parameter has first
// moments but no second moments.
std::vector<uint8_t> without_second_moments(const std::vector<uint8_t>& state) {
    mpwb::CheckpointState decoded = mpwb::decode_checkpoint_state(state);
    mpwb::test::OptimizerBlob optimizer(decoded.engine.optimizer);
    optimizer.entries.at(2).b.clear();
    decoded.engine.optimizer = optimizer.bytes();
    return mpwb::encode_checkpoint_state(decoded);
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

    // A damaged newest checkpoint is refused by name (the checkpoint, the parameter, the
    // numbers) and the run goes on from the one before; when every checkpoint is damaged the
    // resume fails and the run stays INTERRUPTED with its checkpoints, nothing trimmed.
    void damagedCheckpointIsRefusedAndTheOneBeforeResumes() {
        const QString db = fresh();
        std::int64_t run = 0;
        const auto killed = interrupt_held_run(spiral_run(db), db, 100, SIGTERM, &run);
        QVERIFY2(killed.exit_code == kExitResumable, killed.err.constData());
        const auto kept = stored_checkpoints(db, run);
        QCOMPARE(kept.size(), std::size_t(2));
        QCOMPARE(kept[0].first, std::int64_t{100});
        QCOMPARE(kept[1].first, std::int64_t{75});
        for (const auto& [step, state] : kept)
            QVERIFY(set_checkpoint_state(db, run, step, without_second_moments(state)));
        const QStringList resume = {"train", "--resume", QString::number(run), "--db",
                                    db,      "--quiet",  "--backend",          "cpu"};
        const auto refused = run_program(kCli, resume);
        QCOMPARE(refused.exit_code, 1);
        const QByteArray where =
            "run " + QByteArray::number(static_cast<qint64>(run)) + ", checkpoint at step ";
        QVERIFY2(refused.err.contains(where + "100 (row"), refused.err.constData());
        QVERIFY2(refused.err.contains(where + "75 (row"), refused.err.constData());
        QVERIFY2(refused.err.contains(
                     "section OPTM: optimizer state of parameter 2 (2 Linear weight) holds a first "
                     "moment of 4096 values and no second moment after 100 updates"),
                 refused.err.constData());
        {
            auto store = read_only_store(db);
            QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Interrupted);
            QCOMPARE(store.latest_checkpoint(run)->step, std::int64_t{100});
        }
        QVERIFY(set_checkpoint_state(db, run, 75, kept[1].second));
        const auto resumed = run_program(kCli, resume);
        QVERIFY2(resumed.exit_code == 0, resumed.err.constData());
        QVERIFY2(resumed.err.contains("going on from the checkpoint at step 75 instead"),
                 resumed.err.constData());
        auto store = read_only_store(db);
        QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Finished);
        QCOMPARE(store.series(run, "train_loss").size(), std::size_t(300));
        const QString reference_db = fresh();
        const auto reference = run_program(kCli, spiral_run(reference_db) + QStringList{"--json"});
        QVERIFY2(reference.exit_code == 0, reference.err.constData());
        QCOMPARE(final_digest(db, run),
                 final_digest(reference_db, parse_object(reference.out)["run_id"].toInteger()));
    }

    // Same rows, other values: the resume is refused naming both digests and the file, unless
    // --allow-changed-data, which warns and records a data_changed event.
    void resumeOnChangedDataIsRefusedUnlessAllowed() {
        const QString csv = dir_.filePath("table.csv");
        const auto write_table = [&](int shift) {
            std::ofstream out(csv.toStdString());
            out << "a,b,label\n";
            for (int i = 0; i < 200; ++i)
                out << (i + shift) % 13 << "," << (i % 7) * 10 << "," << (i % 2) << "\n";
        };
        write_table(0);
        const QString db = fresh();
        const QStringList train = {"train",      "--preset",
                                   "spiral-mlp", "--dataset",
                                   "csv",        "--data-path",
                                   csv,          "--max-steps",
                                   "40",         "--checkpoint-every",
                                   "5",          "--backend",
                                   "cpu",        "--quiet",
                                   "--db",       db};
        std::int64_t run = 0;
        const auto killed = interrupt_held_run(train, db, 10, SIGTERM, &run);
        QVERIFY2(killed.exit_code == kExitResumable, killed.err.constData());
        write_table(1);
        const QStringList resume = {"train", "--resume", QString::number(run), "--db", db, "--quiet"};
        const auto refused = run_program(kCli, resume);
        QCOMPARE(refused.exit_code, 1);
        QVERIFY2(refused.err.contains("the data changed since the run trained on it") &&
                     refused.err.contains(csv.toUtf8()) && refused.err.contains("--allow-changed-data"),
                 refused.err.constData());
        QCOMPARE(read_only_store(db).get_run(run).status, mpwb::RunStatus::Interrupted);
        const auto allowed = run_program(kCli, resume + QStringList{"--allow-changed-data"});
        QVERIFY2(allowed.exit_code == 0, allowed.err.constData());
        QVERIFY2(allowed.err.contains("warning: the data changed since the run trained on it"),
                 allowed.err.constData());
        auto store = read_only_store(db);
        QCOMPARE(store.get_run(run).status, mpwb::RunStatus::Finished);
        QCOMPARE(store.events(run, "data_changed").size(), std::size_t(1));
        const auto changed =
            run_program(kCli, {"train", "--preset", "spiral-mlp", "--allow-changed-data", "--db", db});
        QVERIFY2(changed.exit_code == 1 && changed.err.contains("--allow-changed-data applies to --resume"),
                 changed.err.constData());
    }

    // A resume opens an existing database only: a mistyped --db is an error and leaves no file.
    void resumeNeverCreatesADatabase() {
        const QString typo = dir_.filePath("typo.sqlite");
        const auto r = run_program(kCli, {"train", "--resume", "1", "--db", typo, "--quiet"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("does not exist"), r.err.constData());
        QVERIFY(!QFile::exists(typo));
    }

    // While one process resumes a run, another resume is told which process has it, and not to
    // use --no-store (which --resume refuses).
    void secondResumeIsToldWhoHasTheRun() {
        const QString db = fresh();
        std::int64_t run = 0;
        const auto killed = interrupt_held_run(spiral_run(db), db, 50, SIGTERM, &run);
        QVERIFY2(killed.exit_code == kExitResumable, killed.err.constData());
        QProcess first;
        first.start(kCli, {"train", "--resume", QString::number(run), "--db", db, "--quiet", "--backend",
                           "cpu", "--hold-after-step", "60"});
        QVERIFY(first.waitForStarted(60000));
        QVERIFY(wait_until_held(db, first, 60));
        const auto second =
            run_program(kCli, {"train", "--resume", QString::number(run), "--db", db, "--quiet"});
        const qint64 first_pid = first.processId();
        ::kill(static_cast<pid_t>(first_pid), SIGTERM);
        QVERIFY(first.waitForFinished(300000));
        QCOMPARE(first.exitCode(), kExitResumable);
        QCOMPARE(second.exit_code, 1);
        QVERIFY2(second.err.contains("process " + QByteArray::number(first_pid)), second.err.constData());
        QVERIFY2(!second.err.contains("--no-store"), second.err.constData());
    }

    // A FINISHED run that kept no checkpoint has the digest of the weights it ended with, the
    // same as the run that kept checkpoints.
    void runWithoutCheckpointsHasItsFinalWeightsDigest() {
        const QString db = fresh();
        QStringList plain = spiral_run(db, 30);
        plain.removeAt(plain.indexOf("--checkpoint-every") + 1);
        plain.removeAll("--checkpoint-every");
        const auto without = run_program(kCli, plain + QStringList{"--json"});
        QVERIFY2(without.exit_code == 0, without.err.constData());
        const auto with = run_program(kCli, spiral_run(db, 30) + QStringList{"--json"});
        QVERIFY2(with.exit_code == 0, with.err.constData());
        const auto id = parse_object(without.out)["run_id"].toInteger();
        QVERIFY(!read_only_store(db).latest_checkpoint(id));
        const QString digest = final_digest(db, id);
        QVERIFY2(digest.size() == 16, qPrintable(digest));
        QCOMPARE(digest, final_digest(db, parse_object(with.out)["run_id"].toInteger()));
    }
};

QTEST_GUILESS_MAIN(TestResume)
#include "test_resume.moc"
