#!/usr/bin/env bash
# Kill test of the run store: `mpwb-cli train` is killed with SIGKILL at random moments while
# it records, and after every kill the database must
#   - pass PRAGMA integrity_check (sqlite3 CLI, independent of the code under test),
#   - show the killed run INTERRUPTED once it is next opened (`mpwb-cli runs list` opens it),
#     and leave no run RUNNING,
#   - hold the metrics committed up to at most MAX_LAG seconds before the kill: the newest
#     metric's wall time (absolute, seconds since the epoch) is >= kill time - MAX_LAG.
# Usage: kill_test.sh MPWB_CLI SQLITE3 [KILLS] [MAX_LAG]
set -u
cli=${1:?usage: kill_test.sh MPWB_CLI SQLITE3 [KILLS] [MAX_LAG]}
sqlite=${2:?sqlite3 CLI path}
kills=${3:-20}
max_lag=${4:-1.0}

work=$(mktemp -d "${TMPDIR:-/tmp}/mpwb_kill.XXXXXX")
trap 'rm -rf "$work"' EXIT
shared="$work/shared.sqlite"
failures=0
worst=0
RANDOM=$(( $$ ^ $(date +%s) ))

now() { date +%s.%N; }
fail() { echo "FAIL kill $1: $2"; failures=$((failures + 1)); }

for ((i = 1; i <= kills; ++i)); do
    # Alternate between one database that collects every killed run and a fresh one.
    if ((i % 2)); then db="$work/fresh_$i.sqlite"; else db="$shared"; fi
    before=0
    [[ -f "$db" ]] && before=$("$sqlite" "$db" "SELECT coalesce(max(id),0) FROM runs")
    delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + 2.7 * r / 32767 }')
    launch=$(now)
    "$cli" train --preset spiral-mlp --epochs 100000 --threads 1 --quiet --db "$db" \
        >"$work/out_$i.log" 2>&1 &
    pid=$!
    sleep "$delay"
    kill_time=$(now)
    if ! kill -KILL "$pid" 2>/dev/null; then
        fail "$i" "mpwb-cli exited before the kill: $(tail -3 "$work/out_$i.log")"
        wait "$pid"
        continue
    fi
    wait "$pid" 2>/dev/null

    if [[ ! -f "$db" ]]; then
        fail "$i" "no database after ${delay}s"
        continue
    fi
    integrity=$("$sqlite" "$db" "PRAGMA integrity_check" 2>&1)
    [[ "$integrity" == "ok" ]] || fail "$i" "integrity_check: $integrity"

    # Opening for the run list is what detects the dead owner.
    "$cli" runs list --db "$db" >"$work/list_$i.txt" 2>&1 || fail "$i" "runs list failed: $(cat "$work/list_$i.txt")"
    run=$("$sqlite" "$db" "SELECT coalesce(max(id),0) FROM runs")
    running=$("$sqlite" "$db" "SELECT count(*) FROM runs WHERE status='RUNNING'")
    ((running == 0)) || fail "$i" "$running run(s) still RUNNING after reopening"
    if ((run > before)); then
        status=$("$sqlite" "$db" "SELECT status FROM runs WHERE id=$run")
        [[ "$status" == "INTERRUPTED" ]] || fail "$i" "run $run is $status, expected INTERRUPTED"
        grep -q "INTERRUPTED" "$work/list_$i.txt" || fail "$i" "runs list does not show INTERRUPTED"
        last=$("$sqlite" "$db" "SELECT max(wall_time) FROM metrics WHERE run_id=$run")
        rows=$("$sqlite" "$db" "SELECT count(*) FROM metrics WHERE run_id=$run")
        steps=$("$sqlite" "$db" "SELECT coalesce(max(step),0) FROM metrics WHERE run_id=$run AND key='train_loss'")
        # Before the first commit nothing can be there: measure from the launch instead.
        [[ -n "$last" ]] || last=$launch
    else
        status="(no run yet)"
        last=$launch
        rows=0
        steps=0
    fi
    lag=$(awk -v k="$kill_time" -v l="$last" 'BEGIN { printf "%.3f", k - l }')
    worst=$(awk -v a="$worst" -v b="$lag" 'BEGIN { print (b > a) ? b : a }')
    ok=$(awk -v lag="$lag" -v m="$max_lag" 'BEGIN { print (lag <= m) ? 1 : 0 }')
    ((ok)) || fail "$i" "newest metric is ${lag}s older than the kill (limit ${max_lag}s)"
    printf 'kill %2d after %5.2fs: run %s %s, %s rows, last step %s, lag %.3fs, integrity %s\n' \
        "$i" "$delay" "$run" "$status" "$rows" "$steps" "$lag" "$integrity"
done

echo "worst lag ${worst}s over $kills kills (limit ${max_lag}s); $failures failure(s)"
((failures == 0))
