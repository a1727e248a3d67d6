// mpwb-cli sweep: plan a sweep spec (docs/SWEEPS.md), run it locally as N child processes into
// one database, train one planned run as a task (what each Slurm array task runs, resuming its
// own checkpointed run when requeued), and collect the task databases of a cluster sweep into the
// user's store as one sweep. `sweep slurm` and `sweep status` live in sweep_cluster.cpp,
// `sweep collect` in sweep_collect.cpp.
//
// `sweep run` stores the spec with the sweep and its tasks plan from that record (`sweep task
// --sweep-id`), never from the file again: editing the file mid-sweep changes nothing. The tasks
// end with the process that started them (PR_SET_PDEATHSIG: SIGTERM, so they checkpoint), and
// their output goes to unlinked files, so a sweep killed outright leaves neither training
// orphans nor files behind.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "app/cli/commands.h"
#include "app/cli/option_checks.h"
#include "app/cli/resumable_training.h"
#include "app/cli/store_options.h"
#include "app/cli/sweep_cluster.h"
#include "app/cli/sweep_collect.h"
#include "app/cli/sweep_common.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "sessions/file_identity.h"
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"
#include "sessions/sweep_spec.h"

extern char** environ;

namespace mpwb::cli {
namespace {

namespace fs = std::filesystem;

// ---- plan -----------------------------------------------------------------------------------

struct PlanArgs {
    std::string spec;
    bool json = false;
};

// The plan as a table: index, then one column per axis.
void print_plan_table(const SweepSpec& spec, const std::vector<PlannedRun>& plan) {
    std::vector<std::size_t> widths{5};
    for (const auto& axis : spec.axes) widths.push_back(axis.setting.size());
    for (const auto& run : plan)
        for (std::size_t a = 0; a < run.settings.size(); ++a)
            widths[a + 1] = std::max(widths[a + 1], sweep_value_text(run.settings[a].value).size());
    auto row = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t c = 0; c < cells.size(); ++c)
            line += (c ? "  " : "") + cells[c] +
                    std::string(widths[c] - std::min(widths[c], cells[c].size()), ' ');
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::printf("%s\n", line.c_str());
    };
    std::printf("sweep %s: %zu runs (%s)\n", spec.name.c_str(), plan.size(),
                spec.method == SweepMethod::Grid ? "grid" : "random");
    std::vector<std::string> header{"index"};
    for (const auto& axis : spec.axes) header.push_back(axis.setting);
    row(header);
    for (const auto& run : plan) {
        std::vector<std::string> cells{std::to_string(run.index)};
        for (const auto& s : run.settings) cells.push_back(sweep_value_text(s.value));
        row(cells);
    }
}

int run_plan(const PlanArgs& args) {
    const SweepSpec spec = read_sweep_spec_file(args.spec);
    const auto plan = plan_sweep(spec);
    if (args.json)
        std::printf("%s\n", sweep_plan_to_json(spec, plan).dump(2).c_str());
    else
        print_plan_table(spec, plan);
    return 0;
}

// ---- task -----------------------------------------------------------------------------------

struct TaskArgs {
    std::string spec;           // a spec file, or
    std::int64_t sweep_id = 0;  // the sweep of --db whose stored spec the task plans from
    std::int64_t index = -1;
    std::string sweep_uuid;
    // `sweep run`'s pid (hidden): the task ends when that process does.
    std::int64_t parent_pid = 0;
    ResumableTrainingOptions training;
};

// The sweep's uuid: --sweep-uuid, else the spec's "uuid"; the databases of one sweep's tasks
// collect into one sweep only when they share it.
std::string task_sweep_uuid(const TaskArgs& args, const SweepSpec& spec) {
    if (!args.sweep_uuid.empty()) return args.sweep_uuid;
    if (!spec.uuid.empty()) return spec.uuid;
    throw ConfigError(
        spec.origin +
        ": uuid: a sweep task needs the sweep's uuid, so that every task's run joins one sweep: "
        "pass --sweep-uuid (sweep slurm does) or give the spec a \"uuid\"");
}

// A sweep's tasks, the process that runs them and the workbench that launched it all write into
// one database: each waits this long for another's commit instead of the store's default 2 s.
constexpr int kTaskBusyTimeoutMs = 30000;

RunStore::Options sweep_store_options() {
    RunStore::Options options;
    options.busy_timeout_ms = kTaskBusyTimeoutMs;
    return options;
}

std::string run_name(const SweepSpec& spec, const PlannedRun& run) {
    return spec.name + " #" + std::to_string(run.index) + " " + sweep_settings_text(run);
}

