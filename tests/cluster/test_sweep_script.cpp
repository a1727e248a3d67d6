// The job-array script of `mpwb-cli sweep slurm` and the reading of Slurm's array job ids
// (app/cli/sweep_cluster.h), called directly, so they are checked on machines without Slurm too:
// the lines a requeue after SIGTERM needs, options present only when given, paths quoted for the
// shell, the test hold confined to one task's first attempt, and sacct's id forms.
#include <QtTest>

#include <string>
#include <vector>

#include "app/cli/sweep_cluster.h"

using mpwb::cli::array_indices_of;
using mpwb::cli::slurm_array_script;
using mpwb::cli::SlurmArraySettings;

namespace {

SlurmArraySettings settings() {
    SlurmArraySettings s;
    s.mpwb_cli = "/opt/mpwb/bin/mpwb-cli";
    s.out_dir = "/scratch/lr grid";
    s.sweep_uuid = "0b7e9a4c-2f5d-4c1e-9a3b-5d6e7f8a9b0c";
    s.run_count = 6;
    return s;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestSweepScript : public QObject {
    Q_OBJECT

private slots:
    void arrayRequeueAndSignalLines() {
        const std::string script = slurm_array_script(settings());
        QVERIFY(has(script, "#SBATCH --array=0-5\n"));
        QVERIFY(has(script, "#SBATCH --requeue\n"));
        QVERIFY(has(script, "#SBATCH --signal=TERM@120\n"));
        QVERIFY(has(script, "#SBATCH --open-mode=append\n"));
        QVERIFY(has(script, "#SBATCH --output=/scratch/lr grid/task_%a.log\n"));
        // The task is a job step, so --signal and scancel --signal reach it.
        QVERIFY(
            has(script, "srun --ntasks=1 \"$MPWB_CLI\" sweep task \"$SWEEP_DIR/spec.json\" --index \"$i\""));
        QVERIFY(has(script,
                    "--db \"$SWEEP_DIR/task_$i.sqlite\" --sweep-uuid 0b7e9a4c-2f5d-4c1e-9a3b-5d6e7f8a9b0c"));
        QVERIFY(has(script, "if [ \"$status\" -eq 75 ]; then"));
        QVERIFY(has(script, "scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\""));
        QVERIFY(has(script, "MPWB_CLI='/opt/mpwb/bin/mpwb-cli'\n"));
        QVERIFY(has(script, "SWEEP_DIR='/scratch/lr grid'\n"));
    }

    void slurmOptionsOnlyWhenGiven() {
        const std::string bare = slurm_array_script(settings());
        for (const char* option :
             {"--partition", "--gres", "--time=", "--cpus-per-task", "--checkpoint-every", "hold"})
            QVERIFY2(!has(bare, option), option);
        SlurmArraySettings s = settings();
        s.partition = "gpu";
        s.gres = "gpu:1";
        s.time = "1:00:00";
        s.cpus_per_task = 4;
        s.checkpoint_every = 50;
        const std::string script = slurm_array_script(s);
        QVERIFY(has(script, "#SBATCH --partition=gpu\n"));
        QVERIFY(has(script, "#SBATCH --gres=gpu:1\n"));
        QVERIFY(has(script, "#SBATCH --time=1:00:00\n"));
        QVERIFY(has(script, "#SBATCH --cpus-per-task=4\n"));
        // srun of Slurm 22.05 does not inherit --cpus-per-task from sbatch (man srun): it is repeated.
        QVERIFY(has(script, "srun --ntasks=1 --cpus-per-task=4 "));
        QVERIFY(has(script, " --checkpoint-every 50\n"));
    }

    void quotesAPathWithAQuote() {
        SlurmArraySettings s = settings();
        s.out_dir = "/scratch/it's";
        QVERIFY(has(slurm_array_script(s), "SWEEP_DIR='/scratch/it'\\''s'\n"));
    }

    void holdOnlyOnTheFirstAttemptOfOneTask() {
        SlurmArraySettings s = settings();
        s.hold_index = 1;
        s.hold_step = 40;
        const std::string script = slurm_array_script(s);
        QVERIFY(has(script,
                    "if [ \"$i\" -eq 1 ] && [ \"${SLURM_RESTART_COUNT:-0}\" -eq 0 ]; then "
                    "hold=(--hold-after-step 40); fi"));
        QVERIFY(has(script, "--index \"$i\" ${hold[@]+\"${hold[@]}\"}"));
    }

    void arrayIndicesOfSacctIds() {
        using V = std::vector<std::int64_t>;
        QCOMPARE(array_indices_of("12_3", "12"), V{3});
        QCOMPARE(array_indices_of("12_[0-2,5]", "12"), (V{0, 1, 2, 5}));
        QCOMPARE(array_indices_of("12_[4-5%2]", "12"), (V{4, 5}));  // %2: the throttle, not an index
        QCOMPARE(array_indices_of("123_3", "12"), V{});             // another job
        QCOMPARE(array_indices_of("12", "12"), V{});                // no array index
        QCOMPARE(array_indices_of("12_[5-2]", "12"), V{});
        QCOMPARE(array_indices_of("12_[0-2", "12"), V{});
        QCOMPARE(array_indices_of("12_x", "12"), V{});
    }
};

QTEST_APPLESS_MAIN(TestSweepScript)
#include "test_sweep_script.moc"
