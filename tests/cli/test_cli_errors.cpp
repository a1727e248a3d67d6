// Bad input on the command lines of mpwb-cli and mpwb (issue 12, section 3; issue 24): each case runs the
// built binary as a user would and checks the exit status and the one sentence on stderr, and
// that the database the command read is still there. Nothing here trains for more than a few
// steps, and no outcome depends on how fast the machine is.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sessions/run_store.h"
#include "../sessions/test_support.h"
#include "program_runner.h"

namespace {

using Result = ProgramResult;

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
const QString kGui = QStringLiteral(MPWB_BINARY_DIR "/app/gui/mpwb");

Result cli(const QStringList& args) { return run_program(kCli, args); }

// A store with `n` finished runs named run1, run2, ...
void make_store(const std::string& path, int n) {
    mpwb::RunStore store(path);
    for (int i = 1; i <= n; ++i) {
        mpwb::RunInfo info;
        info.name = "run" + std::to_string(i);
        const auto id = store.create_run(info);
        store.set_status(id, mpwb::RunStatus::Finished);
    }
}

std::size_t run_count(const std::string& path) {
    mpwb::RunStore::Options ro;
    ro.read_only = true;
    return mpwb::RunStore(path, ro).list_runs().size();
}

#define EXPECT_FAILS_WITH(result, needle)                                  \
    do {                                                                   \
        const Result& r_ = (result);                                       \
        QVERIFY2(r_.finished, "did not finish");                           \
        QVERIFY2(r_.exit_code != 0, r_.out.constData());                   \
        QVERIFY2(r_.err.contains(QByteArray(needle)), r_.err.constData()); \
    } while (0)

}  // namespace

class TestCliErrors : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString p(const QString& name) { return dir_.filePath(name); }

