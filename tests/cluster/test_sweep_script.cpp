// The job-array script of `mpwb-cli sweep slurm` and the reading of Slurm's array job ids
// (app/cli/sweep_cluster.h), called directly, so they are checked on machines without Slurm too:
// the lines a requeue after SIGTERM needs, options present only when given, paths quoted for the
// shell and escaped for sbatch (tests/cluster/script_words.h reads them as bash and sbatch do),
// values no line can hold refused, the test hold confined to one task's first attempt, and
// sacct's id forms.
#include <QtTest>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/sweep_cluster.h"
#include "core/common/error.h"
#include "tests/cluster/script_words.h"

using mpwb::cli::array_indices_of;
using mpwb::cli::slurm_array_script;
using mpwb::cli::SlurmArraySettings;
using mpwb::test::sbatch_arguments;
using mpwb::test::shell_words;
using mpwb::test::ShellLine;

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

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::optional<std::string> line_starting(const std::vector<std::string>& lines, const std::string& start) {
    for (const auto& line : lines)
        if (line.rfind(start, 0) == 0) return line;
    return std::nullopt;
}

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
        QVERIFY(has(script, "#SBATCH --output=\"/scratch/lr grid/task_%a.log\"\n"));
        // The task is a job step, so --signal and scancel --signal reach it.
        QVERIFY(
            has(script, "srun --ntasks=1 \"$MPWB_CLI\" sweep task \"$SWEEP_DIR/spec.json\" --index \"$i\""));
        QVERIFY(
            has(script,
                "--db \"$SWEEP_DIR/task_$i.sqlite\" --sweep-uuid '0b7e9a4c-2f5d-4c1e-9a3b-5d6e7f8a9b0c'"));
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
        QVERIFY(has(script, "#SBATCH --partition=\"gpu\"\n"));
        QVERIFY(has(script, "#SBATCH --gres=\"gpu:1\"\n"));
        QVERIFY(has(script, "#SBATCH --time=\"1:00:00\"\n"));
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

    // Issue 24: a folder name with a space, quotes, '#', '%', '$' and backquotes. sbatch reads
    // the --output line as one argument, the folder with its '%' doubled (Slurm's file name
    // pattern reads %% as %); bash reads SWEEP_DIR as one word, expanding nothing; the comment
    // stays one line.
    void oddFolderNamesStayOneWord() {
        const std::vector<std::string> folders = {"/scratch/lr grid",
                                                  "/scratch/it's \"x\"",
                                                  "/scratch/#not a comment",
                                                  "/scratch/100% %a %j %%",
                                                  "/scratch/$(touch pwned) `id` ${HOME} ;&|<>()",
                                                  "/scratch/\xe2\x80\xa2 \xff"};
        for (const std::string& folder : folders) {
            SlurmArraySettings s = settings();
            s.out_dir = folder;
            const std::vector<std::string> lines = lines_of(slurm_array_script(s));
            std::string pattern;
            for (char c : folder) pattern += c == '%' ? std::string("%%") : std::string(1, c);
            const auto output = line_starting(lines, "#SBATCH --output=");
            QVERIFY2(output, folder.c_str());
            const auto arguments = sbatch_arguments(output->substr(7));
            QVERIFY2(arguments, output->c_str());
            QVERIFY2(*arguments == std::vector<std::string>{"--output=" + pattern + "/task_%a.log"},
                     output->c_str());
            const auto dir_line = line_starting(lines, "SWEEP_DIR=");
            QVERIFY2(dir_line, folder.c_str());
            const ShellLine words = shell_words(*dir_line);
            QVERIFY2(words.complete && !words.has_operator && words.words.size() == 1, dir_line->c_str());
            QVERIFY2(!words.words[0].expands, dir_line->c_str());
            QCOMPARE(words.words[0].text, "SWEEP_DIR=" + folder);
            QCOMPARE(lines.size(), lines_of(slurm_array_script(settings())).size());
        }
    }

    // A control character in the folder or the program's path (a newline would add a line that
    // every task runs), a backslash in the folder (it turns off Slurm's %a), and "hetjob" or
    // "packjob" on an #SBATCH line (sbatch starts another job there) are refused, naming the
    // option.
    void unwritableValuesAreRefused() {
        const auto refused = [](SlurmArraySettings s, const std::string& needle) {
            try {
                (void)slurm_array_script(s);
            } catch (const mpwb::Error& e) {
                const std::string message = e.what();
                if (message.find(needle) != std::string::npos && message.find('\n') == std::string::npos)
                    return true;
                qWarning("message: %s", e.what());
            }
            return false;
        };
        for (const char* control : {"\n", "\r", "\t", "\x1b", "\x7f", "\v"}) {
            SlurmArraySettings s = settings();
            s.out_dir = std::string("/scratch/a") + control + "touch pwned";
            QVERIFY2(refused(s, "--out: \"/scratch/a"), control);
            QVERIFY(refused(s, "control character"));
            s = settings();
            s.mpwb_cli = std::string("/opt/mpwb") + control + "/mpwb-cli";
            QVERIFY2(refused(s, "the program's path"), control);
        }
        SlurmArraySettings s = settings();
        s.out_dir = "/scratch/a\\b";
        QVERIFY(refused(s, "--out: \"/scratch/a\\\\b\" has a backslash"));
        s.out_dir = "/scratch/HetJob";
        QVERIFY(refused(s, "\"hetjob\""));
        s.out_dir = "/scratch/old packjob";
        QVERIFY(refused(s, "\"packjob\""));
        s = settings();
        s.partition = "hetjob";
        QVERIFY(refused(s, "--partition"));
        s = settings();
        s.sweep_uuid = "x; touch pwned";
        QVERIFY(refused(s, "is not a uuid"));
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
