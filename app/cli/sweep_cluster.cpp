// mpwb-cli sweep slurm / sweep status: a sweep as a Slurm job array (docs/SLURM.md).
//
// The folder `sweep slurm --out DIR` writes:
//   spec.json          the spec the tasks read: a copy with the sweep's uuid, so later edits of
//                      the original cannot change the tasks
//   sweep_slurm.json   the sweep's uuid and run count (read by `sweep status`)
//   sweep.sbatch       the job-array script, one array task per planned run
//   job_id             the array's job id, after --submit
//   task_<i>.sqlite    each task's database; task_<i>.log its output (written by the tasks)
// No file there is ever overwritten: a folder that already holds a sweep is refused.
#include "app/cli/sweep_cluster.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/option_checks.h"
#include "app/cli/resumable_training.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "sessions/run_store.h"
#include "sessions/sweep_spec.h"

extern char** environ;

namespace mpwb::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kScriptName = "sweep.sbatch";
constexpr const char* kInfoName = "sweep_slurm.json";
constexpr const char* kSpecName = "spec.json";
constexpr const char* kJobIdName = "job_id";

// ---- running the Slurm client programs ----------------------------------------------------

struct ProgramResult {
    bool found = true;  // false: the program is not on PATH
    int exit_code = 0;
    std::string output;  // stdout and stderr together
};

