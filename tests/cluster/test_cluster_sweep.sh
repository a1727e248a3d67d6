#!/usr/bin/env bash
# A 6-run sweep as a Slurm job array on a real one-node Slurm (slurm_cluster.sh), with one task
# preempted the way a cluster does it:
#   sweep slurm --submit; task 1 holds after step HOLD_STEP of its first attempt (a hidden
#   option of `sweep slurm`, so it is certainly still running when signalled); once its database
#   shows a checkpoint, `scancel --signal=TERM` reaches the task under srun, which checkpoints and
#   exits 75, and the script requeues the array element; the requeued task resumes the run.
# Then: every array task done (bounded polls on squeue), `sweep status` names squeue as its
# source (no accounting here), `sweep collect` into a fresh store, and the checks: 6 FINISHED
# runs in one sweep, the preempted run has the trainer's "resumed_from_checkpoint" event, and its
# final weights digest equals that of an uninterrupted `sweep task` of the same index run locally.
# The sweep folder's name has a space, quotes, '#' and '%', which the #SBATCH --output line must
# carry for sbatch. Before the cluster starts (these need none): refusals, sweep status through a
# stand-in sacct, a folder name with a newline refused, and the script of a folder whose name
# holds shell syntax run with a stand-in srun that records its arguments.
# Exit 77 (SKIP) only where the daemons cannot start (not root, Slurm or munge not installed).
# Usage: test_cluster_sweep.sh <mpwb-cli> <scratch dir>
set -uo pipefail

cli=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
readonly RUNS=6 PREEMPTED=1 HOLD_STEP=40 POLLS=600 POLL_SECONDS=0.5

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
die() { echo "FAIL: $*"; exit 1; }

# shellcheck source=poll.sh
. "$here/poll.sh"

command -v sqlite3 >/dev/null || die "sqlite3 is missing (packaging/install-deps.sh installs it): the checks read the stores with it"
# The daemons of an earlier run of this test that was killed before its own stop.
if [ -d "$scratch/slurm" ]; then bash "$here/slurm_cluster.sh" stop "$scratch/slurm"; fi
rm -rf "$scratch"
mkdir -p "$scratch"

# Six tiny runs: the spiral MLP preset over two learning rates and three seeds (300 steps each;
# the tasks checkpoint every 20 steps).
spec=$scratch/spec.json
cat >"$spec" <<'EOF'
{"name": "cluster-test", "preset": "spiral-mlp", "training": {"max_steps": 300},
 "axes": [{"setting": "lr", "values": [0.05, 0.02]}, {"setting": "seed", "values": [1, 2, 3]}]}
EOF

# Refusals, which need no cluster: each exits 1 with its reason, and nothing is overwritten.
# expect_refusal <what> <text the error must contain> <command...>
expect_refusal() {
  local what=$1 text=$2 out rc
  shift 2
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$text" <<<"$out"; then pass "refused: $what"; else
    fail "$what: exit $rc, expected an error with '$text', got: $out"
  fi
}
"$cli" sweep slurm "$spec" --out "$scratch/written" >/dev/null || die "sweep slurm (without --submit) failed"
cp "$scratch/written/sweep.sbatch" "$scratch/script.before"
expect_refusal "a folder that holds a sweep" "nothing was overwritten" "$cli" sweep slurm "$spec" --out "$scratch/written"
cmp -s "$scratch/written/sweep.sbatch" "$scratch/script.before" && pass "the earlier script is unchanged" ||
  fail "the refused sweep slurm changed the earlier script"
mkdir -p "$scratch/old-tasks" && : >"$scratch/old-tasks/task_0.sqlite"
expect_refusal "a folder with an earlier sweep's task database" "task_0.sqlite exists" "$cli" sweep slurm "$spec" \
  --out "$scratch/old-tasks"
expect_refusal "a --time with a space" "--time" "$cli" sweep slurm "$spec" --out "$scratch/bad-time" --time "1:00 x"
expect_refusal "status of a folder sweep slurm did not write" "not a folder written by" "$cli" sweep status "$scratch"
expect_refusal "--submit without sbatch" "sbatch is not on PATH" env PATH=/nonexistent "$cli" sweep slurm "$spec" \
  --out "$scratch/no-sbatch" --submit

