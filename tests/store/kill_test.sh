#!/usr/bin/env bash
# Kill test of the run store: `mpwb-cli train` is killed with SIGKILL at random moments while
# it records, and after every kill the database must
#   - pass PRAGMA integrity_check (sqlite3 CLI, independent of the code under test),
#   - show the killed run INTERRUPTED once it is next opened (`mpwb-cli runs list` opens it),
#     and leave no run RUNNING,
#   - keep everything committed before the kill: an independent reader (sqlite3) counts the
#     run's committed metrics just before the kill, and after it at least those are there.
# Nothing depends on the machine's speed: every other kill first waits (on the database's
# state, not on a time) until the run has committed metrics, so those kills certainly land
# mid-recording; the rest land at a random time after the launch, which on a slow or loaded
# machine may be before the database exists (then there is nothing to check but the exit).
# How far the newest metric lags behind the kill is printed, not judged: it measures how much
# CPU the process got, not the store.
# Usage: kill_test.sh MPWB_CLI SQLITE3 [KILLS]
set -u
cli=${1:?usage: kill_test.sh MPWB_CLI SQLITE3 [KILLS]}
sqlite=${2:?sqlite3 CLI path}
kills=${3:-20}
# A wait on a state gives up only after this long (it returns as soon as the state holds).
state_wait_limit=300

work=$(mktemp -d "${TMPDIR:-/tmp}/mpwb_kill.XXXXXX")
trap 'rm -rf "$work"' EXIT
shared="$work/shared.sqlite"
failures=0
mid_recording=0
worst=0
RANDOM=$(( $$ ^ $(date +%s) ))

now() { date +%s.%N; }
fail() { echo "FAIL kill $1: $2"; failures=$((failures + 1)); }
# A read-only query that never creates the file and reads 0 where the table is not there yet.
peek() {
    [[ -s "$1" ]] || { echo 0; return; }
    local v
    v=$("$sqlite" -readonly -cmd ".timeout 5000" "$1" "$2" 2>/dev/null) || v=0
    echo "${v:-0}"
}
random_delay() { awk -v r=$RANDOM -v lo="$1" -v span="$2" 'BEGIN { printf "%.2f", lo + span * r / 32767 }'; }

for ((i = 1; i <= kills; ++i)); do
    # Alternate between one database that collects every killed run and a fresh one.
    if ((i % 2)); then db="$work/fresh_$i.sqlite"; else db="$shared"; fi
    before=$(peek "$db" "SELECT coalesce(max(id),0) FROM runs")
    launch=$(now)
    # 2.5 million steps: no machine gets to the end before the kill.
    "$cli" train --preset spiral-mlp --epochs 100000 --threads 1 --quiet --db "$db" \
        >"$work/out_$i.log" 2>&1 &
    pid=$!
    if ((i % 2 == 0)); then
        # Mid-recording: wait until this run has committed metrics, then a little longer.
        waited=0
        until (($(peek "$db" "SELECT count(*) FROM metrics WHERE run_id > $before") > 0)); do
            kill -0 "$pid" 2>/dev/null || break
            ((waited++ < state_wait_limit * 20)) || break
            sleep 0.05
        done
        delay=$(random_delay 0 1)
    else
        delay=$(random_delay 0.3 2.7)
    fi
    sleep "$delay"
    # What is committed now must survive the kill.
    seen_rows=$(peek "$db" "SELECT count(*) FROM metrics WHERE run_id > $before")
    seen_step=$(peek "$db" "SELECT coalesce(max(step),0) FROM metrics WHERE run_id > $before AND key='train_loss'")
    kill_time=$(now)
    if ! kill -KILL "$pid" 2>/dev/null; then
        fail "$i" "mpwb-cli exited before the kill: $(tail -3 "$work/out_$i.log")"
        wait "$pid"
        continue
    fi
    wait "$pid" 2>/dev/null
    if ((i % 2 == 0)); then
        ((seen_rows > 0)) || fail "$i" "no metric committed while the run went on"
        mid_recording=$((mid_recording + 1))
    fi

    if [[ ! -s "$db" ]]; then
        printf 'kill %2d after %5.2fs: before the database was created\n' "$i" "$delay"
        continue
    fi
    integrity=$("$sqlite" "$db" "PRAGMA integrity_check" 2>&1)
    [[ "$integrity" == "ok" ]] || fail "$i" "integrity_check: $integrity"

    # Opening for the run list is what detects the dead owner.
    "$cli" runs list --db "$db" >"$work/list_$i.txt" 2>&1 || fail "$i" "runs list failed: $(cat "$work/list_$i.txt")"
    run=$("$sqlite" "$db" "SELECT coalesce(max(id),0) FROM runs")
    running=$("$sqlite" "$db" "SELECT count(*) FROM runs WHERE status='RUNNING'")
    ((running == 0)) || fail "$i" "$running run(s) still RUNNING after reopening"
    lag="-"
    if ((run > before)); then
        status=$("$sqlite" "$db" "SELECT status FROM runs WHERE id=$run")
        [[ "$status" == "INTERRUPTED" ]] || fail "$i" "run $run is $status, expected INTERRUPTED"
        grep -q "INTERRUPTED" "$work/list_$i.txt" || fail "$i" "runs list does not show INTERRUPTED"
        rows=$("$sqlite" "$db" "SELECT count(*) FROM metrics WHERE run_id=$run")
        steps=$("$sqlite" "$db" "SELECT coalesce(max(step),0) FROM metrics WHERE run_id=$run AND key='train_loss'")
        ((rows >= seen_rows)) || fail "$i" "$seen_rows metric rows were committed before the kill, $rows are left"
        ((steps >= seen_step)) || fail "$i" "step $seen_step was committed before the kill, the last left is $steps"
        last=$("$sqlite" "$db" "SELECT max(wall_time) FROM metrics WHERE run_id=$run")
        if [[ -n "$last" ]]; then
            lag=$(awk -v k="$kill_time" -v l="$last" 'BEGIN { printf "%.3f", k - l }')
            worst=$(awk -v a="$worst" -v b="$lag" 'BEGIN { print (b > a) ? b : a }')
        fi
    else
        ((seen_rows == 0)) || fail "$i" "metrics were committed before the kill but no run is left"
        status="(no run yet)"
        rows=0
        steps=0
    fi
    printf 'kill %2d after %5.2fs: run %s %s, %s rows (%s seen before the kill), last step %s, lag %ss, integrity %s\n' \
        "$i" "$delay" "$run" "$status" "$rows" "$seen_rows" "$steps" "$lag" "$integrity"
done

echo "$kills kills, $mid_recording mid-recording; newest metric at most ${worst}s older than the kill; $failures failure(s)"
((failures == 0))
