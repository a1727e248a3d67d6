// mpwb-cli sweep: plan a sweep spec (docs/SWEEPS.md), run it locally as N child processes into
// one database, train one planned run as a task (what each Slurm array task runs, resuming its
// own checkpointed run when requeued), and collect the task databases of a cluster sweep into the
// user's store as one sweep. `sweep slurm` and `sweep status` live in sweep_cluster.cpp,
// `sweep collect` in sweep_collect.cpp.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "app/cli/commands.h"
#include "app/cli/option_checks.h"
#include "app/cli/resumable_training.h"
#include "app/cli/store_options.h"
#include "app/cli/sweep_cluster.h"
#include "app/cli/sweep_collect.h"
#include "app/cli/sweep_common.h"
#include "core/common/error.h"
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
    std::string spec;
    std::int64_t index = -1;
    std::string sweep_uuid;
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
        "pass --sweep-uuid (sweep run and sweep slurm do) or give the spec a \"uuid\"");
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

int run_task(TaskArgs args) {
    const SweepSpec spec = read_sweep_spec_file(args.spec);
    const PlannedRun run = plan_sweep_run(spec, args.index);
    args.training.db = database_or_default(args.training.db);
    args.training.busy_timeout_ms = kTaskBusyTimeoutMs;
    RunStore store(args.training.db, sweep_store_options());
    const std::int64_t sweep_id = store.create_sweep(
        {0, task_sweep_uuid(args, spec), spec.name, spec.source.dump(), sweep_run_count(spec), 0, {}});
    // A requeued task continues its own run from its checkpoint; a finished one is done.
    for (const auto& member : store.get_sweep(sweep_id).runs) {
        if (member.index != run.index) continue;
        const Run previous = store.get_run(member.run_id);
        if (previous.status == RunStatus::Finished) {
            std::fprintf(stderr, "sweep %s: run %lld (index %lld) is already FINISHED\n", spec.name.c_str(),
                         static_cast<long long>(member.run_id), static_cast<long long>(run.index));
            return 0;
        }
        if (previous.status == RunStatus::Running)  // alive: opening the store marks dead owners' runs
            throw ConfigError("sweep " + spec.name + ": index " + std::to_string(run.index) +
                              " is being trained by run " + std::to_string(member.run_id) + " (RUNNING) in " +
                              args.training.db);
        const bool resumable =
            previous.status == RunStatus::Interrupted || previous.status == RunStatus::Stopped;
        if (resumable && store.latest_checkpoint(member.run_id))
            return resume_run(member.run_id, args.training).exit_code;
    }
    args.training.run_name = run_name(spec, run);
    args.training.tags.push_back("sweep=" + spec.name);
    args.training.tags.push_back("sweep_index=" + std::to_string(run.index));
    // On the training thread, before the first step; the main thread waits in train_new_run.
    auto join_sweep = [&](std::int64_t run_id) {
        try {
            store.add_sweep_run(sweep_id, run.index, run_id);
        } catch (const StoreError& e) {
            std::fprintf(stderr, "mpwb-cli: error: run %lld could not join sweep %s: %s\n",
                         static_cast<long long>(run_id), spec.name.c_str(), e.what());
        }
    };
    return train_new_run(run.preset, args.training, join_sweep).exit_code;
}

// ---- run: N task processes at a time ---------------------------------------------------------

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// SIGINT and SIGTERM end the sweep: no new run starts and the running ones get the signal
// (SIGINT: they stop between steps; SIGTERM: they checkpoint first). No SA_RESTART, so the
// parent's pause is cut short.
class StopSignals {
public:
    StopSignals() {
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int_);
        sigaction(SIGTERM, &sa, &old_term_);
    }
    ~StopSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }

private:
    struct sigaction old_int_ {};
    struct sigaction old_term_ {};
};

struct RunArgs {
    std::string spec;
    int jobs = 1;
    std::string db;
    std::string backend = "auto";
    bool progress_jsonl = false;
};

// One line of --progress-jsonl, flushed at once (the workbench reads it as it comes).
void emit(const nlohmann::json& event, bool enabled) {
    if (!enabled) return;
    std::printf("%s\n", event.dump().c_str());
    std::fflush(stdout);
}

struct Child {
    std::int64_t index = 0;
    std::string log;  // the task's stderr, shown when it fails
};

