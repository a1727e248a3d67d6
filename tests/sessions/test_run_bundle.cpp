// Tests of run bundles: export of chosen runs to a self-contained file plus CSV, import into a
// store whose ids clash (rows remapped, uuids kept, everything equal to the source), a second
// import skipped and reported, RUNNING runs arriving as INTERRUPTED, and refusal of files that
// are not bundles with a message naming the file; a bundle whose schema is not the store's (a
// view, a trigger, an object of its own), or whose text is not UTF-8, is refused before anything
// of it is read or imported, while bundles of earlier versions still import.
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "core/common/rng.h"
#include "test_support.h"

#include <filesystem>
#include <fstream>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

namespace {
std::int64_t make_run(const std::string& path, const std::string& name, int points, std::uint64_t seed,
                      bool finish = true) {
    std::int64_t id;
    {
        RunStore store(path);
        RunInfo info;
        info.name = name;
        info.precision = "fp16-mixed";
        info.config_json = R"({"lr":)" + std::to_string(seed) + "}";
        id = store.create_run(info);
        store.set_tag(id, "origin", name);
        store.set_note(id, "note of " + name);
    }
    RunWriter w(path, id);
    Rng rng(seed);
    for (int i = 0; i < points; ++i) {
        w.log_metric("loss", i, 1000 + i, rng.normal());
        w.log_metric("acc", i, 1000 + i, rng.uniform());
    }
    w.log_histogram(5, "fc1", "weight_grad", {1, 2, 3, static_cast<std::uint8_t>(seed)});
    w.log_event(7, 1007, "scaler", R"({"scale":1024})");
    if (finish) {
        w.finish(RunStatus::Finished);
    } else {
        w.flush();
    }
    return id;
}

std::size_t lines(const std::string& path) {
    std::ifstream f(path);
    std::size_t n = 0;
    std::string s;
    while (std::getline(f, s)) ++n;
    return n;
}
}  // namespace

class TestRunBundle : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string p(const char* name) { return dir_.filePath(name).toStdString(); }