// Runs the program (looked up on PATH) with its stdout and stderr captured.
ProgramResult run_program(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) throw Error(std::string("cannot make a pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawn_error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    ProgramResult result;
    if (spawn_error != 0) {
        close(fds[0]);
        if (spawn_error == ENOENT) return ProgramResult{false, 127, {}};
        throw Error("cannot start " + args[0] + ": " + std::strerror(spawn_error));
    }
    char buffer[4096];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        result.output.append(buffer, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// ---- files of the sweep folder --------------------------------------------------------------

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Creates the file; refuses (never overwrites) one that exists.
void write_new_file(const fs::path& path, const std::string& text, fs::perms perms = fs::perms::none) {
    std::FILE* f = std::fopen(path.c_str(), "wx");
    if (!f)
        throw Error(
            "cannot create " + path.string() + ": " +
            (errno == EEXIST ? std::string("it exists, and nothing is overwritten") : std::strerror(errno)));
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !written)
        throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
    if (perms != fs::perms::none) fs::permissions(path, perms, fs::perm_options::add);
}

std::string new_uuid() {
    // The kernel's random uuid: a sweep runs on Slurm, which is Linux only.
    std::string uuid = first_line(read_text("/proc/sys/kernel/random/uuid"));
    if (uuid.size() != 36) throw Error("/proc/sys/kernel/random/uuid gave no uuid");
    return uuid;
}

std::string this_program() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw Error("cannot find this program's path (/proc/self/exe): " + ec.message());
    return exe.string();
}

// A text as an error message shows it: in double quotes, a control character as \n or \u00XX,
// bytes that are not UTF-8 replaced, so the message itself cannot break a line or a terminal.
std::string shown(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Quotes text for bash: single quotes, with embedded ones closed and escaped. Every value of the
// script's shell lines goes through here.
std::string shell_quote(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// Refuses a value with a control character: a newline would end its line of the script and
// start another, which every task would run.
void refuse_control_characters(const std::string& what, const std::string& value) {
    for (unsigned char c : value)
        if (c < 0x20 || c == 0x7F)
            throw Error(what + ": " + shown(value) +
                        " has a control character, which a line of the sbatch script cannot hold; "
                        "nothing was written");
}

// One #SBATCH line. sbatch reads these itself, not the shell (Slurm's src/sbatch/opt.c,
// _get_argument): whitespace ends an argument unless quoted (a backslash before it does not
// help), '"' and '\'' quote, a backslash takes the next character as it is, an unquoted '#'
// starts a comment, and "hetjob" or "packjob" (any case) anywhere in the line starts another
// component of a heterogeneous job. So the value goes in double quotes with '"' and '\'
// escaped, and those two words are refused. `what` names the option of ours it came from.
std::string sbatch_line(const std::string& option, const std::string& value, const std::string& what) {
    refuse_control_characters(what, value);
    std::string lower = value;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* word : {"hetjob", "packjob"})
        if (lower.find(word) != std::string::npos)
            throw Error(what + ": " + shown(value) + " holds \"" + word +
                        "\", which sbatch reads in an #SBATCH " + option +
                        " line as the start of another job; nothing was written");
    std::string quoted = "\"";
    for (char c : value) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    return "#SBATCH " + option + "=" + quoted + "\"\n";
}

// A folder as the start of a Slurm file name pattern (--output): '%' doubled, since Slurm
// replaces %a, %j, ... and reads %% as '%'. A backslash is refused: anywhere in the pattern it
// turns every replacement off, so %a would not become the task's index.
std::string slurm_pattern_folder(const std::string& folder, const std::string& what) {
    if (folder.find('\\') != std::string::npos)
        throw Error(what + ": " + shown(folder) +
                    " has a backslash, which turns off the %a of the tasks' log file names "
                    "(#SBATCH --output); nothing was written");
    std::string pattern;
    for (char c : folder) pattern += c == '%' ? std::string("%%") : std::string(1, c);
    return pattern;
}

// A Slurm option value goes into an #SBATCH line, which the shell does not read: it must be one
// word of the characters Slurm's names and times use.
void check_slurm_value(const std::string& option, const std::string& value, const std::string& extra_chars) {
    for (char c : value)
        if (!std::isalnum(static_cast<unsigned char>(c)) && extra_chars.find(c) == std::string::npos)
            throw Error(option + ": '" + value + "' has the character '" + std::string(1, c) +
                        "', which a Slurm " + option.substr(2) + " never has");
}

// Tests only (--hold-task): the hold applies to the first attempt, so the requeued task runs on.
// (${hold[@]+"${hold[@]}"} below: an empty array under set -u, which bash before 4.4 refuses.)
std::string hold_lines(const SlurmArraySettings& s) {
    if (!s.hold_index || !s.hold_step) return {};
    return "hold=()\nif [ \"$i\" -eq " + std::to_string(*s.hold_index) +
           " ] && [ \"${SLURM_RESTART_COUNT:-0}\" -eq 0 ]; then hold=(--hold-after-step " +
           std::to_string(*s.hold_step) + "); fi\n";
}

}  // namespace

// ---- the script ---------------------------------------------------------------------------------

std::string slurm_array_script(const SlurmArraySettings& s) {
    // Every text is checked before any line is written: a value the script cannot hold is an
    // Error naming the option it came from.
    refuse_control_characters("the program's path", s.mpwb_cli);
    refuse_control_characters("--out", s.out_dir);
    static const std::regex uuid_form("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    if (!std::regex_match(s.sweep_uuid, uuid_form))
        throw Error("sweep uuid " + shown(s.sweep_uuid) + " is not a uuid");
    const std::string log_pattern = slurm_pattern_folder(s.out_dir, "--out") + "/task_%a.log";
    std::string options = sbatch_line("--output", log_pattern, "--out");
    if (!s.partition.empty()) options += sbatch_line("--partition", s.partition, "--partition");
    if (!s.gres.empty()) options += sbatch_line("--gres", s.gres, "--gres");
    if (!s.time.empty()) options += sbatch_line("--time", s.time, "--time");
    if (s.cpus_per_task) options += "#SBATCH --cpus-per-task=" + std::to_string(*s.cpus_per_task) + "\n";

    std::ostringstream out;
    out << "#!/bin/bash\n"
        << "# Written by `mpwb-cli sweep slurm`: sweep " << s.sweep_uuid << ", " << s.run_count
        << " runs, one array task each. Submit with: sbatch "
        << shell_quote((fs::path(s.out_dir) / kScriptName).string()) << "\n"
        << "#SBATCH --job-name=mpwb-sweep\n"
        << "#SBATCH --array=0-" << s.run_count - 1
        << "\n"
        // Requeued after a preemption or a checkpoint on SIGTERM, the task starts again.
        << "#SBATCH --requeue\n"
        // SIGTERM to the job steps (srun below, not this shell) 120 s before the time limit: the
        // run checkpoints and the task requeues itself.
        << "#SBATCH --signal=TERM@120\n"
        // Appended, so a requeued task keeps the log of its earlier attempts.
        << "#SBATCH --open-mode=append\n"
        << options;
    const std::string checkpoints =
        s.checkpoint_every ? " --checkpoint-every " + std::to_string(*s.checkpoint_every) : "";
    const std::string srun_cpus =
        s.cpus_per_task ? " --cpus-per-task=" + std::to_string(*s.cpus_per_task) : "";
    out << "set -u\n"
        << "MPWB_CLI=" << shell_quote(s.mpwb_cli) << "\n"
        << "SWEEP_DIR=" << shell_quote(s.out_dir) << "\n"
        << "i=$SLURM_ARRAY_TASK_ID\n"
        << hold_lines(s)
        << "echo \"mpwb sweep task $i (restart ${SLURM_RESTART_COUNT:-0}) on $(hostname) at $(date)\"\n"
        // Under srun, the task is a job step: scancel --signal=TERM and --signal reach it.
        << "srun --ntasks=1" << srun_cpus << " \"$MPWB_CLI\" sweep task \"$SWEEP_DIR/" << kSpecName
        << "\" --index \"$i\"" << (s.hold_index ? " ${hold[@]+\"${hold[@]}\"}" : "") << " \\\n"
        << "    --db \"$SWEEP_DIR/task_$i.sqlite\" --sweep-uuid " << shell_quote(s.sweep_uuid) << checkpoints
        << "\n"
        << "status=$?\n"
        << "if [ \"$status\" -eq " << kExitResumable << " ]; then\n"
        << "  # Checkpointed on SIGTERM: back into the queue; the next start resumes the run.\n"
        << "  echo \"mpwb sweep task $i checkpointed; requeueing "
           "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"
        << "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\" && exit 0\n"
        << "  echo \"mpwb sweep task $i: scontrol requeue failed\" >&2\n"
        << "fi\n"
        << "exit \"$status\"\n";
    return out.str();
}

std::vector<std::int64_t> array_indices_of(const std::string& slurm_job_id, const std::string& array_job_id) {
    const std::string prefix = array_job_id + "_";
    if (slurm_job_id.compare(0, prefix.size(), prefix) != 0) return {};
    std::string rest = slurm_job_id.substr(prefix.size());
    if (!rest.empty() && rest.front() == '[') {
        const auto close = rest.find(']');
        if (close == std::string::npos) return {};
        rest = rest.substr(1, close - 1);
        rest = rest.substr(0, rest.find('%'));  // "%2": the array's throttle, not an index
    }
    std::vector<std::int64_t> indices;
    static const std::regex item(R"((\d+)(?:-(\d+))?)");
    std::stringstream items(rest);
    for (std::string part; std::getline(items, part, ',');) {
        std::smatch m;
        if (!std::regex_match(part, m, item)) return {};
        const std::int64_t lo = std::stoll(m[1]), hi = m[2].matched ? std::stoll(m[2]) : lo;
        if (hi < lo || hi - lo > 1'000'000) return {};
        for (std::int64_t i = lo; i <= hi; ++i) indices.push_back(i);
    }
    return indices;
}

namespace {

// ---- sweep slurm ------------------------------------------------------------------------------

struct SlurmArgs {
    std::string spec, out, partition, gres, time;
    std::optional<int> cpus_per_task;
    std::optional<std::int64_t> checkpoint_every;
    bool submit = false;
    std::string hold_task;  // tests only: "INDEX:STEP"
};

// "INDEX:STEP" of --hold-task, the index within the sweep.
void parse_hold_task(const std::string& text, std::int64_t run_count, SlurmArraySettings& s) {
    static const std::regex form(R"((\d{1,9}):(\d{1,12}))");
    std::smatch m;
    if (!std::regex_match(text, m, form))
        throw Error("--hold-task: '" + text + "' is not INDEX:STEP (two whole numbers)");
    s.hold_index = std::stoll(m[1]);
    s.hold_step = std::stoll(m[2]);
    if (*s.hold_index >= run_count || *s.hold_step < 1)
        throw Error("--hold-task: index " + m[1].str() + " is not one of the sweep's " +
                    std::to_string(run_count) + " runs, or step " + m[2].str() + " is not at least 1");
}

// Refuses a folder that already holds a sweep; creates it when missing.
void prepare_out_dir(const fs::path& dir) {
    const auto refuse = [](const fs::path& path) {
        throw Error(
            "--out: " + path.string() +
            " exists: the folder already holds a sweep; choose another folder (nothing was overwritten)");
    };
    for (const char* name : {kScriptName, kInfoName, kSpecName, kJobIdName})
        if (fs::exists(dir / name)) refuse(dir / name);
    // The databases and logs of an earlier sweep's tasks: new tasks would write into them.
    if (fs::is_directory(dir))
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.path().filename().string().rfind("task_", 0) == 0) refuse(entry.path());
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("--out: cannot create " + dir.string() + ": " + ec.message());
}

// The spec the tasks read: as written, with the sweep's uuid, and a preset file's content in
// place of its name (self_contained_sweep_spec), so that editing the file later changes nothing.
nlohmann::json task_spec(const SweepSpec& spec, const std::string& uuid) {
    nlohmann::json copy = self_contained_sweep_spec(spec);
    copy["uuid"] = uuid;
    return copy;
}

// Runs sbatch on the script and returns the job id it reports.
std::string submit_script(const fs::path& script) {
    const ProgramResult r = run_program({"sbatch", script.string()});
    if (!r.found)
        throw Error("sbatch is not on PATH: submit from a Slurm login node (the script is " +
                    script.string() + ")");
    if (r.exit_code != 0)
        throw Error("sbatch " + script.string() + " failed (exit status " + std::to_string(r.exit_code) +
                    "): " + r.output);
    static const std::regex submitted(R"(Submitted batch job (\d+))");
    std::smatch m;
    if (!std::regex_search(r.output, m, submitted))
        throw Error("sbatch did not say which job it submitted: " + r.output);
    return m[1];
}

// The script's settings from the command line; checked before anything is written.
SlurmArraySettings array_settings(const SlurmArgs& args, const fs::path& dir, std::int64_t run_count) {
    check_slurm_value("--partition", args.partition, "_-.,");
    check_slurm_value("--gres", args.gres, "_-.,:");
    check_slurm_value("--time", args.time, ":-");
    SlurmArraySettings s;
    s.mpwb_cli = this_program();
    s.out_dir = dir.string();
    // A new sweep each time, as `sweep run` makes one (docs/SWEEPS.md): a "uuid" of the spec is
    // replaced in the copy the tasks read.
    s.sweep_uuid = new_uuid();
    s.run_count = run_count;
    s.partition = args.partition;
    s.gres = args.gres;
    s.time = args.time;
    s.cpus_per_task = args.cpus_per_task;
    s.checkpoint_every = args.checkpoint_every;
    if (!args.hold_task.empty()) parse_hold_task(args.hold_task, run_count, s);
    return s;
}

int run_sweep_slurm(const SlurmArgs& args) {
    const SweepSpec spec = read_sweep_spec_file(args.spec);
    const std::int64_t run_count = static_cast<std::int64_t>(plan_sweep(spec).size());  // each run validated
    const fs::path dir = fs::absolute(args.out).lexically_normal();
    const SlurmArraySettings s = array_settings(args, dir, run_count);
    const std::string script = slurm_array_script(s);  // refuses what it cannot hold, first
    prepare_out_dir(dir);
    write_new_file(dir / kSpecName, task_spec(spec, s.sweep_uuid).dump(2) + "\n");
    const nlohmann::json info = {
        {"sweep_uuid", s.sweep_uuid}, {"run_count", run_count}, {"spec", fs::absolute(args.spec).string()}};
    // A spec path that is not UTF-8 is shown with U+FFFD: the file is JSON (only `sweep status`
    // reads it, for the uuid and the run count).
    write_new_file(dir / kInfoName,
                   info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    write_new_file(dir / kScriptName, script, fs::perms::owner_exec);
    std::printf("wrote %s: %lld array tasks, sweep %s\n", (dir / kScriptName).c_str(),
                static_cast<long long>(run_count), s.sweep_uuid.c_str());
    if (!args.submit) {
        std::printf("submit it with: sbatch %s\n", shell_quote((dir / kScriptName).string()).c_str());
        return 0;
    }
    const std::string job_id = submit_script(dir / kScriptName);
    write_new_file(dir / kJobIdName, job_id + "\n");
    std::printf("submitted job array %s\n", job_id.c_str());
    return 0;
}

// ---- sweep status -----------------------------------------------------------------------------

struct StatusArgs {
    std::string dir;
    std::string job_id;  // empty: DIR/job_id
    bool json = false;
};

struct TaskState {
    std::string slurm;  // Slurm's state; empty when the source does not list the task
    std::string run_status;
    std::int64_t run_id = 0;
    std::int64_t step = -1;  // the run's newest recorded step; -1: none
};

// Fills states from "JOBID|STATE" lines (sacct -P, or squeue with that format).
void read_state_lines(const std::string& output, const std::string& job_id, std::vector<TaskState>& tasks) {
    std::stringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        const auto bar = line.find('|');
        if (bar == std::string::npos) continue;
        std::string state = line.substr(bar + 1);
        state = state.substr(0, state.find('|'));
        state = state.substr(0, state.find(' '));  // "CANCELLED by 0" -> "CANCELLED"
        for (std::int64_t i : array_indices_of(line.substr(0, bar), job_id))
            if (i >= 0 && i < static_cast<std::int64_t>(tasks.size())) tasks[i].slurm = state;
    }
}

// The array's states through sacct, else squeue; returns the source and why it was chosen.
std::string read_slurm_states(const std::string& job_id, std::vector<TaskState>& tasks) {
    const ProgramResult sacct = run_program({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State"});
    if (sacct.found && sacct.exit_code == 0) {
        read_state_lines(sacct.output, job_id, tasks);
        return "sacct";
    }
    const std::string why = sacct.found ? first_line(sacct.output) : "sacct is not on PATH";
    // -r: one line per array task; all states: finished tasks stay listed for MinJobAge.
    const ProgramResult squeue =
        run_program({"squeue", "-h", "-r", "-j", job_id, "--states=all", "-o", "%i|%T"});
    if (!squeue.found)
        throw Error("neither sacct nor squeue is on PATH: run sweep status on a Slurm login node");
    // A job squeue no longer knows is an error there; the task databases still tell.
    if (squeue.exit_code == 0) read_state_lines(squeue.output, job_id, tasks);
    return "squeue (sacct: " + why + "); finished tasks from their databases";
}

// The run of each task's database: its status and newest step.
void read_task_databases(const fs::path& dir, const std::string& sweep_uuid, std::vector<TaskState>& tasks) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const fs::path db = dir / ("task_" + std::to_string(i) + ".sqlite");
        if (!fs::exists(db)) continue;
        RunStore::Options o;
        o.read_only = true;
        o.detect_interrupted = false;
        try {
            RunStore store(db.string(), o);
            const auto sweep_id = store.find_sweep_by_uuid(sweep_uuid);
            if (!sweep_id) continue;
            for (const auto& member : store.get_sweep(*sweep_id).runs) {
                if (member.index != static_cast<std::int64_t>(i)) continue;
                const Run run = store.get_run(member.run_id);
                tasks[i].run_id = run.id;
                tasks[i].run_status = to_string(run.status);
                for (const auto& [key, latest] : run.latest)
                    tasks[i].step = std::max(tasks[i].step, latest.step);
            }
        } catch (const StoreError& e) {
            tasks[i].run_status = std::string("unreadable: ") + e.what();
        }
    }
}

struct SweepInfo {
    std::string uuid;
    std::int64_t run_count = 0;
};

// DIR/sweep_slurm.json, as `sweep slurm` wrote it.
SweepInfo read_sweep_info(const fs::path& dir) {
    const fs::path path = dir / kInfoName;
    if (!fs::exists(path))
        throw Error(dir.string() + " holds no " + kInfoName + ": not a folder written by `sweep slurm`");
    const nlohmann::json info = read_json_file(path.string(), "sweep file");
    if (!info.is_object() || !info.contains("sweep_uuid") || !info["sweep_uuid"].is_string())
        throw Error(path.string() + ": sweep_uuid: missing or not a string");
    if (!info.contains("run_count") || !info["run_count"].is_number_integer())
        throw Error(path.string() + ": run_count: missing or not a whole number");
    SweepInfo sweep{info["sweep_uuid"], info["run_count"]};
    if (sweep.run_count < 1 || sweep.run_count > kSweepHardMaxRuns)
        throw Error(path.string() + ": run_count: " + std::to_string(sweep.run_count) + " is out of range");
    return sweep;
}

void print_status_json(const SweepInfo& sweep, const std::string& job_id, const std::string& source,
                       const std::vector<TaskState>& tasks) {
    nlohmann::json out = {{"sweep_uuid", sweep.uuid},
                          {"job_id", job_id},
                          {"source", source},
                          {"tasks", nlohmann::json::array()}};
    for (std::size_t i = 0; i < tasks.size(); ++i)
        out["tasks"].push_back({{"index", i},
                                {"slurm_state", tasks[i].slurm},
                                {"run_id", tasks[i].run_id},
                                {"run_status", tasks[i].run_status},
                                {"step", tasks[i].step}});
    std::printf("%s\n", out.dump(2).c_str());
}

void print_status_table(const SweepInfo& sweep, const std::string& job_id, const std::string& source,
                        const std::vector<TaskState>& tasks) {
    std::printf("sweep %s, job %s: states from %s\n", sweep.uuid.c_str(),
                job_id.empty() ? "-" : job_id.c_str(), source.c_str());
    std::printf("%-6s %-12s %-8s %-12s %s\n", "index", "slurm", "run", "run status", "step");
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const TaskState& t = tasks[i];
        std::printf("%-6zu %-12s %-8s %-12s %s\n", i, t.slurm.empty() ? "-" : t.slurm.c_str(),
                    t.run_id ? std::to_string(t.run_id).c_str() : "-",
                    t.run_status.empty() ? "-" : t.run_status.c_str(),
                    t.step >= 0 ? std::to_string(t.step).c_str() : "-");
    }
}

int run_sweep_status(const StatusArgs& args) {
    const fs::path dir(args.dir);
    const SweepInfo sweep = read_sweep_info(dir);
    std::string job_id = args.job_id;
    if (job_id.empty() && fs::exists(dir / kJobIdName)) job_id = first_line(read_text(dir / kJobIdName));
    std::vector<TaskState> tasks(static_cast<std::size_t>(sweep.run_count));
    std::string source = "none (not submitted by `sweep slurm --submit`; pass --job ID)";
    if (!job_id.empty()) {
        check_slurm_value("--job", job_id, "");
        source = read_slurm_states(job_id, tasks);
    }
    read_task_databases(dir, sweep.uuid, tasks);
    if (args.json)
        print_status_json(sweep, job_id, source, tasks);
    else
        print_status_table(sweep, job_id, source, tasks);
    return 0;
}

}  // namespace