# sweep status through sacct, which this test cluster lacks (no accounting): a stand-in sacct
# answers as a cluster with accounting does, one finished task and the rest pending.
mkdir -p "$scratch/fake-bin"
cat >"$scratch/fake-bin/sacct" <<'EOF'
#!/bin/sh
echo '77_0|COMPLETED'
echo '77_[1-5%2]|PENDING'
EOF
chmod +x "$scratch/fake-bin/sacct"
status=$(PATH="$scratch/fake-bin:$PATH" "$cli" sweep status "$scratch/written" --job 77 --json)
sacct_states=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["source"], *[t["slurm_state"] for t in d["tasks"]])' <<<"$status")
[ "$sacct_states" = "sacct COMPLETED PENDING PENDING PENDING PENDING PENDING" ] &&
  pass "sweep status reads each array task's state from sacct" || fail "sweep status through sacct gave: $sacct_states"

# Folder names (issue 24). A control character is refused before anything is written: a newline
# would add a line to the script that every task runs. A folder with a space, quotes, '#', '%'
# and shell syntax gets a script that bash runs with each path as one word: a stand-in srun
# records the arguments it gets, and nothing else in the name runs (no `pwned` appears).
newline_dir="$scratch/new
touch pwned"
expect_refusal "a folder name with a newline" "control character" "$cli" sweep slurm "$spec" --out "$newline_dir"
[ ! -e "$newline_dir" ] && [ ! -e "$scratch/new" ] && pass "nothing was written for the folder with a newline" ||
  fail "sweep slurm wrote something for the folder with a newline"
odd_dir="$scratch/odd dir 'q' \"d\" #h 100%a \$(touch pwned) \`touch pwned\` ;x"
if "$cli" sweep slurm "$spec" --out "$odd_dir" >/dev/null; then
  cat >"$scratch/fake-bin/srun" <<'EOF'
#!/bin/sh
printf '%s\n' "$@" >"$SRUN_ARGS"
EOF
  chmod +x "$scratch/fake-bin/srun"
  uuid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep_uuid"])' "$odd_dir/sweep_slurm.json")
  expected=$(printf '%s\n' --ntasks=1 "$(readlink -f "$cli")" sweep task "$odd_dir/spec.json" --index 2 \
    --db "$odd_dir/task_2.sqlite" --sweep-uuid "$uuid")
  (cd "$scratch" && SRUN_ARGS="$scratch/srun.args" SLURM_ARRAY_TASK_ID=2 PATH="$scratch/fake-bin:$PATH" \
    bash "$odd_dir/sweep.sbatch" >"$scratch/odd.log" 2>&1) || fail "the odd folder's script failed: $(cat "$scratch/odd.log")"
  [ "$(cat "$scratch/srun.args" 2>/dev/null)" = "$expected" ] && pass "srun got each path of the odd folder as one argument" ||
    fail "srun got: $(cat "$scratch/srun.args" 2>/dev/null), expected: $expected"
  [ -z "$(find "$scratch" -name pwned)" ] && pass "nothing in the folder's name ran" || fail "the folder's name ran: $(find "$scratch" -name pwned)"
else
  fail "sweep slurm into a folder with a space, quotes, # and % failed"
fi
rm -f "$scratch/fake-bin/srun"  # the cluster below runs the real one

cluster=$scratch/slurm
t0=$SECONDS
bash "$here/slurm_cluster.sh" start "$cluster"
rc=$?
if [ $rc -eq 77 ]; then
  [ $failures -eq 0 ] || die "$failures check(s) without the cluster failed"
  echo "SKIP: the Slurm daemons cannot start here (see above)"
  exit 77
fi
[ $rc -eq 0 ] || die "the test cluster did not start"
trap 'bash "$here/slurm_cluster.sh" stop "$cluster"' EXIT
trap 'exit 1' INT TERM  # through the EXIT trap: a timed-out test still stops its daemons
echo "cluster start: $((SECONDS - t0)) s"
# shellcheck source=/dev/null
. "$cluster/env.sh"
export SLURM_CONF

# A folder name with a space, quotes, '#' and '%': sbatch reads the #SBATCH --output line itself,
# so the logs land in this folder only if the script escaped it for sbatch (issue 24).
sweep="$scratch/sweep dir 'q' \"d\" #h 100%"
"$cli" sweep slurm "$spec" --out "$sweep" --cpus-per-task 1 --checkpoint-every 20 --hold-task "$PREEMPTED:$HOLD_STEP" --submit ||
  die "sweep slurm --submit failed"
