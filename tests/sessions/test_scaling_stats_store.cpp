// Tests of the scaled recipes' statistics in the run store (schema 6): RunRecorder's
// on_scaling_stats rows read back by RunStore::scaling_stats in step, layer, operand order with
// every field intact; a database made at schema 5 migrates and keeps its rows; bundles carry the
// table, a bundle from schema 5 still imports, and a damaged row (in a bundle or in the store) is
// an error naming the file, the table and the field.
#include "sessions/run_bundle.h"
#include "sessions/run_recorder.h"
#include "sessions/run_store.h"
#include "sessions/store_schema.h"
#include "test_support.h"

#include <cmath>
#include <filesystem>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

namespace {

ScalingStatsRecord record(int64_t step, std::size_t layer, const std::string& operand, float amax) {
    ScalingStatsRecord r;
    r.step = step;
    r.layer = layer;
    r.layer_label = std::to_string(layer) + " Linear";
    r.stats.operand = operand;
    r.stats.element = operand == "dy" ? Format::E5M2 : Format::E4M3;
    r.stats.amax = amax;
    r.stats.scale = 448.0f / amax;
    r.stats.values = 4096;
    r.stats.underflow_fraction = 0.125;
    r.stats.saturate_fraction = 0.0625;
    r.stats.sqnr_db = 31.5;
    r.stats.blocks = 128;
    r.stats.clipped_blocks = 3;
    r.stats.block_exponent_min = -7;
    r.stats.block_exponent_counts = {0, 5, 100, 23};
    return r;
}

// Records a run through RunRecorder with the given records, fed out of order on purpose.
std::int64_t record_run(const std::string& path, const std::vector<ScalingStatsRecord>& records) {
    RunRecorder::Options o;
    o.db_path = path;
    RunRecorder recorder(o);
    RunStartInfo info;
    info.precision = "mxfp8";
    info.dataset = "spiral";
    recorder.on_run_start(info);
    for (const auto& r : records) recorder.on_scaling_stats(r);
    RunSummary summary;
    summary.status = RunStatus::Finished;
    recorder.on_run_end(summary);
    if (!recorder.complete()) qFatal("recording failed: %s", recorder.error().c_str());
    return recorder.run_id();
}

const std::vector<ScalingStatsRecord>& sample_records() {
    static const std::vector<ScalingStatsRecord> records = {
        record(20, 1, "x", 3.0f), record(10, 3, "w", 0.5f), record(10, 1, "x", 2.0f),
        record(10, 1, "dy", 1e-3f), record(20, 1, "dy", 2e-3f)};
    return records;
}

void compare_records(const ScalingStatsRecord& got, const ScalingStatsRecord& want) {
    QCOMPARE(got.step, want.step);
    QCOMPARE(got.layer, want.layer);
    QCOMPARE(got.layer_label, want.layer_label);
    QCOMPARE(got.stats.operand, want.stats.operand);
    QCOMPARE(got.stats.element, want.stats.element);
    QCOMPARE(got.stats.amax, want.stats.amax);
    QCOMPARE(got.stats.scale, want.stats.scale);
    QCOMPARE(got.stats.values, want.stats.values);
    QCOMPARE(got.stats.underflow_fraction, want.stats.underflow_fraction);
    QCOMPARE(got.stats.saturate_fraction, want.stats.saturate_fraction);
    QCOMPARE(got.stats.sqnr_db, want.stats.sqnr_db);
    QCOMPARE(got.stats.blocks, want.stats.blocks);
    QCOMPARE(got.stats.clipped_blocks, want.stats.clipped_blocks);
    QCOMPARE(got.stats.block_exponent_min, want.stats.block_exponent_min);
    QCOMPARE(got.stats.block_exponent_counts, want.stats.block_exponent_counts);
}

// The sample records in the order scaling_stats promises: step, layer, operand.
std::vector<ScalingStatsRecord> sorted_sample() {
    auto want = sample_records();
    std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
        return std::tie(a.step, a.layer, a.stats.operand) < std::tie(b.step, b.layer, b.stats.operand);
    });
    return want;
}

}  // namespace

class TestScalingStatsStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh(const char* stem, const char* ext = "sqlite") {
        return dir_.filePath(QString("%1_%2.%3").arg(stem).arg(++n_).arg(ext)).toStdString();
    }

    void expectSampleRows(RunStore& store, std::int64_t run) {
        const auto got = store.scaling_stats(run);
        const auto want = sorted_sample();
        QCOMPARE(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i) compare_records(got[i], want[i]);
    }