private slots:
    // 3.2: --force onto the database the export reads used to delete it.
    void exportOntoItsDatabaseRefused() {
        const QString db = p("export.sqlite");
        make_store(db.toStdString(), 2);
        QFile::link(db, p("export_link.mpwb"));
        for (const QString& out : {db, p("export_link.mpwb"), p("./export.sqlite")}) {
            EXPECT_FAILS_WITH(cli({"runs", "export", "1", "--force", "--out", out, "--db", db}),
                              "it is the run database");
            QCOMPARE(run_count(db.toStdString()), std::size_t(2));
        }
        // train --save-network onto the database it records into: refused before training.
        EXPECT_FAILS_WITH(cli({"train", "--preset", "spiral-mlp", "--max-steps", "2", "--backend", "cpu",
                               "--quiet", "--db", db, "--save-network", p("export_link.mpwb")}),
                          "it is the run database");
        QCOMPARE(run_count(db.toStdString()), std::size_t(2));
    }

    // 3.9: importing the database into itself is said as such, not as a lock.
    void selfImportSaysSo() {
        const QString db = p("self.sqlite");
        make_store(db.toStdString(), 1);
        const Result r = cli({"runs", "import", db, "--db", db});
        EXPECT_FAILS_WITH(r, "into itself");
        QVERIFY2(!r.err.contains("locked"), r.err.constData());
    }

    // 3.3: a run whose writer is alive (this test process) cannot be deleted or purged.
    void runningRunNotDeleted() {
        const QString db = p("running.sqlite");
        std::int64_t id;
        {
            mpwb::RunStore store(db.toStdString());
            id = store.create_run(mpwb::RunInfo{});
        }
        EXPECT_FAILS_WITH(cli({"runs", "delete", QString::number(id), "--db", db}), "is still running");
        const Result purge = cli({"runs", "purge", "--db", db});
        QVERIFY2(purge.exit_code == 0, purge.err.constData());
        mpwb::RunStore store(db.toStdString());
        QCOMPARE(store.get_run(id).status, mpwb::RunStatus::Running);
        QVERIFY(!store.get_run(id).deleted);
    }

    // 3.7: a damaged database is refused for writing and named as the bad file when exported.
    void corruptDatabaseNamed() {
        const QString db = p("corrupt.sqlite");
        {
            mpwb::RunStore store(db.toStdString());
            const auto id = store.create_run(mpwb::RunInfo{});
            for (int i = 0; i < 200; ++i) store.set_tag(id, "key" + std::to_string(i), std::string(200, 'x'));
            store.set_status(id, mpwb::RunStatus::Finished);
        }
        QVERIFY(testsupport::damage_page_of(db.toStdString(), "sqlite_autoindex_tags_1") > 0 ||
                testsupport::damage_page_of(db.toStdString(), "tags") > 0);
        const auto before = testsupport::file_bytes(db.toStdString());
        EXPECT_FAILS_WITH(cli({"runs", "tag", "1", "new", "--db", db}),
                          QString("database %1 is corrupt").arg(db).toUtf8());
        QCOMPARE(testsupport::file_bytes(db.toStdString()), before);
        const Result exp = cli({"runs", "export", "1", "--out", p("from_corrupt.mpwb"), "--db", db});
        EXPECT_FAILS_WITH(exp, QString("database %1 is corrupt").arg(db).toUtf8());
        QVERIFY2(!exp.err.contains("from_corrupt.mpwb"), exp.err.constData());
    }

    // 3.8: a WAL database in a folder this user cannot write is still listed. Root writes
    // anywhere, so as root the listing runs as nobody (setpriv), where the folder's mode holds.
    void readOnlyFolderListed() {
        const QString folder = p("ro");
        QDir().mkpath(folder);
        const QString db = folder + "/runs.sqlite";
        make_store(db.toStdString(), 3);
        namespace fs = std::filesystem;
        fs::permissions(dir_.path().toStdString(), fs::perms(0755));
        fs::permissions(db.toStdString(), fs::perms(0644));
        fs::permissions(folder.toStdString(), fs::perms(0555));
        Result r;
        if (geteuid() == 0) {
            if (QStandardPaths::findExecutable("setpriv").isEmpty())
                QSKIP("running as root without setpriv: cannot drop to a user the folder's mode binds");
            r = run_program("setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups", kCli, "runs",
                                        "list", "--db", db});
        } else {
            r = cli({"runs", "list", "--db", db});
        }
        fs::permissions(folder.toStdString(), fs::perms(0755));
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.out.contains("3 runs in"), r.out.constData());
    }

    // 3.8: on a full disk the run list still reads, and a write says the disk is full. A small
    // tmpfs in a private mount namespace is the full disk (root only; SKIP otherwise).
    void fullDiskListsAndSaysFull() {
        const QString src = p("full_src.sqlite");
        make_store(src.toStdString(), 2);
        const QString mnt = p("full_mnt");
        QDir().mkpath(mnt);
        const QString script =
            QString(
                "mount -t tmpfs -o size=512k tmpfs '%1' || exit 77; "
                "cp '%2' '%1/db.sqlite'; dd if=/dev/zero of='%1/fill' bs=4k >/dev/null 2>&1; "
                "'%3' runs list --db '%1/db.sqlite'; echo \"list=$?\"; "
                "'%3' runs tag 1 x --db '%1/db.sqlite'; echo \"tag=$?\"")
                .arg(mnt, src, kCli);
        const Result r = run_program("unshare", {"-m", "sh", "-c", script});
        if (r.exit_code == 77 || r.exit_code < 0 || (r.exit_code != 0 && !r.out.contains("list=")))
            QSKIP("cannot mount a small tmpfs in a private mount namespace here (needs root)");
        QVERIFY2(r.out.contains("list=0"), (r.out + r.err).constData());
        QVERIFY2(r.out.contains("2 runs in"), (r.out + r.err).constData());
        QVERIFY2(r.out.contains("tag=1"), (r.out + r.err).constData());
        QVERIFY2(r.err.contains("the disk holding " + mnt.toUtf8() + "/db.sqlite is full"),
                 r.err.constData());
    }

    // Issue 24: text that is not UTF-8 is refused where it enters (the shell passes the raw byte
    // 0xFF), and text stored by another way is listed as JSON with U+FFFD instead of failing the
    // whole list with nlohmann's message.
    void nonUtf8TextNeverBreaksJson() {
        const QString db = p("utf8.sqlite");
        make_store(db.toStdString(), 2);
        auto with_ff = [&](const QString& args) {
            return run_program("/bin/sh", {"-c", "exec \"$0\" " + args + " --db \"$1\"", kCli, db});
        };
        EXPECT_FAILS_WITH(with_ff("runs rename 1 \"$(printf 'bad\\377')\""),
                          "byte 0xFF at offset 3 is not valid UTF-8");
        EXPECT_FAILS_WITH(with_ff("runs tag 1 \"k=$(printf '\\377')\""), "tag value");
        EXPECT_FAILS_WITH(with_ff("runs note 1 \"$(printf '\\300\\257')\""), "byte 0xC0");
        EXPECT_FAILS_WITH(with_ff("train --preset spiral-mlp --max-steps 2 --backend cpu --quiet "
                                  "--run-name \"$(printf '\\377')\""),
                          "--run-name: byte 0xFF at offset 0");
        QCOMPARE(run_count(db.toStdString()), std::size_t(2));
        // An older build stored one: the list and the run still read, with U+FFFD in its place.
        QCOMPARE(testsupport::Raw(db.toStdString())
                     .exec("UPDATE runs SET name = CAST(x'41FF' AS TEXT) WHERE id = 1"),
                 SQLITE_OK);
        for (const QStringList& args :
             {QStringList{"runs", "list", "--json"}, QStringList{"runs", "show", "1", "--json"}}) {
            const Result r = cli(args + QStringList{"--db", db});
            QVERIFY2(r.exit_code == 0, r.err.constData());
            QVERIFY2(r.out.contains("\"A\xEF\xBF\xBD\""), r.out.constData());
            QVERIFY(nlohmann::json::accept(r.out.toStdString()));
        }
    }

    // Issue 24: a FINISHED run whose checkpoint state is damaged is still shown, with the damage
    // said naming the database, the run and the step; it used to fail `runs show` entirely.
    void damagedCheckpointDoesNotHideTheRun() {
        const QString db = p("checkpoint.sqlite");
        {
            mpwb::RunStore store(db.toStdString());
            const auto id = store.create_run(mpwb::RunInfo{});
            mpwb::TrainingCheckpoint damaged;
            damaged.step = 5;
            damaged.state = {'M', 'P', 'W', 'B', 0xFF};
            store.save_checkpoint(id, damaged);
            store.set_status(id, mpwb::RunStatus::Finished);
        }
        const Result text = cli({"runs", "show", "1", "--db", db});
        QVERIFY2(text.exit_code == 0, text.err.constData());
        const QByteArray said =
            "checkpoint DAMAGED: database " + db.toUtf8() + ": run 1, checkpoint at step 5: ";
        QVERIFY2(text.out.contains(said), text.out.constData());
        const Result json = cli({"runs", "show", "1", "--json", "--db", db});
        QVERIFY2(json.exit_code == 0, json.err.constData());
        const auto j = nlohmann::json::parse(json.out.toStdString());
        QCOMPARE(j["checkpoint_step"].get<int>(), 5);
        QVERIFY(j["checkpoint_damaged"].get<std::string>().find("run 1, checkpoint at step 5") !=
                std::string::npos);
        QVERIFY(j["final_weights_digest"].is_null());
    }

    // Issue 24: SQLite removes a file named like a database's companion (DB-journal, -wal, -shm)
    // when DB is next opened: an export there is refused before anything is written.
    void exportToACompanionNameRefused() {
        const QString db = p("companion.sqlite");
        make_store(db.toStdString(), 1);
        const QString other = p("other.sqlite");  // any database's companion, not only this one's
        make_store(other.toStdString(), 1);
        EXPECT_FAILS_WITH(cli({"runs", "export", "1", "--out", other + "-journal", "--db", db}),
                          "a name ending in -journal");
        EXPECT_FAILS_WITH(
            cli({"runs", "export", "1", "--safetensors", p("weights.safetensors-wal"), "--db", db}),
            "a name ending in -wal");
        EXPECT_FAILS_WITH(cli({"runs", "export", "1", "--out", p("elsewhere.mpwb-shm"), "--db", db}),
                          "a name ending in -shm");
        QVERIFY(!QFile::exists(other + "-journal"));
        QVERIFY(!QFile::exists(p("weights.safetensors-wal")));
        QVERIFY(!QFile::exists(p("elsewhere.mpwb-shm")));
        QCOMPARE(run_count(db.toStdString()), std::size_t(1));
    }

    // Issue 24: a write that waits out its bound for the lock says which process holds it.
    void lockHolderNamed() {
        const QString db = p("held.sqlite");
        make_store(db.toStdString(), 1);
        testsupport::Raw holder(db.toStdString());
        QCOMPARE(holder.exec("BEGIN IMMEDIATE; UPDATE runs SET name = 'held' WHERE id = 1"), SQLITE_OK);
        EXPECT_FAILS_WITH(cli({"runs", "delete", "1", "--db", db}),
                          "its write lock is held by process " + QByteArray::number(getpid()));
        QCOMPARE(holder.exec("ROLLBACK"), SQLITE_OK);
        QCOMPARE(run_count(db.toStdString()), std::size_t(1));
    }

    // 3.10: numbers out of range, and integers beyond int64, are refused naming the option;
    // nothing trains.
    void numericOptionsChecked() {
        const QString db = p("numbers.sqlite");
        const QList<QStringList> cases = {
            {"--epochs", "-5"},
            {"--epochs", "0"},
            {"--max-steps", "-1"},
            {"--max-steps", "99999999999999999999"},
            {"--batch", "0"},
            {"--seed", "-1"},
            {"--seed", "99999999999999999999"},
            {"--threads", "-2"},
            {"--samples", "0"},
            {"--noise", "2"},
            {"--test-ratio", "1.5"},
            {"--eval-every", "-3"},
            {"--stats-every", "-1"},
            {"--warmup", "-1"},
            {"--epochs", "010x"},
        };
        for (const auto& c : cases) {
            const Result r = cli(
                QStringList{"train", "--preset", "spiral-mlp", "--backend", "cpu", "--quiet", "--db", db} +
                c);
            EXPECT_FAILS_WITH(r, c[0].toUtf8());
            QVERIFY2(!QFile::exists(db), qPrintable(c.join(' ') + " trained"));
        }
        const QString store = p("numbers_store.sqlite");
        make_store(store.toStdString(), 1);
        EXPECT_FAILS_WITH(cli({"runs", "list", "--limit", "-1", "--db", store}), "--limit");
        EXPECT_FAILS_WITH(cli({"runs", "show", "99999999999999999999", "--db", store}),
                          "99999999999999999999");
    }

    // Issue 26: text datasets. Each bad option or file is one sentence naming the option, the
    // setting or the file; a FIFO is refused from its type, never opened (the run does not hang).
    void textDatasetRefusals() {
        const QString db = p("text.sqlite");
        const auto train = [&](const QStringList& args) {
            return cli(
                QStringList{"train", "--preset", "spiral-mlp", "--backend", "cpu", "--quiet", "--db", db} +
                args);
        };
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--context", "0"}), "--context");
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--context", "65537"}), "--context");
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--tokenizer", "bite"}),
                          "dataset.tokenizer 'bite' is unknown");
        QVERIFY2(!QFile::exists(db), "a refused option created the database");
        EXPECT_FAILS_WITH(train({"--dataset", "text"}), "needs a file path (--data-path)");
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--data-path", dir_.path()}), "is a folder");
        const QString fifo = p("text.fifo");
        QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--data-path", fifo}), "not a regular file");
        QFile latin1(p("latin1.txt"));
        QVERIFY(latin1.open(QIODevice::WriteOnly));
        latin1.write(QByteArray(300, 'a') + "caf\xe9" + QByteArray(300, 'b'));
        latin1.close();
        EXPECT_FAILS_WITH(
            train({"--dataset", "text", "--data-path", latin1.fileName(), "--tokenizer", "char"}),
            "byte 0xE9 at offset 303 is not valid UTF-8");
        EXPECT_FAILS_WITH(train({"--dataset", "text", "--data-path", latin1.fileName(), "--tokenizer", "byte",
                                 "--context", "600"}),
                          "shorter than context + 1");
        EXPECT_FAILS_WITH(train({"--dataset", "fortunes", "--data-path", p("no-fortunes")}), "fortunes-min");
    }