// A task of `sweep run` gets SIGTERM (and checkpoints) when the sweep's process ends, however it
// ends, SIGKILL included. That process may have died before prctl ran: then the parent is no
// longer the pid it passed, and the task does not start.
bool end_with_sweep_process(std::int64_t parent_pid) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == static_cast<pid_t>(parent_pid)) return true;
    std::fprintf(stderr,
                 "mpwb-cli: sweep task: the sweep's process %lld has ended; the task does not start\n",
                 static_cast<long long>(parent_pid));
    return false;
}

struct TaskSweep {
    SweepSpec spec;
    std::int64_t sweep_id = 0;
    PlannedRun run;
};

// --sweep-id: the spec the sweep's record keeps, as `sweep run` stored it.
TaskSweep stored_sweep(RunStore& store, const TaskArgs& args) {
    const SweepRecord record = store.get_sweep(args.sweep_id);
    const std::string origin =
        "sweep " + std::to_string(record.id) + " in " + display_path(args.training.db) + ", spec_json";
    nlohmann::json source;
    try {
        source = parse_json_text(record.spec_json, origin);
    } catch (const JsonInputError& e) {
        throw ConfigError(e.what());
    }
    TaskSweep task{parse_sweep_spec(source, origin), record.id, {}};
    if (sweep_run_count(task.spec) != record.run_count)
        throw ConfigError(origin + ": the spec plans " + std::to_string(sweep_run_count(task.spec)) +
                          " runs, the sweep " + std::to_string(record.run_count));
    task.run = plan_sweep_run(task.spec, args.index);
    return task;
}

// The sweep of a task given a spec file: created in the database (by uuid) when missing.
TaskSweep file_sweep(const TaskArgs& args, const std::function<RunStore&()>& open_store) {
    TaskSweep task{read_sweep_spec_file(args.spec), 0, {}};
    task.run = plan_sweep_run(task.spec, args.index);  // checked before the database is created
    const std::string uuid = task_sweep_uuid(args, task.spec);
    task.sweep_id = open_store().create_sweep({0,
                                               uuid,
                                               task.spec.name,
                                               self_contained_sweep_spec(task.spec).dump(),
                                               sweep_run_count(task.spec),
                                               0,
                                               {}});
    return task;
}

// The sweep's run at the task's index, when the database has one: a finished one is done (0), an
// interrupted one with a checkpoint is continued; nullopt when a new run must take the index.
std::optional<int> continue_existing(RunStore& store, const TaskSweep& task, const TaskArgs& args) {
    for (const auto& member : store.get_sweep(task.sweep_id).runs) {
        if (member.index != task.run.index) continue;
        const Run previous = store.get_run(member.run_id);
        if (previous.status == RunStatus::Finished) {
            std::fprintf(stderr, "sweep %s: run %lld (index %lld) is already FINISHED\n",
                         task.spec.name.c_str(), static_cast<long long>(member.run_id),
                         static_cast<long long>(task.run.index));
            return 0;
        }
        if (previous.status == RunStatus::Running)  // alive: opening the store marks dead owners' runs
            throw ConfigError("sweep " + task.spec.name + ": index " + std::to_string(task.run.index) +
                              " is being trained by run " + std::to_string(member.run_id) + " (RUNNING) in " +
                              args.training.db);
        const bool resumable =
            previous.status == RunStatus::Interrupted || previous.status == RunStatus::Stopped;
        if (resumable && store.latest_checkpoint(member.run_id))
            return resume_run(member.run_id, args.training).exit_code;
    }
    return std::nullopt;
}

int run_task(TaskArgs args) {
    if (args.spec.empty() == (args.sweep_id == 0))
        throw ConfigError(
            "sweep task: give either a spec file or --sweep-id (the sweep of --db whose stored spec "
            "to plan from)");
    if (args.sweep_id && !args.sweep_uuid.empty())
        throw ConfigError("sweep task: --sweep-uuid is for a spec file; --sweep-id names the sweep itself");
    if (args.parent_pid > 0 && !end_with_sweep_process(args.parent_pid)) return 1;
    args.training.db = database_or_default(args.training.db);
    args.training.busy_timeout_ms = kTaskBusyTimeoutMs;
    RunStore::Options options = sweep_store_options();
    options.create = args.sweep_id == 0;  // a stored sweep's database exists
    std::optional<RunStore> opened;
    auto open_store = [&]() -> RunStore& {
        if (!opened) opened.emplace(args.training.db, options);
        return *opened;
    };
    const TaskSweep task = args.sweep_id ? stored_sweep(open_store(), args) : file_sweep(args, open_store);
    RunStore& store = open_store();
    if (const auto done = continue_existing(store, task, args)) return *done;
    args.training.run_name = run_name(task.spec, task.run);
    args.training.tags.push_back("sweep=" + task.spec.name);
    args.training.tags.push_back("sweep_index=" + std::to_string(task.run.index));
    // On the training thread, before the first step; the main thread waits in train_new_run.
    auto join_sweep = [&](std::int64_t run_id) {
        try {
            store.add_sweep_run(task.sweep_id, task.run.index, run_id);
        } catch (const StoreError& e) {
            std::fprintf(stderr, "mpwb-cli: error: run %lld could not join sweep %s: %s\n",
                         static_cast<long long>(run_id), task.spec.name.c_str(), e.what());
        }
    };
    return train_new_run(task.run.preset, args.training, join_sweep).exit_code;
}