job=$(cat "$sweep/job_id") || die "sweep slurm --submit kept no job id"
grep -q -- "--array=0-$((RUNS - 1))" "$sweep/sweep.sbatch" && pass "the script is an array of $RUNS tasks" ||
  fail "the script has no --array=0-$((RUNS - 1))"

task_db=$sweep/task_$PREEMPTED.sqlite
sql() { sqlite3 -readonly "$1" "$2" 2>/dev/null; }
has_checkpoint() { [ "$(sql "$task_db" "SELECT count(*) FROM checkpoints")" -gt 0 ] 2>/dev/null; }
wait_until has_checkpoint || die "task $PREEMPTED never wrote a checkpoint (log: $(tail -5 "$sweep/task_$PREEMPTED.log"))"
task_running() { [ -n "$(squeue -h -j "${job}_$PREEMPTED" -t RUNNING -o %i)" ]; }
wait_until task_running || die "task $PREEMPTED is not running"
echo "task $PREEMPTED has a checkpoint; preempting it"
# scancel delivers the signal, then may keep retrying for a while against an element that has
# meanwhile requeued itself ("Job can not be altered now") and exit nonzero: what counts is that
# the task requeued, checked below, so it runs in the background and its status is only shown.
scancel --signal=TERM "${job}_$PREEMPTED" &
scancel_pid=$!

# Done: squeue lists no pending, requeued or running element of the array any more.
array_done() {
  local left
  left=$(squeue -h -r -j "$job" -t PENDING,RUNNING,REQUEUED,CONFIGURING,COMPLETING -o %i) && [ -z "$left" ]
}
wait_until array_done || die "the array did not finish: $(squeue -r -j "$job")"
wait "$scancel_pid" || echo "note: scancel exited $? after delivering the signal"
grep -q "checkpointed; requeueing" "$sweep/task_$PREEMPTED.log" && grep -q "(restart 1)" "$sweep/task_$PREEMPTED.log" &&
  pass "task $PREEMPTED checkpointed, requeued itself and started again" ||
  fail "task $PREEMPTED did not requeue itself: $(cat "$sweep/task_$PREEMPTED.log")"
echo "sweep on slurm: $((SECONDS - t0)) s since the cluster start"

status=$("$cli" sweep status "$sweep") || fail "sweep status failed"
echo "$status"
grep -q "states from squeue" <<<"$status" && pass "sweep status says it used squeue (no accounting)" ||
  fail "sweep status does not name squeue as its source"

store=$scratch/store.sqlite
"$cli" sweep collect "$sweep" --db "$store" || die "sweep collect failed"
sweeps=$(sql "$store" "SELECT count(*) FROM sweeps")
members=$(sql "$store" "SELECT count(*) FROM sweep_runs JOIN runs ON runs.id = sweep_runs.run_id WHERE runs.status = 'FINISHED'")
[ "$sweeps" = 1 ] && [ "$members" = "$RUNS" ] && pass "one sweep with $RUNS FINISHED runs" ||
  fail "the store has $sweeps sweeps and $members FINISHED sweep runs, not 1 and $RUNS"
run=$(sql "$store" "SELECT run_id FROM sweep_runs WHERE run_index = $PREEMPTED")
resumes=$(sql "$store" "SELECT count(*) FROM events WHERE run_id = '$run' AND kind = 'resumed_from_checkpoint'")
[ "${resumes:-0}" -ge 1 ] && pass "the preempted run resumed from a checkpoint" ||
  fail "the preempted run (id '$run') has no resumed_from_checkpoint event"

digest_sql="SELECT json_extract(json, '\$.final_weights_digest') FROM events WHERE kind = 'summary' AND run_id ="
preempted_digest=$(sql "$store" "$digest_sql '$run'")
reference=$scratch/reference.sqlite
"$cli" sweep task "$sweep/spec.json" --index "$PREEMPTED" --db "$reference" --checkpoint-every 20 --quiet || die "the reference sweep task failed"
reference_digest=$(sql "$reference" "$digest_sql (SELECT max(id) FROM runs)")
[ -n "$preempted_digest" ] && [ "$preempted_digest" = "$reference_digest" ] &&
  pass "preempted and uninterrupted runs end with the same weights ($preempted_digest)" ||
  fail "final weights digest '$preempted_digest' (preempted) != '$reference_digest' (uninterrupted)"

echo "test time: $((SECONDS - t0)) s"
[ $failures -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