private slots:
    void recordedRowsReadBackInOrder() {
        const auto path = fresh("recorded");
        const auto run = record_run(path, sample_records());
        RunStore store(path);
        QCOMPARE(store.opened_schema_version(), schema_version());
        expectSampleRows(store, run);
        QVERIFY(store.scaling_stats(run + 1).empty());
    }

    // Schema 9: each row's recipe, what-if mark and 4-over-6 count survive the store; a damaged
    // what_if value or a count above the blocks is an error naming the table and the field.
    void recipeColumnsReadBack() {
        auto own = record(2, 0, "x", 1.0f);
        own.stats.recipe = "nvfp4";
        own.stats.blocks_scaled_to_4 = 17;
        auto what_if = record(2, 0, "x", 1.0f);
        what_if.stats.recipe = "mxfp8";
        what_if.stats.what_if = true;
        const auto path = fresh("recipe");
        const auto run = record_run(path, {own, what_if});
        {
            const auto got = RunStore(path).scaling_stats(run);
            QCOMPARE(got.size(), std::size_t(2));
            QCOMPARE(got[0].stats.recipe, std::string("nvfp4"));
            QVERIFY(!got[0].stats.what_if);
            QCOMPARE(got[0].stats.blocks_scaled_to_4, int64_t{17});
            QCOMPARE(got[1].stats.recipe, std::string("mxfp8"));
            QVERIFY(got[1].stats.what_if);
            QCOMPARE(got[1].stats.blocks_scaled_to_4, int64_t{0});
        }
        for (const char* damage :
             {"UPDATE scaling_stats SET what_if=7", "UPDATE scaling_stats SET blocks_scaled_to_4=999"}) {
            {
                Raw raw(path);
                QCOMPARE(raw.exec(damage), SQLITE_OK);
            }
            try {
                (void)RunStore(path).scaling_stats(run);
                QFAIL("a damaged row was read");
            } catch (const StoreError& e) {
                const QString m = e.what();
                QVERIFY2(m.contains("scaling_stats") &&
                             (m.contains("what_if") || m.contains("blocks_scaled_to_4")),
                         qPrintable(m));
            }
            Raw(path).exec("UPDATE scaling_stats SET what_if=0, blocks_scaled_to_4=0");
        }
    }

    void perTensorRowsHaveNoHistogram() {
        auto r = record(1, 0, "x", 1.0f);
        r.stats.blocks = 0;
        r.stats.clipped_blocks = 0;
        r.stats.block_exponent_counts.clear();
        r.stats.sqnr_db = std::numeric_limits<double>::quiet_NaN();
        const auto path = fresh("per_tensor");
        const auto run = record_run(path, {r});
        const auto got = RunStore(path).scaling_stats(run);
        QCOMPARE(got.size(), std::size_t(1));
        QVERIFY(got[0].stats.block_exponent_counts.empty());
        QVERIFY(std::isnan(got[0].stats.sqnr_db));
    }

    // A database written at schema 5 (the migrations up to it, as released) opens, migrates and
    // keeps its runs; a run recorded afterwards stores scaling statistics in the same file.
    void migrationFromVersion5() {
        const auto path = fresh("v5");
        {
            Raw raw(path);
            QCOMPARE(raw.exec("PRAGMA journal_mode=WAL"), SQLITE_OK);
            for (int v = 0; v < 5; ++v)
                QCOMPARE(raw.exec(schema_migrations()[static_cast<std::size_t>(v)]), SQLITE_OK);
            QCOMPARE(
                raw.exec(
                    "PRAGMA user_version=5;"
                    "INSERT INTO runs(id, uuid, name, status, created) VALUES(1,'u1','old','FINISHED',1);"
                    "INSERT INTO metrics(run_id, key, step, wall_time, value) VALUES(1,'loss',0,1,0.5);"),
                SQLITE_OK);
        }
        {
            // A read-only open (the report's) does not migrate: no table, no statistics, no error.
            RunStore::Options read_only;
            read_only.read_only = true;
            read_only.create = false;
            RunStore store(path, read_only);
            QVERIFY(store.scaling_stats(1).empty());
        }
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), 5LL);
        {
            RunStore store(path);
            QCOMPARE(store.opened_schema_version(), 5);
            QCOMPARE(store.get_run(1).name, std::string("old"));
            QVERIFY(store.scaling_stats(1).empty());
        }
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), static_cast<long long>(schema_version()));
        const auto run = record_run(path, sample_records());
        RunStore store(path);
        expectSampleRows(store, run);
        QCOMPARE(store.series(1, "loss").size(), std::size_t(1));
    }

    void purgeRemovesTheRows() {
        const auto path = fresh("purge");
        const auto run = record_run(path, sample_records());
        RunStore store(path);
        store.soft_delete(run);
        QCOMPARE(store.purge().purged, 1);
        QCOMPARE(Raw(path).integer("SELECT count(*) FROM scaling_stats"), 0LL);
    }

    void bundleCarriesTheTable() {
        const auto source = fresh("source");
        const auto run = record_run(source, sample_records());
        const auto bundle = fresh("bundle", "mpwb");
        {
            RunStore store(source);
            export_bundle(store, {run}, bundle);
        }
        const auto target = fresh("target");
        RunStore store(target);
        store.create_run(RunInfo{});  // ids clash: the imported run gets a new one
        const auto report = import_bundle(store, bundle);
        QCOMPARE(report.imported.size(), std::size_t(1));
        QVERIFY(report.imported[0].store_id != run);
        expectSampleRows(store, report.imported[0].store_id);
    }

    // A bundle exported before schema 6 has no scaling_stats table; it still imports.
    void bundleFromVersion5Imports() {
        const auto source = fresh("source");
        const auto run = record_run(source, {});
        const auto bundle = fresh("old_bundle", "mpwb");
        {
            RunStore store(source);
            export_bundle(store, {run}, bundle);
        }
        // Exactly schema 5: an import refuses tables its version does not have (issue 24).
        QCOMPARE(
            Raw(bundle).exec("DROP TABLE scaling_stats; DROP TABLE checkpoints; DROP TABLE sweep_runs; "
                             "DROP TABLE sweeps; DROP TABLE final_weight_tensors; DROP TABLE final_weights; "
                             "PRAGMA user_version=5"),
            SQLITE_OK);
        RunStore store(fresh("target"));
        const auto report = import_bundle(store, bundle);
        QCOMPARE(report.imported.size(), std::size_t(1));
        QVERIFY(store.scaling_stats(report.imported[0].store_id).empty());
    }

    void damagedBundleRowsAreRefusedByName_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("problem");
        QTest::newRow("blob cut") << "block_exponent_counts = x'0102030405'"
                                  << "block_exponent_counts"
                                  << "5 bytes is not a whole number of 8-byte counts";
        QTest::newRow("negative count") << "block_exponent_counts = x'FFFFFFFFFFFFFFFF'"
                                        << "block_exponent_counts"
                                        << "negative count";
        QTest::newRow("huge blob") << "block_exponent_counts = zeroblob(8 * 100000)"
                                   << "block_exponent_counts"
                                   << "100000 bins";
        QTest::newRow("not a blob") << "block_exponent_counts = 'text'"
                                    << "block_exponent_counts"
                                    << "4 bytes";
        QTest::newRow("format") << "element = 'e9m9'"
                                << "element"
                                << "e9m9";
        QTest::newRow("layer") << "layer = -4"
                               << "layer"
                               << "-4 is negative";
        QTest::newRow("exponent") << "block_exponent_min = 9000000000"
                                  << "block_exponent_min"
                                  << "outside";
    }

    void damagedBundleRowsAreRefusedByName() {
        QFETCH(QString, damage);
        QFETCH(QString, field);
        QFETCH(QString, problem);
        const auto source = fresh("source");
        const auto run = record_run(source, sample_records());
        const auto bundle = fresh("damaged", "mpwb");
        {
            RunStore store(source);
            export_bundle(store, {run}, bundle);
        }
        QCOMPARE(Raw(bundle).exec("UPDATE scaling_stats SET " + damage.toStdString() +
                                  " WHERE step = 10 AND layer = 3"),
                 SQLITE_OK);
        const auto target = fresh("target");
        RunStore store(target);
        try {
            import_bundle(store, bundle);
            QFAIL("a damaged scaling_stats row was imported");
        } catch (const StoreError& e) {
            const QString message = e.what();
            QVERIFY2(message.contains(QString::fromStdString(bundle)), qPrintable(message));
            QVERIFY2(message.contains("table scaling_stats"), qPrintable(message));
            QVERIFY2(message.contains("field " + field), qPrintable(message));
            QVERIFY2(message.contains(problem), qPrintable(message));
            QVERIFY2(message.contains("nothing was imported"), qPrintable(message));
        }
        QVERIFY(store.list_runs().empty());
    }

    // Damage inside a store (written behind its back) is a Corrupt error naming the file and the
    // field, for every reader (runs show, the report, the GUI).
    void damagedStoreRowIsCorruptByName() {
        const auto path = fresh("damaged_store");
        const auto run = record_run(path, sample_records());
        QCOMPARE(Raw(path).exec("UPDATE scaling_stats SET block_exponent_counts = x'01' WHERE layer = 3"),
                 SQLITE_OK);
        RunStore store(path);
        try {
            (void)store.scaling_stats(run);
            QFAIL("a damaged row was read");
        } catch (const StoreError& e) {
            QCOMPARE(e.kind(), Kind::Corrupt);
            const QString message = e.what();
            QVERIFY2(message.contains(QString::fromStdString(path)), qPrintable(message));
            QVERIFY2(message.contains("table scaling_stats, row"), qPrintable(message));
            QVERIFY2(message.contains("field block_exponent_counts"), qPrintable(message));
        }
    }
};

QTEST_GUILESS_MAIN(TestScalingStatsStore)
#include "test_scaling_stats_store.moc"