void add_sweep_cluster_commands(CLI::App& sweep) {
    auto slurm_args = std::make_shared<SlurmArgs>();
    auto* slurm = sweep.add_subcommand(
        "slurm", "Write an sbatch job-array script for the sweep, one array task per run (docs/SLURM.md)");
    slurm->add_option("spec", slurm_args->spec, "Sweep spec (docs/SWEEPS.md)")
        ->required()
        ->check(CLI::ExistingFile);
    slurm
        ->add_option("--out", slurm_args->out,
                     "New folder for the script, the spec copy and the task databases")
        ->required();
    slurm->add_option("--partition", slurm_args->partition, "Slurm partition");
    slurm->add_option("--gres", slurm_args->gres, "Generic resources per task, e.g. gpu:1");
    slurm->add_option("--time", slurm_args->time, "Time limit per task, e.g. 1:00:00");
    slurm->add_option("--cpus-per-task", slurm_args->cpus_per_task, "CPUs per task")
        ->check(whole_number(1, 4096));
    slurm
        ->add_option("--checkpoint-every", slurm_args->checkpoint_every,
                     "Each task stores a checkpoint every N steps (default: sweep task's)")
        ->check(whole_number(1, kMaxSteps));
    slurm->add_flag("--submit", slurm_args->submit, "Submit the script with sbatch and keep the job id");
    // Hidden (no group): tests/cluster preempts a task that is certainly still running.
    slurm
        ->add_option("--hold-task", slurm_args->hold_task,
                     "INDEX:STEP: that task's first attempt holds after STEP")
        ->group("");
    slurm->callback([slurm_args] {
        if (int rc = run_sweep_slurm(*slurm_args)) throw CLI::RuntimeError(rc);
    });

    auto status_args = std::make_shared<StatusArgs>();
    auto* status = sweep.add_subcommand("status", "Each array task's state (sacct, else squeue) and run");
    status->add_option("dir", status_args->dir, "Folder written by `sweep slurm`")
        ->required()
        ->check(CLI::ExistingDirectory);
    status->add_option("--job", status_args->job_id, "Job id of the array (default: DIR/job_id)");
    status->add_flag("--json", status_args->json, "One JSON object on stdout");
    status->callback([status_args] {
        if (int rc = run_sweep_status(*status_args)) throw CLI::RuntimeError(rc);
    });
}

}  // namespace mpwb::cli