private slots:
    void roundTrip() {
        const auto src_path = p("src.sqlite");
        const auto a = make_run(src_path, "a", 500, 1);
        const auto b = make_run(src_path, "b", 300, 2);
        const auto c = make_run(src_path, "c", 400, 3);
        RunStore src(src_path);
        src.create_group("a vs c", {a, c});
        src.create_group("b only", {b});
        src.set_boundary(a, 499, {9, 8, 7});

        const auto bundle = p("export.mpwb");
        const auto csv = p("csv");
        const auto res = export_bundle(src, {a, c}, bundle, {csv, false});
        QCOMPARE(res.runs, std::size_t(2));
        QVERIFY(is_run_bundle(bundle));
        QVERIFY(!std::filesystem::exists(bundle + "-wal"));
        QCOMPARE(lines(csv + "/runs.csv"), std::size_t(3));
        QCOMPARE(lines(csv + "/run_" + std::to_string(a) + ".csv"), std::size_t(1 + 2 * 500));
        QCOMPARE(lines(csv + "/run_" + std::to_string(c) + ".csv"), std::size_t(1 + 2 * 400));
        {
            Raw raw(bundle);
            QCOMPARE(raw.integer("SELECT count(*) FROM runs"), 2LL);
            QCOMPARE(raw.integer("SELECT count(*) FROM comparison_groups"), 1LL);
            QCOMPARE(raw.text("SELECT value FROM bundle_info WHERE key='format'"),
                     std::string("mpwb-run-bundle"));
        }
        EXPECT_STORE_ERROR(export_bundle(src, {a}, bundle), Kind::Invalid, "already exists");
        EXPECT_STORE_ERROR(export_bundle(src, {a, 999}, p("never.mpwb")), Kind::NotFound, "run 999");
        QVERIFY(!std::filesystem::exists(p("never.mpwb")));

        // The destination already has runs 1..2 (different uuids), so every id must move.
        const auto dst_path = p("dst.sqlite");
        make_run(dst_path, "x", 10, 9);
        make_run(dst_path, "y", 10, 8);
        RunStore dst(dst_path);
        const auto rep = import_bundle(dst, bundle);
        QCOMPARE(rep.imported.size(), std::size_t(2));
        QVERIFY(rep.skipped.empty());
        QCOMPARE(dst.list_runs().size(), std::size_t(4));
        for (const auto& imp : rep.imported) {
            QVERIFY(imp.store_id > 2);
            const Run s = src.get_run(imp.bundle_id);
            const Run d = dst.get_run(imp.store_id);
            QCOMPARE(d.uuid, s.uuid);
            QCOMPARE(imp.uuid, s.uuid);
            QCOMPARE(d.name, s.name);
            QCOMPARE(d.status, s.status);
            QCOMPARE(d.config_json, s.config_json);
            QCOMPARE(d.note, s.note);
            QCOMPARE(d.tags, s.tags);
            QCOMPARE(d.latest.at("loss").count, s.latest.at("loss").count);
            QCOMPARE(dst.boundary(imp.store_id), src.boundary(imp.bundle_id));  // run a's travels; c has none
            QCOMPARE(d.latest.at("loss").min, s.latest.at("loss").min);
            for (const char* key : {"loss", "acc"}) {
                const auto ss = src.series(imp.bundle_id, key), ds = dst.series(imp.store_id, key);
                QCOMPARE(ds.size(), ss.size());
                for (std::size_t i = 0; i < ss.size(); ++i) {
                    QCOMPARE(ds[i].step, ss[i].step);
                    QCOMPARE(ds[i].value, ss[i].value);
                }
                const auto sb = src.downsample(imp.bundle_id, key, 37),
                           db = dst.downsample(imp.store_id, key, 37);
                QCOMPARE(db.size(), sb.size());
                for (std::size_t i = 0; i < sb.size(); ++i) {
                    QCOMPARE(db[i].min, sb[i].min);
                    QCOMPARE(db[i].last, sb[i].last);
                    QCOMPARE(db[i].count, sb[i].count);
                }
            }
            QCOMPARE(dst.histograms(imp.store_id).front().blob, src.histograms(imp.bundle_id).front().blob);
            QCOMPARE(dst.events(imp.store_id).front().json, src.events(imp.bundle_id).front().json);
        }
        const auto groups = dst.list_groups();
        QCOMPARE(groups.size(), std::size_t(1));
        QCOMPARE(groups[0].name, std::string("a vs c"));
        std::vector<std::int64_t> expect_members;
        for (const auto& imp : rep.imported) expect_members.push_back(imp.store_id);
        std::sort(expect_members.begin(), expect_members.end());
        QCOMPARE(groups[0].run_ids, expect_members);

        // Again: nothing new, both reported as skipped with the run they match.
        Raw raw(dst_path);
        const auto metrics_before = raw.integer("SELECT count(*) FROM metrics");
        const auto again = import_bundle(dst, bundle);
        QVERIFY(again.imported.empty());
        QCOMPARE(again.skipped.size(), std::size_t(2));
        QCOMPARE(again.skipped[0].uuid, rep.imported[0].uuid);
        QCOMPARE(again.skipped[0].existing_id, rep.imported[0].store_id);
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics"), metrics_before);
        QCOMPARE(dst.list_runs().size(), std::size_t(4));
        QCOMPARE(dst.list_groups().size(), std::size_t(1));
    }

    void runningArrivesInterrupted() {
        const auto src_path = p("running_src.sqlite");
        const auto id = make_run(src_path, "live", 50, 4, false);
        RunStore src(src_path);
        QCOMPARE(src.get_run(id).status, RunStatus::Running);
        export_bundle(src, {id}, p("running.mpwb"));
        RunStore dst(p("running_dst.sqlite"));
        const auto rep = import_bundle(dst, p("running.mpwb"));
        const Run r = dst.get_run(rep.imported.at(0).store_id);
        QCOMPARE(r.status, RunStatus::Interrupted);
        QCOMPARE(*r.ended, 1049.0);  // the last metric's wall time
        QVERIFY(!r.owner_pid.has_value());
    }

    void notABundle() {
        RunStore dst(p("bad_dst.sqlite"));
        const auto id = dst.create_run(RunInfo{});
        const auto garbage = p("garbage.mpwb");
        testsupport::write_bytes(garbage, std::vector<char>(5000, 'x'));
        EXPECT_STORE_ERROR(import_bundle(dst, garbage), Kind::NotABundle,
                           garbage + " is not an MP Workbench run bundle");
        const auto text = p("notes.txt");
        testsupport::write_bytes(text, {'h', 'i', '\n'});
        EXPECT_STORE_ERROR(import_bundle(dst, text), Kind::NotABundle, "is not an MP Workbench run bundle");
        // A perfectly good run store is still not a bundle: it lacks the marker.
        const auto store_file = p("plain_store.sqlite");
        make_run(store_file, "z", 5, 6);
        EXPECT_STORE_ERROR(import_bundle(dst, store_file), Kind::NotABundle,
                           store_file + " is not an MP Workbench run bundle (no bundle marker)");
        EXPECT_STORE_ERROR(import_bundle(dst, p("absent.mpwb")), Kind::NotFound, "does not exist");
        EXPECT_STORE_ERROR(import_bundle(dst, dir_.path().toStdString()), Kind::NotABundle, "folder");
        QVERIFY(!is_run_bundle(garbage));
        QVERIFY(!is_run_bundle(store_file));
        const auto runs = dst.list_runs();
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs[0].id, id);
        QCOMPARE(testsupport::file_bytes(garbage), std::vector<char>(5000, 'x'));
    }

    // Issue 12, 3.4: a bundle carrying 100k-deep JSON imported, then crashed runs show, runs
    // compare and mpwb report. Every stored JSON text is checked at import; nothing is imported.
    void deepJsonBundleRefused() {
        const auto src = p("deep_src.sqlite");
        const auto id = make_run(src, "deep", 5, 9);
        const std::string deep = std::string(100000, '[') + std::string(100000, ']');
        for (const char* target : {"runs.network_json", "events.json"}) {
            const std::string bundle = p(target) + std::string(".mpwb");
            {
                RunStore store(src);
                export_bundle(store, {id}, bundle);
            }
            {
                Raw raw(bundle);
                const std::string table = std::string(target).substr(0, std::string(target).find('.'));
                const std::string column = std::string(target).substr(table.size() + 1);
                QCOMPARE(raw.exec("UPDATE " + table + " SET " + column + "='" + deep + "'"), SQLITE_OK);
            }
            RunStore dst(p(target) + std::string("_dst.sqlite"));
            EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::Invalid, "nested deeper than 64 levels");
            EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::Invalid, bundle);
            QVERIFY(dst.list_runs().empty());
        }
    }

    // Issue 12, 3.2: an export whose output is the database it reads deletes the database. Every
    // spelling of the same file is refused before anything is removed: the path itself, a
    // relative path, a symlink, a hard link, and the WAL beside it; the CSV files too.
    void exportOntoItsOwnDatabaseRefused() {
        namespace fs = std::filesystem;
        const auto db = p("self_export.sqlite");
        const auto id = make_run(db, "precious", 20, 8);
        const auto symlink = p("self_export_link.mpwb");
        const auto hardlink = p("self_export_hard.mpwb");
        fs::create_symlink(db, symlink);
        fs::create_hard_link(db, hardlink);
        const auto relative = fs::relative(db, fs::current_path()).string();
        RunStore store(db);
        BundleExportOptions force;
        force.overwrite = true;
        for (const std::string& out :
             {db, relative, p("sub/../self_export.sqlite"), symlink, hardlink, db + "-wal"}) {
            EXPECT_STORE_ERROR(export_bundle(store, {id}, out, force), Kind::Invalid,
                               "it is the run database " + db);
            QVERIFY2(fs::exists(db), out.c_str());
            QCOMPARE(store.get_run(id).name, std::string("precious"));
        }
        QVERIFY(fs::is_symlink(symlink));
        QVERIFY(fs::exists(hardlink));
        // The CSV folder holds the database under the name of the CSV index.
        const auto csv_dir = p("csv_clash");
        fs::create_directories(csv_dir);
        const auto db_in_csv_dir = csv_dir + "/runs.csv";
        make_run(db_in_csv_dir, "in the csv folder", 5, 9);
        RunStore csv_store(db_in_csv_dir);
        BundleExportOptions with_csv;
        with_csv.csv_dir = csv_dir;
        EXPECT_STORE_ERROR(export_bundle(csv_store, {1}, p("csv_clash.mpwb"), with_csv), Kind::Invalid,
                           "it is the run database " + db_in_csv_dir);
        QCOMPARE(csv_store.list_runs().size(), std::size_t(1));
    }

    // Issue 12, 3.9: importing a database (or a bundle opened as a store) into itself used to be
    // reported as "locked by another process".
    void selfImportNamesTheRealProblem() {
        const auto db = p("self_import.sqlite");
        const auto id = make_run(db, "x", 5, 10);
        RunStore store(db);
        export_bundle(store, {id}, p("self_import.mpwb"));
        EXPECT_STORE_ERROR(import_bundle(store, db), Kind::Invalid, "cannot import " + db + " into itself");
        RunStore bundle_as_store(p("self_import.mpwb"));
        EXPECT_STORE_ERROR(import_bundle(bundle_as_store, p("self_import.mpwb")), Kind::Invalid,
                           "into itself");
        QCOMPARE(store.list_runs().size(), std::size_t(1));
    }

    // Issue 12, 3.7: a damaged source is named as the source, a damaged bundle as the bundle;
    // the healthy file is never blamed.
    void corruptionBlamesTheDamagedFile() {
        const auto src = p("corrupt_src.sqlite");
        const auto id = make_run(src, "src", 3000, 11);
        QVERIFY(testsupport::damage_page_of(src, "metrics_series") > 0);
        {
            RunStore::Options ro;
            ro.read_only = true;
            RunStore store(src, ro);
            const auto out = p("from_corrupt.mpwb");
            EXPECT_STORE_ERROR(export_bundle(store, {id}, out), Kind::Corrupt,
                               "database " + src + " is corrupt");
            QVERIFY(!std::filesystem::exists(out));
        }
        const auto good = p("good_src.sqlite");
        const auto gid = make_run(good, "good", 3000, 12);
        const auto bundle = p("damaged.mpwb");
        {
            RunStore store(good);
            export_bundle(store, {gid}, bundle);
        }
        QVERIFY(testsupport::damage_page_of(bundle, "metrics_series") > 0);
        const auto target = p("healthy_target.sqlite");
        RunStore dst(target);
        bool thrown = false;
        try {
            import_bundle(dst, bundle);
        } catch (const StoreError& e) {
            thrown = true;
            const std::string msg = e.what();
            QVERIFY2(msg.find(bundle) != std::string::npos, e.what());
            QVERIFY2(msg.find(target) == std::string::npos, e.what());
            QVERIFY2(msg.find("corrupt") != std::string::npos || msg.find("damaged") != std::string::npos,
                     e.what());
        }
        QVERIFY(thrown);
        QVERIFY(dst.list_runs().empty());
    }

    // A bundle is data, not code (issue 24): a view, trigger, index or table of its own, or a
    // table defined otherwise than the store's, is refused by name before any of its tables is
    // read. A `runs` that was an endless recursive view passed the marker, integrity and JSON
    // checks' openings and then hung the import.
    void bundleSchemaMustBeTheStores_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("needle");
        QTest::newRow("runs as an endless view")
            << "ALTER TABLE runs RENAME TO runs_data; CREATE VIEW runs AS WITH RECURSIVE c(x) AS (SELECT 1 "
               "UNION ALL SELECT x + 1 FROM c) SELECT x AS id, 'u' || x AS uuid, '{}' AS config_json, "
               "'{}' AS network_json, '{}' AS versions_json FROM c"
            << "view 'runs'";
        QTest::newRow("trigger") << "CREATE TRIGGER t AFTER INSERT ON tags BEGIN SELECT 1; END"
                                 << "trigger 't' on table 'tags'";
        QTest::newRow("extra table") << "CREATE TABLE payload(x)"
                                     << "table 'payload'";
        QTest::newRow("extra index") << "CREATE INDEX by_value ON metrics(value)"
                                     << "index 'by_value'";
        QTest::newRow("missing table") << "DROP TABLE notes"
                                       << "lacks the table 'notes'";
        QTest::newRow("another version's tables") << "PRAGMA user_version=5"
                                                  << "not part of the run store's schema (version 5)";
    }
    void bundleSchemaMustBeTheStores() {
        QFETCH(QString, sql);
        QFETCH(QString, needle);
        const auto src = p("schema_src.sqlite");
        const auto id = make_run(src, "schema", 5, 21);
        const auto bundle = p("schema.mpwb");
        std::filesystem::remove(bundle);
        {
            RunStore store(src);
            export_bundle(store, {id}, bundle);
        }
        QCOMPARE(Raw(bundle).exec(sql.toStdString()), SQLITE_OK);
        RunStore dst(p("schema_dst.sqlite"));
        EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::NotABundle, needle.toStdString());
        EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::NotABundle,
                           bundle + " is not an MP Workbench run bundle");
        QVERIFY(!is_run_bundle(bundle));
        QVERIFY(dst.list_runs().empty());
    }

    // Bundles that earlier builds exported (schema 4, 6, 7 and 8: the fuzz seeds) still import:
    // each has exactly the store's schema of its version.
    void bundlesOfEarlierVersionsStillImport() {
        const std::string seeds = MPWB_SOURCE_DIR "/tests/fuzz/corpus/fuzz_bundle_import/";
        for (const char* name : {"spiral-5-steps.mpwb", "mxfp8-5-steps-scaling.mpwb", "sweep-2-runs.mpwb",
                                 "tiny-batchnorm-final-weights.mpwb"}) {
            const auto copy = p(name);
            std::filesystem::copy_file(seeds + name, copy, std::filesystem::copy_options::overwrite_existing);
            RunStore dst(p((std::string(name) + "_dst.sqlite").c_str()));
            const auto report = import_bundle(dst, copy);
            QVERIFY2(!report.imported.empty(), name);
        }
    }

    // Text a bundle carries is UTF-8, as the store's entry points require: a run name that was not
    // made `runs list --json` fail for the whole store once imported.
    void nonUtf8TextInABundleRefused_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("needle");
        QTest::newRow("run name") << "UPDATE runs SET name = CAST(x'41FF42' AS TEXT)"
                                  << "table runs, row with id 1, column name: byte 0xFF at offset 1";
        QTest::newRow("tag value") << "UPDATE tags SET value = CAST(x'C0AF' AS TEXT)"
                                   << "table tags, row with run_id 1, column value: byte 0xC0";
        QTest::newRow("note") << "UPDATE notes SET text = x'E282'"
                              << "table notes, row with run_id 1, column text";
        QTest::newRow("metric key") << "UPDATE latest_metrics SET key = CAST(x'ED' AS TEXT) WHERE key = 'acc'"
                                    << "table latest_metrics";
    }
    void nonUtf8TextInABundleRefused() {
        QFETCH(QString, sql);
        QFETCH(QString, needle);
        const auto src = p("utf8_src.sqlite");
        std::filesystem::remove(src);
        const auto id = make_run(src, "text", 5, 22);
        const auto bundle = p("utf8.mpwb");
        std::filesystem::remove(bundle);
        {
            RunStore store(src);
            export_bundle(store, {id}, bundle);
        }
        QCOMPARE(Raw(bundle).exec(sql.toStdString()), SQLITE_OK);
        RunStore dst(p("utf8_dst.sqlite"));
        EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::Invalid, needle.toStdString());
        EXPECT_STORE_ERROR(import_bundle(dst, bundle), Kind::Invalid, "nothing was imported");
        QVERIFY(dst.list_runs().empty());
    }

    // SQLite removes a file named like a database's companion (DB-journal, DB-wal, DB-shm) the next
    // time DB opens, or replays it into DB: an export there is refused before it is written.
    void exportToACompanionNameRefused() {
        const auto db = p("companion.sqlite");
        const auto id = make_run(db, "companion", 5, 23);
        RunStore store(db);
        for (const std::string out : {p("other.sqlite-journal"), p("x-wal"), p("y.mpwb-shm")}) {
            EXPECT_STORE_ERROR(export_bundle(store, {id}, out), Kind::Invalid,
                               "cannot write the bundle to " + out);
            QVERIFY(!std::filesystem::exists(out));
        }
    }
};

QTEST_APPLESS_MAIN(TestRunBundle)
#include "test_run_bundle.moc"