#ifdef MPWB_TEST_GUI
    // 3.10: mpwb's startup errors reach stderr and the exit status when scripted.
    void guiStartupErrors() {
        const QString corrupt = p("gui_corrupt.sqlite");
        testsupport::write_bytes(corrupt.toStdString(), std::vector<char>(8192, 'x'));
        const QString good = p("gui_good.sqlite");
        make_store(good.toStdString(), 1);
        EXPECT_FAILS_WITH(run_program(kGui, {"--db", corrupt, "--default-layout", "--quit-after", "30"}),
                          "corrupt");
        EXPECT_FAILS_WITH(run_program(kGui, {"--db", good, "--default-layout", "--preset", "no-such-preset",
                                             "--quit-when-done"}),
                          "no-such-preset");
        EXPECT_FAILS_WITH(
            run_program(kGui, {"--db", good, "--default-layout", "--start", "bogus", "--quit-when-done"}),
            "--start");
        EXPECT_FAILS_WITH(run_program(kGui, {"--db", good, "--quit-after", "-1"}), "--quit-after");
        EXPECT_FAILS_WITH(run_program(kGui, {"--db", good, "--epochs", "-5", "--quit-after", "30"}),
                          "--epochs");
        EXPECT_FAILS_WITH(
            run_program(kGui, {"--db", good, "--epochs", "99999999999999999999", "--quit-after", "30"}),
            "--epochs");
        // Issue 24: one id 1,000 times loaded 1,000 copies (minutes; --quit-after never fired):
        // the run opens once and the scripted start ends; past the limit is refused at once.
        const QString repeated = QStringList(1000, QStringLiteral("1")).join(QLatin1Char(','));
        const Result opened = run_program(
            kGui, {"--db", good, "--default-layout", "--open-runs", repeated, "--quit-when-done"});
        QVERIFY2(opened.finished && opened.exit_code == 0, opened.err.constData());
        QStringList distinct;
        for (int id = 1; id <= 65; ++id) distinct << QString::number(id);
        EXPECT_FAILS_WITH(run_program(kGui, {"--db", good, "--open-runs", distinct.join(QLatin1Char(',')),
                                             "--quit-after", "30"}),
                          "names 65 runs; the workbench shows at most 64 together");
        QCOMPARE(run_count(good.toStdString()), std::size_t(1));
    }

    // 3.2: the report's CSV (beside the first output) may not land on the database it reads.
    void reportOntoItsDatabaseRefused() {
        const QString db = p("report.csv");
        make_store(db.toStdString(), 1);
        EXPECT_FAILS_WITH(run_program(kGui, {"report", "--runs", "1", "--out", p("report.html"), "--db", db}),
                          "it is the run database");
        QCOMPARE(run_count(db.toStdString()), std::size_t(1));
    }
#endif
};

QTEST_GUILESS_MAIN(TestCliErrors)
#include "test_cli_errors.moc"
