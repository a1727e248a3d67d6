// Tests of `mpwb-cli sweep` through the built binary: the plan table and JSON, a local sweep of
// four tiny spiral runs two at a time into one database (one sweep with its spec, the progress
// events), a task preempted with SIGTERM that continues its own run when started again, collect
// of two task databases into one sweep (twice: nothing is imported twice, the files are never
// changed), hostile task databases refused by name while the good one is collected, and bad
// specs refused with the file, the field and the problem. Issue 24: a sweep's tasks train the
// stored spec even when the file is edited mid-sweep; SIGHUP and SIGKILL to `sweep run` end its
// tasks (checkpointed, no orphan, no file left behind); a task's status is the store's. Runs are
// bounded by max_steps, and tasks held by the hidden --hold-after-step are waited for by their
// state in the database; nothing here depends on the machine's speed.
#include <sys/prctl.h>
#include <sys/wait.h>

#include <csignal>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "../sessions/test_support.h"
#include "program_runner.h"
#include "sessions/run_store.h"

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");

ProgramResult run_cli(const QStringList& args) { return run_program(kCli, args); }

// Four tiny spiral runs: 2 learning rates x 2 precisions, 20 steps each.
const char* kTinySpec = R"({"name": "tiny", "preset": "spiral-mlp",
  "training": {"max_steps": 20, "dataset": {"samples": 200}},
  "axes": [{"setting": "lr", "values": [0.01, 0.003]},
           {"setting": "precision", "values": ["fp32", "bf16-mixed"]}]})";

// The same with a uuid, as `sweep slurm` writes it for its tasks.
const char* kTaskSpec =
    R"({"name": "tasks", "uuid": "6f1c2a3b-0d4e-4f50-8a61-7b8c9d0e1f2a", "preset": "spiral-mlp",
  "training": {"max_steps": 30, "dataset": {"samples": 200}},
  "axes": [{"setting": "seed", "values": [1, 2, 3]}]})";

QByteArray file_bytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Three tiny runs that hold after step 5 under `sweep run --hold-after-step 5`.
const char* kHeldSpec = R"({"name": "held", "preset": "spiral-mlp",
  "training": {"max_steps": 30, "dataset": {"samples": 200}},
  "axes": [{"setting": "lr", "values": [0.01, 0.003, 0.001]}]})";

struct HeldRun {
    std::int64_t index = 0;
    std::int64_t run_id = 0;
    pid_t pid = 0;  // its task's
};

// The sweep's runs that hold now (their "paused" event is stored), by index.
std::vector<HeldRun> held_runs(const QString& db) {
    std::vector<HeldRun> held;
    try {
        mpwb::RunStore::Options o;
        o.read_only = true;
        o.create = false;
        mpwb::RunStore store(db.toStdString(), o);
        for (const auto& sweep : store.list_sweeps())
            for (const auto& member : sweep.runs) {
                const mpwb::Run run = store.get_run(member.run_id);
                if (run.status == mpwb::RunStatus::Running && run.owner_pid &&
                    !store.events(member.run_id, "paused").empty())
                    held.push_back({member.index, member.run_id, static_cast<pid_t>(*run.owner_pid)});
            }
    } catch (const mpwb::StoreError&) {
        // Not created yet, or busy: none seen this time.
    }
    return held;
}

// Polls (a bounded number of times, pausing on the program) until `count` runs of index
// `first_index` or later hold; what holds then, fewer when the program ended first or they never
// did.
std::vector<HeldRun> wait_for_held(const QString& db, QProcess& program, std::size_t count,
                                   std::int64_t first_index = 0) {
    std::vector<HeldRun> held;
    for (int poll = 0; poll < 1200; ++poll) {
        held = held_runs(db);
        std::erase_if(held, [&](const HeldRun& run) { return run.index < first_index; });
        if (held.size() >= count || program.state() == QProcess::NotRunning) break;
        program.waitForFinished(100);
    }
    return held;
}