// ---- run: N task processes at a time ---------------------------------------------------------

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// SIGINT, SIGTERM and SIGHUP end the sweep: no new run starts and the running ones are told to
// stop (SIGINT: between steps; SIGTERM and SIGHUP, a closed terminal: they checkpoint first). No
// SA_RESTART, so the parent's pause is cut short.
class StopSignals {
public:
    StopSignals() {
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
    }
    ~StopSignals() {
        for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    }

private:
    static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
    std::array<struct sigaction, 3> old_{};
};

// What the running tasks get when the sweep stops on `sig`: Ctrl-C stops them between steps,
// anything else has them checkpoint.
int signal_for_tasks(int sig) { return sig == SIGINT ? SIGINT : SIGTERM; }

struct RunArgs {
    std::string spec;
    int jobs = 1;
    std::string db;
    std::string backend = "auto";
    bool progress_jsonl = false;
    std::int64_t hold_after_step = 0;  // test hook, passed to every task
};

// One line of --progress-jsonl, flushed at once (the workbench reads it as it comes).
void emit(const nlohmann::json& event, bool enabled) {
    if (!enabled) return;
    std::printf("%s\n", event.dump().c_str());
    std::fflush(stdout);
}

// A file for a task's stderr that has no name: nothing is left behind however this process ends
// (a folder of task logs leaked when the sweep was killed). Only this process's descriptor and
// the task's stderr refer to it.
int unnamed_log_file() {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp && *tmp ? tmp : "/tmp";
    int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string path = dir + "/mpwb-task-XXXXXX";
    fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0)
        throw Error("cannot create a file for a sweep task's output in " + dir + ": " + std::strerror(errno));
    unlink(path.c_str());
    return fd;
}

// The last lines of a task's stderr (read from its last 64 KiB), indented, for the failure message.
std::string log_tail(int fd, std::size_t lines = 6) {
    constexpr off_t kTailBytes = 64 * 1024;
    const off_t size = lseek(fd, 0, SEEK_END);
    const off_t from = std::max<off_t>(0, size - kTailBytes);
    std::string text(static_cast<std::size_t>(std::max<off_t>(0, size - from)), '\0');
    const ssize_t got = pread(fd, text.data(), text.size(), from);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    std::vector<std::string> all;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        all.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    std::string out;
    for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
        out += "    " + all[i] + "\n";
    return out;
}

struct Child {
    std::int64_t index = 0;
    int log_fd = -1;  // the task's stderr, shown when it fails
};

// Starts `/proc/self/exe sweep task ...` in its own process group (so a Ctrl-C reaches only this
// process, which passes it on once), stdout to /dev/null, stderr to `log_fd`.
pid_t spawn_task(const std::vector<std::string>& argv, int log_fd) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&files, log_fd, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    std::vector<char*> raw;
    for (const auto& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
    raw.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0].c_str(), &files, &attr, raw.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw Error("cannot start a sweep task (" + argv[0] + "): " + std::strerror(rc));
    return pid;
}

// What the store says about the sweep's run at `index` once its task has ended. A task killed
// mid-run left its run RUNNING: the store marks the runs of dead owners INTERRUPTED first. No
// status when the task ended before it created a run.
struct Outcome {
    std::int64_t run_id = 0;
    std::optional<RunStatus> status;
};

Outcome run_outcome(RunStore& store, std::int64_t sweep_id, std::int64_t index) {
    (void)store.mark_interrupted_runs();
    for (const auto& member : store.get_sweep(sweep_id).runs)
        if (member.index == index) return {member.run_id, store.get_run(member.run_id).status};
    return {};
}