// Starts `/proc/self/exe sweep task ...` in its own process group (so a Ctrl-C reaches only this
// process, which passes it on once), stdout to /dev/null, stderr to `log`.
pid_t spawn_task(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
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

// The last lines of a task's stderr, indented, for the failure message.
std::string log_tail(const std::string& path, std::size_t lines = 6) {
    std::ifstream in(path);
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);) all.push_back(line);
    std::string out;
    for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
        out += "    " + all[i] + "\n";
    return out;
}

// What the store says about the sweep's run at `index` after its task ended.
std::pair<std::int64_t, std::string> run_outcome(RunStore& store, std::int64_t sweep_id, std::int64_t index) {
    for (const auto& member : store.get_sweep(sweep_id).runs)
        if (member.index == index) return {member.run_id, to_string(store.get_run(member.run_id).status)};
    return {0, "FAILED"};  // the task ended before its run was created
}

class LocalSweep {
public:
    LocalSweep(const RunArgs& args, const SweepSpec& spec, std::int64_t runs)
        : args_(args),
          spec_(spec),
          runs_(runs),
          db_(database_or_default(args.db)),
          store_(db_, sweep_store_options()) {
        SweepRecord record{0, "", spec.name, spec.source.dump(), runs, 0, {}};
        sweep_id_ = store_.create_sweep(record);
        uuid_ = store_.get_sweep(sweep_id_).uuid;
        char dir[] = "/tmp/mpwb-sweep-XXXXXX";
        if (!mkdtemp(dir))
            throw Error(std::string("cannot create a folder for task logs: ") + std::strerror(errno));
        log_dir_ = dir;
    }
    ~LocalSweep() {
        std::error_code ec;
        fs::remove_all(log_dir_, ec);
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
        const std::string log = log_dir_ + "/task_" + std::to_string(index) + ".log";
        std::vector<std::string> argv{
            self_path(),           "sweep",       "task",   args_.spec,     "--index",
            std::to_string(index), "--db",        db_,      "--sweep-uuid", uuid_,
            "--backend",           args_.backend, "--quiet"};
        children_[spawn_task(argv, log)] = {index, log};
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
        for (const auto& [pid, child] : children_) kill(pid, g_stop_signal);
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
        const auto [run_id, run_status] = run_outcome(store_, sweep_id_, child.index);
        (run_status == "FINISHED" && exit_code == 0 ? finished_ : failed_) += 1;
        emit({{"event", "run_finished"},
              {"index", child.index},
              {"run_id", run_id},
              {"status", run_status},
              {"exit_code", exit_code}},
             args_.progress_jsonl);
        std::fprintf(stderr, "[%lld/%lld] index %lld: %s (run %lld, exit %d), %lld failed\n",
                     static_cast<long long>(finished_ + failed_), static_cast<long long>(runs_),
                     static_cast<long long>(child.index), run_status.c_str(), static_cast<long long>(run_id),
                     exit_code, static_cast<long long>(failed_));
        if (exit_code != 0 && !g_stop_signal) std::fprintf(stderr, "%s", log_tail(child.log).c_str());
    }

    const RunArgs& args_;
    const SweepSpec& spec_;
    std::int64_t runs_;
    std::string db_;
    RunStore store_;
    std::int64_t sweep_id_ = 0;
    std::string uuid_;
    std::string log_dir_;
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
    on_run(run_cmd, run, run_sweep);

    auto task = std::make_shared<TaskArgs>();
    task->training.checkpoints = {200, 600};  // a task may be preempted: checkpoint as it goes
    auto* task_cmd = sweep->add_subcommand(
        "task", "Train planned run --index of a sweep (or continue it from its checkpoint when requeued)");
    task_cmd->add_option("spec", task->spec, "Sweep spec (JSON)")->required();
    task_cmd->add_option("--index", task->index, "The planned run (0-based, as sweep plan lists it)")
        ->required()
        ->check(whole_number(0, kSweepHardMaxRuns - 1));
    task_cmd->add_option("--db", task->training.db, "Run database (default: the user's)");
    task_cmd->add_option("--sweep-uuid", task->sweep_uuid, "The sweep's uuid (default: the spec's \"uuid\")");
    task_cmd->add_option("--backend", task->training.backend, "cpu, cuda or auto");
    task_cmd->add_flag("--quiet", task->training.quiet, "No progress output");
    add_checkpoint_options(*task_cmd, task->training);
    on_run(task_cmd, task, run_task);

    add_sweep_collect_command(*sweep);
    add_sweep_cluster_commands(*sweep);
}

}  // namespace mpwb::cli