// A process that has ended: gone, or a zombie nobody reaped yet.
bool process_ended(pid_t pid) {
    QFile stat(QString("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly)) return true;
    const QByteArray text = stat.readAll();
    const int close = text.lastIndexOf(')');
    return close < 0 || text.mid(close + 2, 1) == "Z";
}

// The task's exit status once it ends (it is this process's child: a subreaper's orphan); -1 when
// it does not end within the polls (it is then killed).
int wait_for_orphan(pid_t pid) {
    for (int poll = 0; poll < 1200; ++poll) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        QThread::msleep(100);
    }
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
}

// The run_finished events of --progress-jsonl output, by index.
QMap<int, QJsonObject> finished_events(const QByteArray& out) {
    QMap<int, QJsonObject> events;
    for (const QByteArray& line : out.split('\n')) {
        const QJsonObject e = QJsonDocument::fromJson(line).object();
        if (e["event"] == "run_finished") events[e["index"].toInt()] = e;
    }
    return events;
}

}  // namespace

class TestSweep : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    QString write_spec(const QString& name, const QByteArray& text) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
            qFatal("cannot write %s", qPrintable(path));
        return path;
    }

private slots:
    void planListsRunsAndSettings() {
        const QString spec = write_spec("plan.json", kTinySpec);
        const auto table = run_cli({"sweep", "plan", spec});
        QVERIFY2(table.exit_code == 0, table.err.constData());
        const QStringList lines = QString::fromUtf8(table.out).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 6);  // title, header, 4 runs
        QCOMPARE(lines[1].simplified(), QString("index lr precision"));
        QCOMPARE(lines[3].simplified(), QString("1 0.01 bf16-mixed"));
        QCOMPARE(lines[4].simplified(), QString("2 0.003 fp32"));

        const auto json = run_cli({"sweep", "plan", spec, "--json"});
        QVERIFY2(json.exit_code == 0, json.err.constData());
        const QJsonObject plan = QJsonDocument::fromJson(json.out).object();
        QCOMPARE(plan["runs"].toInt(), 4);
        QCOMPARE(plan["plan"].toArray()[3].toObject()["settings"].toObject()["precision"].toString(),
                 QString("bf16-mixed"));
    }

    void runTrainsEveryRunIntoOneSweep() {
        const QString spec = write_spec("run.json", kTinySpec);
        const QString db = dir_.filePath("run.sqlite");
        const auto r = run_cli(
            {"sweep", "run", spec, "--jobs", "2", "--db", db, "--backend", "cpu", "--progress-jsonl"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.err.contains("[4/4]"), r.err.constData());
        // The events, one JSON object per line.
        QStringList events;
        QSet<int> finished_indices;
        for (const QByteArray& line : r.out.split('\n')) {
            if (line.isEmpty()) continue;
            const QJsonObject e = QJsonDocument::fromJson(line).object();
            QVERIFY2(!e.isEmpty(), line.constData());
            events << e["event"].toString();
            if (e["event"] == "run_finished") {
                QCOMPARE(e["status"].toString(), QString("FINISHED"));
                QCOMPARE(e["exit_code"].toInt(), 0);
                QVERIFY(e["run_id"].toInteger() > 0);
                finished_indices << e["index"].toInt();
            }
            if (e["event"] == "sweep_finished") {
                QCOMPARE(e["finished"].toInt(), 4);
                QCOMPARE(e["failed"].toInt(), 0);
            }
        }
        QCOMPARE(events.first(), QString("sweep_started"));
        QCOMPARE(events.last(), QString("sweep_finished"));
        QCOMPARE(events.count("run_started"), 4);
        QCOMPARE(finished_indices, (QSet<int>{0, 1, 2, 3}));

        mpwb::RunStore store(db.toStdString());
        const auto sweeps = store.list_sweeps();
        QCOMPARE(sweeps.size(), std::size_t(1));
        const mpwb::SweepRecord& sweep = sweeps[0];
        QCOMPARE(sweep.name, std::string("tiny"));
        QCOMPARE(sweep.run_count, std::int64_t(4));
        QCOMPARE(nlohmann::json::parse(sweep.spec_json), nlohmann::json::parse(kTinySpec));
        QCOMPARE(sweep.runs.size(), std::size_t(4));
        for (std::size_t i = 0; i < 4; ++i) {
            QCOMPARE(sweep.runs[i].index, std::int64_t(i));
            const mpwb::Run run = store.get_run(sweep.runs[i].run_id);
            QCOMPARE(run.status, mpwb::RunStatus::Finished);
            QCOMPARE(run.precision, std::string(i % 2 ? "bf16-mixed" : "fp32"));
        }
    }

    // What a requeued Slurm task does: the run it checkpointed on SIGTERM goes on, as the same run.
    void preemptedTaskContinuesItsRun() {
        const QString spec = write_spec("preempt.json", kTaskSpec);
        const QString db = dir_.filePath("preempt_task.sqlite");
        QProcess task;
        task.start(kCli, {"sweep", "task", spec, "--index", "2", "--db", db, "--backend", "cpu", "--quiet",
                          "--hold-after-step", "10", "--checkpoint-every", "5"});
        QVERIFY(task.waitForStarted());
        // Wait (by state, not time) until the run is training: it has stored its first checkpoint.
        bool held = false;
        for (int tries = 0; tries < 2400 && !held; ++tries) {
            QThread::msleep(100);
            if (!QFile::exists(db)) continue;
            try {
                mpwb::RunStore::Options ro;
                ro.read_only = true;
                mpwb::RunStore store(db.toStdString(), ro);
                const auto runs = store.list_runs();
                held = !runs.empty() && store.latest_checkpoint(runs[0].id).has_value();
            } catch (const mpwb::StoreError&) {}
        }
        QVERIFY(held);
        // A second task of the same index (a duplicate submission) must not train it twice.
        const auto duplicate = run_cli({"sweep", "task", spec, "--index", "2", "--db", db, "--quiet"});
        QVERIFY(duplicate.exit_code != 0);
        QVERIFY2(duplicate.err.contains("is being trained by run"), duplicate.err.constData());
        task.terminate();  // SIGTERM, as Slurm preempts
        QVERIFY(task.waitForFinished(300000));
        QCOMPARE(task.exitCode(), 75);

        const auto again =
            run_cli({"sweep", "task", spec, "--index", "2", "--db", db, "--backend", "cpu", "--quiet"});
        QVERIFY2(again.exit_code == 0, again.err.constData());
        QVERIFY2(again.err.contains("continuing run"), again.err.constData());
        mpwb::RunStore store(db.toStdString());
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        const auto sweep = store.list_sweeps().at(0);
        QCOMPARE(sweep.runs.size(), std::size_t(1));
        QCOMPARE(sweep.runs[0].index, std::int64_t(2));
        QCOMPARE(store.get_run(sweep.runs[0].run_id).status, mpwb::RunStatus::Finished);
        // Started once more (a duplicate requeue), the finished task has nothing to do.
        const auto done = run_cli({"sweep", "task", spec, "--index", "2", "--db", db, "--quiet"});
        QCOMPARE(done.exit_code, 0);
        QVERIFY2(done.err.contains("already FINISHED"), done.err.constData());
    }

    void collectMergesTaskDatabasesOnce() {
        const QString spec = write_spec("collect.json", kTaskSpec);
        QDir(dir_.path()).mkdir("tasks");
        const QString tasks = dir_.filePath("tasks");
        for (const char* index : {"0", "2"}) {
            const auto r = run_cli({"sweep", "task", spec, "--index", index, "--db",
                                    tasks + "/task_" + index + ".sqlite", "--backend", "cpu", "--quiet"});
            QVERIFY2(r.exit_code == 0, r.err.constData());
        }
        const QByteArray before0 = file_bytes(tasks + "/task_0.sqlite");
        const QByteArray before2 = file_bytes(tasks + "/task_2.sqlite");
        const QString db = dir_.filePath("collected.sqlite");
        const auto first = run_cli({"sweep", "collect", tasks, "--db", db});
        QVERIFY2(first.exit_code == 0, first.err.constData());
        QVERIFY2(first.out.contains("2 runs imported"), first.out.constData());
        QVERIFY2(first.out.contains("2 of 3 runs FINISHED"), first.out.constData());
        QVERIFY2(first.out.contains("missing indices: 1"), first.out.constData());
        const auto second = run_cli({"sweep", "collect", tasks, "--db", db});
        QVERIFY2(second.exit_code == 0, second.err.constData());
        QVERIFY2(second.out.contains("0 runs imported, 2 already there"), second.out.constData());
        QCOMPARE(file_bytes(tasks + "/task_0.sqlite"), before0);
        QCOMPARE(file_bytes(tasks + "/task_2.sqlite"), before2);

        mpwb::RunStore store(db.toStdString());
        QCOMPARE(store.list_runs().size(), std::size_t(2));
        const auto sweeps = store.list_sweeps();
        QCOMPARE(sweeps.size(), std::size_t(1));
        QCOMPARE(sweeps[0].uuid, std::string("6f1c2a3b-0d4e-4f50-8a61-7b8c9d0e1f2a"));
        QCOMPARE(nlohmann::json::parse(sweeps[0].spec_json), nlohmann::json::parse(kTaskSpec));
        QCOMPARE(sweeps[0].runs.size(), std::size_t(2));
        QCOMPARE(sweeps[0].runs[0].index, std::int64_t(0));
        QCOMPARE(sweeps[0].runs[1].index, std::int64_t(2));
        QCOMPARE(store.get_run(sweeps[0].runs[1].run_id).seed, std::optional<std::int64_t>(3));
    }

    // A damaged task database is named and left as it is; the good ones are still collected.
    void collectNamesADamagedTaskDatabase() {
        const QString spec = write_spec("damaged.json", kTaskSpec);
        QDir(dir_.path()).mkdir("damaged");
        const QString tasks = dir_.filePath("damaged");
        const auto r =
            run_cli({"sweep", "task", spec, "--index", "1", "--db", tasks + "/task_1.sqlite", "--quiet"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QString junk = write_spec("damaged/task_0.sqlite", "not a database");
        const auto collect = run_cli({"sweep", "collect", tasks, "--db", dir_.filePath("damaged.sqlite")});
        QCOMPARE(collect.exit_code, 1);
        QVERIFY2(collect.err.contains("task_0.sqlite"), collect.err.constData());
        QVERIFY2(collect.out.contains("1 runs imported"), collect.out.constData());
        QCOMPARE(file_bytes(junk), QByteArray("not a database"));
    }

    // Issue 24: the tasks plan from the spec stored with the sweep. The file is edited while the
    // first task holds; every run still trains the stored learning rates.
    void tasksTrainTheStoredSpec() {
        const QString spec = write_spec("stored.json", kHeldSpec);
        const QString db = dir_.filePath("stored.sqlite");
        QProcess sweep;
        sweep.start(kCli, {"sweep", "run", spec, "--jobs", "1", "--db", db, "--backend", "cpu",
                           "--hold-after-step", "5"});
        QVERIFY(sweep.waitForStarted());
        for (std::int64_t index = 0; index < 3; ++index) {
            const auto held = wait_for_held(db, sweep, 1, index);  // the one before may still be ending
            QVERIFY(held.size() == 1 && held[0].index == index);
            if (index == 0)
                write_spec("stored.json",
                           QByteArray(kHeldSpec).replace("0.01, 0.003, 0.001", "0.5, 0.6, 0.7"));
            ::kill(held[0].pid, SIGTERM);  // the run checkpoints and ends INTERRUPTED; the next starts
        }
        QVERIFY(sweep.waitForFinished(300000));
        QCOMPARE(sweep.exitCode(), 1);  // no run FINISHED

        mpwb::RunStore store(db.toStdString());
        const auto sweeps = store.list_sweeps();
        QCOMPARE(sweeps.size(), std::size_t(1));
        QCOMPARE(nlohmann::json::parse(sweeps[0].spec_json), nlohmann::json::parse(kHeldSpec));
        QCOMPARE(sweeps[0].runs.size(), std::size_t(3));
        const double stored_lr[] = {0.01, 0.003, 0.001};
        for (std::size_t i = 0; i < 3; ++i) {
            const mpwb::Run run = store.get_run(sweeps[0].runs[i].run_id);
            QCOMPARE(run.status, mpwb::RunStatus::Interrupted);
            const double lr = nlohmann::json::parse(run.config_json)["lr"].get<double>();
            QVERIFY2(qFuzzyCompare(float(lr), float(stored_lr[i])), run.config_json.c_str());
        }
    }

    // Issue 24: a Slurm sweep's tasks read the copy `sweep slurm` wrote, which holds the preset
    // file's content: edits of the spec and of the preset file after it change nothing, and each
    // task database stores the spec the task read.
    void slurmTasksTrainTheCopiedSpec() {
        QDir(dir_.path()).mkdir("slurm_src");
        const QByteArray preset = R"({"name": "base", "network": {"loss": "cross_entropy",
          "layers": [{"type": "Linear", "out": 8}, {"type": "ReLU"}, {"type": "Linear", "out": 2}]},
          "training": {"lr": 0.05, "max_steps": 10, "dataset": {"samples": 200}}})";
        const QString preset_file = write_spec("slurm_src/base.json", preset);
        const QByteArray spec_text =
            R"({"name": "copied", "preset": "base.json", "axes": [{"setting": "seed", "values": [1, 2]}]})";
        const QString spec = write_spec("slurm_src/spec.json", spec_text);
        const QString out = dir_.filePath("slurm_out");
        const auto wrote = run_cli({"sweep", "slurm", spec, "--out", out});
        QVERIFY2(wrote.exit_code == 0, wrote.err.constData());
        write_spec("slurm_src/base.json", QByteArray(preset).replace("0.05", "0.9"));
        write_spec("slurm_src/spec.json", QByteArray(spec_text).replace("[1, 2]", "[7, 8]"));
        const QString uuid =
            QJsonDocument::fromJson(file_bytes(out + "/sweep_slurm.json")).object()["sweep_uuid"].toString();
        const QString db = out + "/task_1.sqlite";
        const auto task = run_cli({"sweep", "task", out + "/spec.json", "--index", "1", "--db", db,
                                   "--sweep-uuid", uuid, "--backend", "cpu", "--quiet"});
        QVERIFY2(task.exit_code == 0, task.err.constData());
        mpwb::RunStore store(db.toStdString());
        const auto sweep = store.list_sweeps().at(0);
        QCOMPARE(nlohmann::json::parse(sweep.spec_json),
                 nlohmann::json::parse(file_bytes(out + "/spec.json").toStdString()));
        const mpwb::Run run = store.get_run(sweep.runs.at(0).run_id);
        QCOMPARE(run.seed, std::optional<std::int64_t>(2));
        QCOMPARE(nlohmann::json::parse(run.config_json)["lr"].get<float>(), 0.05f);
        QVERIFY(QFile::exists(preset_file));
    }

    // Issue 24: SIGHUP (a closed terminal) stops the sweep like SIGTERM: the running tasks
    // checkpoint and end INTERRUPTED, the parent waits for them (no orphan), no run starts after.
    void sighupStopsTheSweepAndItsTasks() {
        const QString spec = write_spec("hup.json", kHeldSpec);
        const QString db = dir_.filePath("hup.sqlite");
        QProcess sweep;
        sweep.start(kCli, {"sweep", "run", spec, "--jobs", "2", "--db", db, "--backend", "cpu",
                           "--progress-jsonl", "--hold-after-step", "5"});
        QVERIFY(sweep.waitForStarted());
        const auto held = wait_for_held(db, sweep, 2);
        QVERIFY(held.size() == 2);
        ::kill(static_cast<pid_t>(sweep.processId()), SIGHUP);
        QVERIFY(sweep.waitForFinished(300000));
        QCOMPARE(sweep.exitCode(), 128 + SIGHUP);
        for (const HeldRun& run : held) QVERIFY(process_ended(run.pid));
        const auto events = finished_events(sweep.readAllStandardOutput());
        QCOMPARE(events.size(), 2);
        mpwb::RunStore store(db.toStdString());
        for (const HeldRun& run : held) {
            QCOMPARE(events[int(run.index)]["status"].toString(), QString("INTERRUPTED"));
            QCOMPARE(events[int(run.index)]["exit_code"].toInt(), 75);
            QCOMPARE(store.get_run(run.run_id).status, mpwb::RunStatus::Interrupted);
            QVERIFY(store.latest_checkpoint(run.run_id).has_value());
        }
        QCOMPARE(store.list_sweeps().at(0).runs.size(), std::size_t(2));  // the third never started
    }

    // Issue 24: SIGKILL leaves `sweep run` no chance to stop its tasks; they end with it anyway
    // (their parent-death signal is SIGTERM: they checkpoint, exit status 75), and no file is left
    // in TMPDIR. This process adopts the orphans (a subreaper) to see how they ended.
    void sigkillToTheSweepEndsItsTasks() {
        QVERIFY(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
        const QString spec = write_spec("kill.json", kHeldSpec);
        const QString db = dir_.filePath("kill.sqlite");
        QDir(dir_.path()).mkdir("kill_tmp");
        const QString tmp = dir_.filePath("kill_tmp");
        QProcess sweep;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("TMPDIR", tmp);
        sweep.setProcessEnvironment(env);
        sweep.start(kCli, {"sweep", "run", spec, "--jobs", "2", "--db", db, "--backend", "cpu",
                           "--hold-after-step", "5"});
        QVERIFY(sweep.waitForStarted());
        const auto held = wait_for_held(db, sweep, 2);
        QVERIFY(held.size() == 2);
        ::kill(static_cast<pid_t>(sweep.processId()), SIGKILL);
        QVERIFY(sweep.waitForFinished(300000));
        mpwb::RunStore store(db.toStdString());
        for (const HeldRun& run : held) {
            QCOMPARE(wait_for_orphan(run.pid), 75);
            QCOMPARE(store.get_run(run.run_id).status, mpwb::RunStatus::Interrupted);
            QVERIFY(store.latest_checkpoint(run.run_id).has_value());
        }
        QCOMPARE(QDir(tmp).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
    }

    // Issue 24: what a task's end reports is the store's status of its run: a task killed
    // mid-run is INTERRUPTED (the store marks a dead owner's run so), not RUNNING; a task that
    // ended before it created a run has no status (and run_id 0), not an invented FAILED.
    void taskStatusesAreTheStores() {
        const QString spec = write_spec("statuses.json", R"({"name": "statuses", "preset": "spiral-mlp",
          "training": {"max_steps": 30},
          "axes": [{"setting": "dataset", "values": [{"kind": "spiral", "samples": 200},
                                                     {"kind": "csv", "path": "/nonexistent/mpwb.csv"}]}]})");
        const QString db = dir_.filePath("statuses.sqlite");
        QProcess sweep;
        sweep.start(kCli, {"sweep", "run", spec, "--jobs", "2", "--db", db, "--backend", "cpu",
                           "--progress-jsonl", "--hold-after-step", "5"});
        QVERIFY(sweep.waitForStarted());
        const auto held = wait_for_held(db, sweep, 1);
        QVERIFY(held.size() == 1 && held[0].index == 0);
        ::kill(held[0].pid, SIGKILL);
        QVERIFY(sweep.waitForFinished(300000));
        QCOMPARE(sweep.exitCode(), 1);
        const QByteArray err = sweep.readAllStandardError();
        const auto events = finished_events(sweep.readAllStandardOutput());
        QCOMPARE(events.size(), 2);
        QCOMPARE(events[0]["status"].toString(), QString("INTERRUPTED"));
        QCOMPARE(events[0]["exit_code"].toInt(), 128 + SIGKILL);
        QCOMPARE(events[0]["run_id"].toInteger(), qint64(held[0].run_id));
        QVERIFY(events[1]["status"].isNull());
        QCOMPARE(events[1]["run_id"].toInteger(), qint64(0));
        QCOMPARE(events[1]["exit_code"].toInt(), 1);
        QVERIFY2(err.contains("index 0: INTERRUPTED (run "), err.constData());
        QVERIFY2(err.contains("index 1: no run (the task ended with exit 1 before creating one)"),
                 err.constData());
        mpwb::RunStore store(db.toStdString());
        QCOMPARE(store.get_run(held[0].run_id).status, mpwb::RunStatus::Interrupted);
    }

    // Issue 24: task databases from elsewhere are data, not code. One whose schema carries an
    // endless trigger (it spun collect forever), one that plans 1e11 runs (std::bad_alloc after
    // 4 GB) and an empty one are each refused by name; the good one is still collected, and no
    // temporary copy is left behind. The limit only ends a collect that would never finish.
    void collectRefusesHostileTaskDatabases() {
        QDir(dir_.path()).mkdir("hostile");
        QDir(dir_.path()).mkdir("hostile_tmp");
        const QString tasks = dir_.filePath("hostile");
        const QString tmp = dir_.filePath("hostile_tmp");
        const std::string uuid = "1d2c3b4a-5e6f-4a70-8b91-a2b3c4d5e6f7";
        auto make_task = [&](int index, mpwb::RunStatus status, const std::string& sql) {
            const std::string path = (tasks + "/task_" + QString::number(index) + ".sqlite").toStdString();
            {
                mpwb::RunStore task(path);
                const auto sweep = task.create_sweep({0, uuid, "hostile", "{}", 3, 0, {}});
                mpwb::RunInfo info;
                info.name = "index " + std::to_string(index);
                const auto id = task.create_run(info);
                if (status != mpwb::RunStatus::Running) task.set_status(id, status);
                task.add_sweep_run(sweep, index, id);
            }
            if (!sql.empty()) QCOMPARE(testsupport::Raw(path).exec(sql), SQLITE_OK);
        };
        make_task(0, mpwb::RunStatus::Running,
                  "CREATE TRIGGER spin BEFORE DELETE ON runs BEGIN SELECT count(*) FROM (WITH RECURSIVE "
                  "c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END");
        make_task(1, mpwb::RunStatus::Finished, "UPDATE sweeps SET run_count = 100000000000");
        make_task(2, mpwb::RunStatus::Finished, "");
        QFile empty(tasks + "/task_3.sqlite");
        QVERIFY(empty.open(QIODevice::WriteOnly));
        empty.close();
        const auto collect = run_program(
            "/usr/bin/env",
            {"TMPDIR=" + tmp, kCli, "sweep", "collect", tasks, "--db", dir_.filePath("hostile.sqlite")},
            120000);
        QVERIFY2(collect.finished, "collect did not finish");
        QCOMPARE(collect.exit_code, 1);
        for (const char* said : {"task_0.sqlite", "trigger 'spin' on table 'runs'", "task_1.sqlite",
                                 "run_count: 100000000000", "task_3.sqlite", "is empty"})
            QVERIFY2(collect.err.contains(said), collect.err.constData());
        QVERIFY2(collect.out.contains("1 runs imported"), collect.out.constData());
        QVERIFY2(collect.out.contains("1 of 3 runs FINISHED"), collect.out.constData());
        QVERIFY2(collect.out.contains("missing indices: 0-1"), collect.out.constData());
        QCOMPARE(QDir(tmp).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
    }

    void badSpecsAreRefused() {
        const QString unknown = write_spec(
            "unknown.json",
            R"({"name": "b", "preset": "spiral-mlp", "axes": [{"setting": "lrate", "values": [1]}]})");
        for (const QStringList& args :
             {QStringList{"sweep", "plan", unknown},
              QStringList{"sweep", "run", unknown, "--db", dir_.filePath("bad.sqlite")}}) {
            const auto r = run_cli(args);
            QVERIFY(r.exit_code != 0);
            QVERIFY2(r.err.contains(unknown.toUtf8() + ": axes[0].setting: 'lrate': unknown setting"),
                     r.err.constData());
        }
        QVERIFY(!QFile::exists(dir_.filePath("bad.sqlite")));  // nothing created for a bad spec
        const QString too_many =
            write_spec("many.json", R"({"name": "b", "preset": "spiral-mlp", "max_runs": 2,
            "axes": [{"setting": "seed", "values": [1, 2, 3]}]})");
        const auto many = run_cli({"sweep", "plan", too_many});
        QVERIFY(many.exit_code != 0);
        QVERIFY2(many.err.contains("axes: the grid has 3 runs (3), more than max_runs 2"),
                 many.err.constData());
        const QString no_uuid = write_spec("nouuid.json", kTinySpec);
        const auto task =
            run_cli({"sweep", "task", no_uuid, "--index", "0", "--db", dir_.filePath("t.sqlite")});
        QVERIFY(task.exit_code != 0);
        QVERIFY2(task.err.contains("--sweep-uuid"), task.err.constData());
        const auto beyond = run_cli({"sweep", "task", write_spec("beyond.json", kTaskSpec), "--index", "3",
                                     "--db", dir_.filePath("t.sqlite")});
        QVERIFY(beyond.exit_code != 0);
        QVERIFY2(beyond.err.contains("index: the sweep plans runs 0 to 2, not 3"), beyond.err.constData());
        const auto broken = run_cli({"sweep", "plan", write_spec("broken.json", "{\"name\": ")});
        QVERIFY(broken.exit_code != 0);
        QVERIFY2(broken.err.contains("broken.json"), broken.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestSweep)
#include "test_sweep.moc"