class LocalSweep {
public:
    LocalSweep(const RunArgs& args, const SweepSpec& spec, std::int64_t runs)
        : args_(args),
          spec_(spec),
          runs_(runs),
          db_(database_or_default(args.db)),
          store_(db_, sweep_store_options()) {
        // What the tasks plan from (sweep task --sweep-id), not the file: see the header.
        SweepRecord record{0, "", spec.name, self_contained_sweep_spec(spec).dump(), runs, 0, {}};
        sweep_id_ = store_.create_sweep(record);
        uuid_ = store_.get_sweep(sweep_id_).uuid;
    }
    ~LocalSweep() {
        for (const auto& [pid, child] : children_) close(child.log_fd);
    }

    int run() {
        emit({{"event", "sweep_started"},
              {"sweep_id", sweep_id_},
              {"uuid", uuid_},
              {"name", spec_.name},
              {"runs", runs_}},
             args_.progress_jsonl);
        std::fprintf(stderr, "sweep %s: %lld runs, %d at a time, into %s (sweep %lld)\n", spec_.name.c_str(),
                     static_cast<long long>(runs_), args_.jobs, display_path(db_).c_str(),
                     static_cast<long long>(sweep_id_));
        StopSignals signals;
        std::int64_t next = 0;
        while ((next < runs_ && !g_stop_signal) || !children_.empty()) {
            if (g_stop_signal) forward_stop();
            while (!g_stop_signal && next < runs_ && static_cast<int>(children_.size()) < args_.jobs)
                start(next++);
            reap_or_pause();
        }
        emit({{"event", "sweep_finished"},
              {"sweep_id", sweep_id_},
              {"finished", finished_},
              {"failed", failed_}},
             args_.progress_jsonl);
        const std::int64_t not_started = runs_ - finished_ - failed_;
        std::fprintf(stderr, "sweep %s: %lld FINISHED, %lld failed%s (sweep %lld)\n", spec_.name.c_str(),
                     static_cast<long long>(finished_), static_cast<long long>(failed_),
                     not_started ? (", " + std::to_string(not_started) + " not started").c_str() : "",
                     static_cast<long long>(sweep_id_));
        if (g_stop_signal) return 128 + g_stop_signal;
        return failed_ ? 1 : 0;
    }

private:
    void start(std::int64_t index) {
        std::vector<std::string> argv{
            self_path(),           "sweep",  "task", "--sweep-id",   std::to_string(sweep_id_), "--index",
            std::to_string(index), "--db",   db_,    "--parent-pid", std::to_string(getpid()),  "--backend",
            args_.backend,         "--quiet"};
        if (args_.hold_after_step > 0)
            argv.insert(argv.end(), {"--hold-after-step", std::to_string(args_.hold_after_step)});
        const int log_fd = unnamed_log_file();
        try {
            children_[spawn_task(argv, log_fd)] = {index, log_fd};
        } catch (...) {
            close(log_fd);
            throw;
        }
        emit({{"event", "run_started"}, {"index", index}}, args_.progress_jsonl);
    }

    static std::string self_path() {
        std::error_code ec;
        const auto path = fs::read_symlink("/proc/self/exe", ec);
        return ec ? std::string("/proc/self/exe") : path.string();
    }

    void forward_stop() {
        if (forwarded_) return;
        forwarded_ = true;
        std::fprintf(stderr, "sweep %s: stopping %zu running task(s)\n", spec_.name.c_str(),
                     children_.size());
        for (const auto& [pid, child] : children_) kill(pid, signal_for_tasks(g_stop_signal));
    }

    // Waits for a task to end; a pause (cut short by a signal) when none has.
    void reap_or_pause() {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            return;
        }
        const auto it = children_.find(pid);
        if (it == children_.end()) return;
        const Child child = it->second;
        children_.erase(it);
        const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        report(child, exit_code, run_outcome(store_, sweep_id_, child.index));
        close(child.log_fd);
    }

    // A run counts as FINISHED by the store's word, whatever the task's exit status (a task can
    // be signalled after its run finished); the exit status is reported beside it.
    void report(const Child& child, int exit_code, const Outcome& outcome) {
        const bool finished = outcome.status == RunStatus::Finished;
        (finished ? finished_ : failed_) += 1;
        emit(
            {{"event", "run_finished"},
             {"index", child.index},
             {"run_id", outcome.run_id},
             {"status", outcome.status ? nlohmann::json(run_status_name(*outcome.status)) : nlohmann::json()},
             {"exit_code", exit_code}},
            args_.progress_jsonl);
        const std::string what =
            outcome.status
                ? std::string(run_status_name(*outcome.status)) + " (run " + std::to_string(outcome.run_id) +
                      ", exit " + std::to_string(exit_code) + ")"
                : "no run (the task ended with exit " + std::to_string(exit_code) + " before creating one)";
        std::fprintf(stderr, "[%lld/%lld] index %lld: %s, %lld failed\n",
                     static_cast<long long>(finished_ + failed_), static_cast<long long>(runs_),
                     static_cast<long long>(child.index), what.c_str(), static_cast<long long>(failed_));
        if ((!finished || exit_code != 0) && !g_stop_signal)
            std::fprintf(stderr, "%s", log_tail(child.log_fd).c_str());
    }

    const RunArgs& args_;
    const SweepSpec& spec_;
    std::int64_t runs_;
    std::string db_;
    RunStore store_;
    std::int64_t sweep_id_ = 0;
    std::string uuid_;
    std::map<pid_t, Child> children_;
    std::int64_t finished_ = 0, failed_ = 0;
    bool forwarded_ = false;
};

