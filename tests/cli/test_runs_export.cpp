// `mpwb-cli runs export ID --safetensors FILE [--pytorch FILE]` as a user runs it: the files it
// writes, every refusal (a file that exists is never overwritten and a half export leaves
// nothing behind, unknown runs, runs without final weights, options that do not go together),
// the input normalisation the script documents for a CSV run; and two fixes of `runs`: show
// prints float settings in their shortest round-trip form, delete's messages end their lines.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <fstream>

#include "core/nn/safetensors_file.h"
#include "tests/cli/program_runner.h"
#include "tests/sessions/test_support.h"

using namespace mpwb;

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestRunsExport : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString db_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    ProgramResult cli(QStringList args) {
        args << "--db" << db_;
        return run_program(kCli, args);
    }

    void expect_refusal(const QStringList& args, const char* needle) {
        const auto r = cli(args);
        QVERIFY2(r.exit_code != 0, r.out.constData());
        QVERIFY2(r.err.contains(needle), r.err.constData());
        QVERIFY2(r.err.endsWith('\n'), r.err.constData());
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        db_ = path("runs.sqlite");
        for (const char* lr : {"0.01", "0.003"}) {
            const auto r = cli({"train", "--preset", "spiral-mlp", "--max-steps", "12", "--lr", lr});
            QVERIFY2(r.exit_code == 0, r.err.constData());
        }
    }

    void writesWeightsAndScript() {
        const auto r =
            cli({"runs", "export", "1", "--safetensors", path("a.safetensors"), "--pytorch", path("a.py")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.out.contains("exported run 1 (step 12): 6 tensors, 4482 values"), r.out.constData());
        const SafetensorsFile f = read_safetensors_file(path("a.safetensors").toStdString());
        QCOMPARE(f.tensors.size(), std::size_t(6));
        QCOMPARE(f.tensors.front().name, std::string("0.weight"));
        QCOMPARE(f.metadata.at("mpwb_run_id"), std::string("1"));
        QCOMPARE(f.metadata.at("mpwb_step"), std::string("12"));
        QCOMPARE(f.metadata.at("mpwb_precision"), std::string("fp32"));
        QVERIFY(f.metadata.at("mpwb_version").rfind("mpwb-cli ", 0) == 0);
        const QByteArray script = read_all(path("a.py"));
        QVERIFY(script.contains("WEIGHTS_FILE = \"a.safetensors\""));
        QVERIFY(script.contains("nn.Linear(2, 64, bias=True)"));
        QVERIFY(script.contains("no normalisation"));
    }

    void refusesToOverwrite() {
        std::ofstream(path("taken.safetensors").toStdString()) << "keep me";
        expect_refusal({"runs", "export", "1", "--safetensors", path("taken.safetensors")},
                       "taken.safetensors already exists");
        QCOMPARE(read_all(path("taken.safetensors")), QByteArray("keep me"));
        // The script exists: nothing is written, not even the weights.
        std::ofstream(path("taken.py").toStdString()) << "keep me too";
        expect_refusal({"runs", "export", "1", "--safetensors", path("fresh.safetensors"), "--pytorch",
                        path("taken.py")},
                       "taken.py already exists");
        QVERIFY(!QFile::exists(path("fresh.safetensors")));
        QCOMPARE(read_all(path("taken.py")), QByteArray("keep me too"));
        expect_refusal({"runs", "export", "1", "--safetensors", path("no/such/folder/x.safetensors")},
                       "cannot create safetensors file");
    }

    void refusesWhatCannotBeExported() {
        expect_refusal({"runs", "export", "99", "--safetensors", path("x.safetensors")},
                       "run 99 does not exist");
        {
            testsupport::Raw raw(db_.toStdString());
            QCOMPARE(
                raw.exec("DELETE FROM final_weight_tensors WHERE run_id=2; DELETE FROM final_weights WHERE "
                         "run_id=2"),
                SQLITE_OK);
        }
        expect_refusal({"runs", "export", "2", "--safetensors", path("x.safetensors")},
                       "run 2 has no stored final weights");
        QVERIFY(!QFile::exists(path("x.safetensors")));
        expect_refusal({"runs", "export", "1", "--pytorch", path("x.py")}, "--pytorch needs --safetensors");
        expect_refusal({"runs", "export", "1,2", "--safetensors", path("x.safetensors")},
                       "takes one run id, gets 2");
        expect_refusal(
            {"runs", "export", "1", "--safetensors", path("x.safetensors"), "--out", path("b.mpwb")},
            "give them in a separate call");
        expect_refusal({"runs", "export", "1"}, "needs --out BUNDLE");
    }

    // A CSV run is normalised per feature: the script carries the train split's statistics.
    void scriptDocumentsNormalisation() {
        std::ofstream csv(path("table.csv").toStdString());
        csv << "a,b,label\n";
        for (int i = 0; i < 40; ++i) csv << i << "," << (i % 7) * 10 << "," << (i % 2) << "\n";
        csv.close();
        const auto train = cli({"train", "--preset", "spiral-mlp", "--dataset", "csv", "--data-path",
                                path("table.csv"), "--max-steps", "3"});
        QVERIFY2(train.exit_code == 0, train.err.constData());
        const auto r =
            cli({"runs", "export", "3", "--safetensors", path("c.safetensors"), "--pytorch", path("c.py")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QByteArray script = read_all(path("c.py"));
        QVERIFY2(script.contains("by the mean and standard deviation of the csv train split"),
                 script.constData());
        QVERIFY(script.contains("mean = torch.tensor(["));
        QVERIFY(script.contains("return (x - mean) / std"));
    }

    void showPrintsShortestFloats() {
        const auto r = cli({"runs", "show", "2"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.out.contains(QByteArray("lr") + QByteArray(35, ' ') + "0.003\n"), r.out.constData());
        QVERIFY2(r.out.contains("dataset.noise") && !r.out.contains("0.10000000149011612"),
                 r.out.constData());
        QVERIFY(!r.out.contains("0.0030000000"));
        QVERIFY(r.out.contains("optimizer.weight_decay               0.0\n"));  // a float stays a float
        const auto one = cli({"runs", "show", "1"});  // run 2's weights were deleted above
        QVERIFY2(one.out.contains("the final FP32 weights of step 12; runs export 1 --safetensors"),
                 one.out.constData());
        QVERIFY(!r.out.contains("final FP32 weights"));
    }

    void deleteEndsItsLines() {
        const auto del = cli({"runs", "delete", "1,2"});
        QVERIFY2(del.exit_code == 0, del.err.constData());
        QCOMPARE(del.out.count('\n'), 2);
        QVERIFY(del.out.endsWith("`runs purge`)\n"));
        const auto restore = cli({"runs", "restore", "1,2"});
        QCOMPARE(restore.out, QByteArray("run 1 restored\nrun 2 restored\n"));
    }
};

QTEST_GUILESS_MAIN(TestRunsExport)
#include "test_runs_export.moc"