int run_sweep(RunArgs args) {
    args.spec = fs::absolute(args.spec).string();
    const SweepSpec spec = read_sweep_spec_file(args.spec);
    const auto plan = plan_sweep(spec);  // every run checked before the first starts
    LocalSweep sweep(args, spec, static_cast<std::int64_t>(plan.size()));
    return sweep.run();
}

}  // namespace

void add_sweep_command(CLI::App& app) {
    auto* sweep =
        app.add_subcommand("sweep", "Sweeps over settings: plan, run locally, run one task, collect");
    sweep->require_subcommand(1);

    auto plan = std::make_shared<PlanArgs>();
    auto* plan_cmd =
        sweep->add_subcommand("plan", "List the runs a sweep spec plans, with the settings each varies");
    plan_cmd->add_option("spec", plan->spec, "Sweep spec (JSON, docs/SWEEPS.md)")->required();
    plan_cmd->add_flag("--json", plan->json, "The plan as JSON on stdout");
    on_run(plan_cmd, plan, run_plan);

    auto run = std::make_shared<RunArgs>();
    auto* run_cmd =
        sweep->add_subcommand("run", "Run a sweep here: N task processes at a time, into one database");
    run_cmd->add_option("spec", run->spec, "Sweep spec (JSON)")->required();
    run_cmd->add_option("--jobs,-j", run->jobs, "Runs at a time")->check(whole_number(1, 256));
    run_cmd->add_option("--db", run->db, "Run database (default: the user's)");
    run_cmd->add_option("--backend", run->backend, "cpu, cuda or auto (each task)");
    run_cmd->add_flag("--progress-jsonl", run->progress_jsonl,
                      "One JSON object per line on stdout for each sweep and run event");
    // Hidden (no group): a test hook, not a user's option.
    run_cmd
        ->add_option("--hold-after-step", run->hold_after_step,
                     "Test hook: every task holds after N steps until a signal ends its run")
        ->check(whole_number(0, kMaxSteps))
        ->group("");
    on_run(run_cmd, run, run_sweep);

    auto task = std::make_shared<TaskArgs>();
    task->training.checkpoints = {200, 600};  // a task may be preempted: checkpoint as it goes
    auto* task_cmd = sweep->add_subcommand(
        "task", "Train planned run --index of a sweep (or continue it from its checkpoint when requeued)");
    task_cmd->add_option("spec", task->spec, "Sweep spec (JSON); or --sweep-id");
    task_cmd
        ->add_option("--sweep-id", task->sweep_id,
                     "Plan from the spec stored with this sweep of --db (what sweep run's tasks do)")
        ->check(whole_number(1));
    task_cmd->add_option("--index", task->index, "The planned run (0-based, as sweep plan lists it)")
        ->required()
        ->check(whole_number(0, kSweepHardMaxRuns - 1));
    task_cmd->add_option("--db", task->training.db, "Run database (default: the user's)");
    task_cmd->add_option("--sweep-uuid", task->sweep_uuid, "The sweep's uuid (default: the spec's \"uuid\")");
    // Hidden: set by sweep run, whose tasks end with it.
    task_cmd->add_option("--parent-pid", task->parent_pid, "The sweep run process the task ends with")
        ->check(whole_number(1, std::numeric_limits<pid_t>::max()))
        ->group("");
    task_cmd->add_option("--backend", task->training.backend, "cpu, cuda or auto");
    task_cmd->add_flag("--quiet", task->training.quiet, "No progress output");
    add_checkpoint_options(*task_cmd, task->training);
    on_run(task_cmd, task, run_task);

    add_sweep_collect_command(*sweep);
    add_sweep_cluster_commands(*sweep);
}

}  // namespace mpwb::cli
