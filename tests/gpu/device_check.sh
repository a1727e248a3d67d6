#!/bin/bash
# The device check of the CUDA backend, for one call of a lent GPU machine (at most 8 minutes).
# Runs from the archive tests/gpu/build_carry.sh made here (.device/carry.tar.xz: the CUDA
# mpwb-cli, its module, OpenBLAS, SQLite and the datasets), with the device's own CUDA libraries
# and PyTorch. Writes each phase's full log under $OUT and prints a short table last.
#
#   tests/gpu/device_check.sh [PHASE...]     default: every phase, in this order
#     selftest  mpwb-cli selftest --backend cuda (every op and whole steps against the CPU)
#     stats     what statistics steps cost: bench --stats-every 0, 100, 10 (4096 MLP at 512,
#               fashion-mlp at 256)
#     fp8       the 4096 MLP at 512 and 4096: fp8-delayed, fp8-current against bf16-mixed
#     peers     our whole-step graphs against PyTorch eager, AMP and its own CUDA graph
#     train     fashion-mlp in fp16-mixed, fp8-delayed and fp8-current on the GPU
#     gpt       fortunes-gpt in fp32 for 2,000 steps on the GPU
#     resume    a CUDA run interrupted and resumed against one never interrupted
#     gui       the workbench itself (mpwb --benchmark, a live comparison) on the GPU, offscreen,
#               from .device/gui.tar.xz (tests/gpu/build_gui_carry.sh)
#
# Every command has its own time limit, so a hang costs one phase, not the call.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/mpwb-device-out}
mkdir -p "$out"
work=/tmp/mpwb-device
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(selftest stats fp8 peers train gpt resume gui)
started=$(date +%s)

rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf "$root/.device/carry.tar.xz" || { echo "device_check: no carried archive (run tests/gpu/build_carry.sh)"; exit 1; }
cli=$work/bin/mpwb-cli
export MPWB_CUDA_MODULE=$work/lib/mpwb/libmpwb_cuda.so
# The CUDA libraries the module needs, where this image keeps them (the Python nvidia-* wheels
# or the toolkit), after the carried ones.
cuda_dirs=$(python3 - <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                                  "/usr/lib/x86_64-linux-gnu"]
found = []
for name in ("libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcudnn.so.9"):
    for root in roots:
        hits = glob.glob(os.path.join(root, "**", name), recursive=True) if "site-packages" in root \
            else glob.glob(os.path.join(root, name))
        if hits:
            d = os.path.dirname(hits[0])
            if d not in found:
                found.append(d)
            break
print(":".join(found))
PY
)
export LD_LIBRARY_PATH=$work/lib:$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
# The device FP8 path runs only when asked for until it has passed its selftest on a GPU.
export MPWB_CUDA_FP8=1
results=$out/results.jsonl
: >"$results"

# note KEY VALUE...: one line of the final table, also kept in results.jsonl.
note() {
    local key=$1
    shift
    printf '%s\t%s\n' "$key" "$*" >>"$out/table.txt"
    python3 -c 'import json,sys; print(json.dumps({"key": sys.argv[1], "value": sys.argv[2]}))' "$key" "$*" >>"$results"
}
# run LOG LIMIT COMMAND...: the command's output appended to LOG (and its exit status noted).
run() {
    local log=$1 limit=$2
    shift 2
    echo "\$ $*" >>"$out/$log"
    timeout --kill-after=5 "$limit" "$@" >>"$out/$log" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || echo "exit status $rc" >>"$out/$log"
    return $rc
}
: >"$out/table.txt"
{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldd "$MPWB_CUDA_MODULE" | grep -E 'cuda|cublas|cudnn|not found'
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
    echo "carried commit: $(cat "$work/commit")"
} >"$out/env.log" 2>&1
note device "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) / commit $(cat "$work/commit")"

fashion=(--data-path "$work/data/fashion-mnist")
mlp4096=(--network "$root/app/cli/bench_networks/mlp-4096.json" --input 4096 --classes 4096)
bench=("$cli" bench --backend cuda --graphs on --json)
# bench_rows LOG: "precision batch K: step ms (wall ms)" for every row of the JSON in LOG.
bench_rows() {
    python3 - "$out/$1" <<'PY'
import json, sys
text = "\n" + open(sys.argv[1]).read()
for block in text.split("\n$ ")[1:]:
    start = block.find("{")
    if start < 0:
        continue
    try:
        doc = json.JSONDecoder().raw_decode(block[start:])[0]
    except ValueError:
        continue
    for r in doc.get("results", []):
        if "precision" not in r:
            continue
        print(f'{r["preset"]} {r["precision"]} b{r["batch"]} K={r.get("stats_every", 0)}: '
              f'{r["step_ms"]:.4f} ms device, {r.get("wall_ms", 0):.4f} ms wall ({doc["backend"]})')
PY
}

phase_selftest() {
    run selftest.log 240 "$cli" selftest --backend cuda
    note selftest "$(grep -E '^[0-9]+ passed' "$out/selftest.log" | tail -1) $(grep -c '^FAIL' "$out/selftest.log") FAIL lines"
}

phase_stats() {
    for k in 0 100 10; do
        run stats.log 120 "${bench[@]}" "${mlp4096[@]}" --batches 512 --precisions bf16-mixed --steps 300 --untimed-steps 20 --stats-every $k
        run stats.log 120 "${bench[@]}" --preset fashion-mlp "${fashion[@]}" --batches 256 --precisions fp32,bf16-mixed --steps 300 --untimed-steps 20 --stats-every $k
    done
    bench_rows stats.log | while read -r line; do note stats "$line"; done
}

phase_fp8() {
    run fp8.log 240 "${bench[@]}" "${mlp4096[@]}" --batches 512,4096 --precisions bf16-mixed,fp8-delayed,fp8-current,bf16-mixed --steps 200 --untimed-steps 20
    bench_rows fp8.log | while read -r line; do note fp8 "$line"; done
}

phase_peers() {
    local py=(python3 "$root/app/cli/bench_pytorch.py" --device cuda --amp --cuda-graph --cli "$cli" --steps 200 --untimed-steps 20)
    run peers.log 120 "${bench[@]}" --preset spiral-mlp --batches 128,2048 --precisions fp32,bf16-mixed,fp16-mixed --steps 300 --untimed-steps 30
    run peers.log 120 "${py[@]}" --preset spiral-mlp --batches 128,2048
    run peers.log 120 "${bench[@]}" --preset fashion-mlp "${fashion[@]}" --batches 256 --precisions fp32,bf16-mixed,fp16-mixed --steps 300 --untimed-steps 30
    run peers.log 120 "${py[@]}" --preset fashion-mlp --batches 256
    run peers.log 120 "${bench[@]}" --preset fashion-cnn "${fashion[@]}" --batches 256 --precisions fp32,bf16-mixed,fp16-mixed --steps 200 --untimed-steps 20
    run peers.log 120 "${py[@]}" --preset fashion-cnn --batches 256
    run peers.log 120 "${bench[@]}" "${mlp4096[@]}" --batches 512 --precisions fp32,bf16-mixed --steps 200 --untimed-steps 20
    run peers.log 120 "${py[@]}" "${mlp4096[@]}" --batches 512
    run peers.log 150 "${bench[@]}" --preset fortunes-gpt --data-path "$work/data/fortunes" --batches 12,64 --precisions fp32,bf16-mixed --steps 100 --untimed-steps 10
    run peers.log 120 "${py[@]}" --preset fortunes-gpt --data-path "$work/data/fortunes" --batches 12,64
    bench_rows peers.log | while read -r line; do note ours "$line"; done
    grep -E '^pytorch ' "$out/peers.log" | while read -r line; do note pytorch "$line"; done
}

# train_row LOG NAME: the accuracy, loss and backend of the last train --json in LOG.
train_row() {
    python3 - "$out/$1" "$2" <<'PY'
import json, sys
text = "\n" + open(sys.argv[1]).read()
block = text.split("\n$ ")[-1]
start = block.find("{")
try:
    doc = json.JSONDecoder().raw_decode(block[start:])[0] if start >= 0 else {}
except ValueError:
    doc = {}
s = doc.get("summary", doc)
print(f'{sys.argv[2]}: status {s.get("status")} test acc {s.get("test_accuracy")} test loss '
      f'{s.get("test_loss")} steps {s.get("steps")} backend {doc.get("backend", "?")} wall {s.get("wall_seconds")} device {doc.get("device", "?")[:60]}')
PY
}

phase_train() {
    for precision in fp16-mixed fp8-delayed fp8-current; do
        run train.log 180 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda --precision $precision --json --no-store
        note train "$(train_row train.log "fashion-mlp $precision")"
    done
    # Statistics must not change a run: the same run with and without them (the library's own
    # algorithm picks, so both processes choose alike).
    for k in 0 10; do
        run train.log 180 env MPWB_CUDA_AUTOTUNE=0 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda --precision bf16-mixed --stats-every $k --json --no-store
        note train "$(train_row train.log "fashion-mlp bf16-mixed --stats-every $k")"
    done
}

phase_gpt() {
    run train.log 240 "$cli" train --preset fortunes-gpt --data-path "$work/data/fortunes" --backend cuda --precision fp32 --max-steps 2000 --json --no-store
    note train "$(train_row train.log "fortunes-gpt fp32 2000 steps")"
}

# resume: a CUDA run held after step 100 gets SIGTERM (checkpoint, INTERRUPTED, exit 75) and is
# resumed by `train --resume ID` in a new process; it must end with the final_weights_digest and
# test_loss of the same run never interrupted. MPWB_CUDA_AUTOTUNE=0 in all three processes: a
# process times its cuBLASLt/cuDNN candidates and a Linear's bias-gradient path afresh.
phase_resume() {
    local db=$work/resume.db
    local train=(env MPWB_CUDA_AUTOTUNE=0 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda
                 --precision fp16-mixed --max-steps 300 --checkpoint-every 100 --quiet --json --db "$db")
    rm -f "$db"*
    run resume.log 120 "${train[@]}" --run-name whole
    echo "\$ ${train[*]} --run-name parted --hold-after-step 100   (SIGTERM once held)" >>"$out/resume.log"
    timeout --kill-after=5 120 "${train[@]}" --run-name parted --hold-after-step 100 >>"$out/resume.log" 2>&1 &
    local pid=$! id="" held=0 rc
    for _ in $(seq 1 200); do
        sleep 0.5
        id=$("$cli" runs list --db "$db" --json 2>/dev/null | python3 -c '
import json, sys
print(next((r["id"] for r in json.load(sys.stdin) if r["name"] == "parted"), ""))' 2>/dev/null)
        [ -n "$id" ] || continue
        held=$("$cli" runs show "$id" --db "$db" --json 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["events"]["by_kind"].get("paused", 0))' 2>/dev/null)
        [ "${held:-0}" -gt 0 ] && break
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    echo "parted: run '${id}' held: ${held:-0}, exit status $rc (75: checkpointed and INTERRUPTED)" >>"$out/resume.log"
    [ -n "$id" ] && run resume.log 120 env MPWB_CUDA_AUTOTUNE=0 "$cli" train --resume "$id" --backend cuda --quiet --json --db "$db"
    note resume "$(python3 - "$cli" "$db" "$rc" <<'PY'
import json, subprocess, sys
cli, db, rc = sys.argv[1:]
def show(name):
    runs = json.loads(subprocess.run([cli, "runs", "list", "--db", db, "--json"], capture_output=True, text=True).stdout or "[]")
    run = next((r for r in runs if r["name"] == name), None)
    if not run:
        return None
    return json.loads(subprocess.run([cli, "runs", "show", str(run["id"]), "--db", db, "--json"], capture_output=True, text=True).stdout)
whole, parted = show("whole"), show("parted")
if not whole or not parted:
    print("FAIL: a run is missing from the database"); sys.exit()
def row(r):
    s = r.get("summary") or {}
    return (r["status"], s.get("steps"), r["final_weights_digest"], repr(s.get("test_loss")))
w, p = row(whole), row(parted)
same = w == p and w[0] == "FINISHED" and w[2] is not None
print(("PASS" if same and rc == "75" else "FAIL") + f": interrupted exit {rc}; whole {w}; resumed {p}")
PY
)"
}

# gui: the workbench itself (mpwb, offscreen, live plots) training on the GPU: `mpwb --benchmark`
# (spiral-mlp: headless vs in the window, then the window's FP32 vs FP16-mixed comparison), then
# one scripted comparison as a user starts it. From .device/gui.tar.xz
# (tests/gpu/build_gui_carry.sh), next to the main carry's libraries and CUDA module.
phase_gui() {
    local gui=$work/gui
    rm -rf "$gui" && mkdir -p "$gui"
    if ! tar -C "$gui" -xJf "$root/.device/gui.tar.xz"; then
        note gui "no .device/gui.tar.xz (run tests/gpu/build_gui_carry.sh)"
        return
    fi
    mkdir -p "$gui/home" "$gui/cache" && mkdir -m 700 "$gui/runtime"
    local module=$MPWB_CUDA_MODULE
    [ -f "$gui/lib/mpwb/libmpwb_cuda.so" ] && module=$gui/lib/mpwb/libmpwb_cuda.so
    local qt=(env LD_LIBRARY_PATH="$gui/lib:$LD_LIBRARY_PATH" MPWB_CUDA_MODULE="$module"
        QT_PLUGIN_PATH="$gui/plugins" QT_QPA_PLATFORM=offscreen FONTCONFIG_FILE="$gui/fonts/fonts.conf"
        XDG_RUNTIME_DIR="$gui/runtime" XDG_CACHE_HOME="$gui/cache" HOME="$gui/home")
    run gui.log 180 "${qt[@]}" "$gui/bin/mpwb" --benchmark --preset spiral-mlp --benchmark-steps 2000 --benchmark-rounds 2
    note gui "$(python3 - "$out/gui.log" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
start = text.find("\n{")
try:
    b = json.JSONDecoder().raw_decode(text[start + 1:])[0] if start >= 0 else {}
except ValueError:
    b = {}
if not b:
    print("benchmark printed no JSON:", " | ".join(text.strip().splitlines()[-3:])[:300])
    sys.exit()
c = b.get("comparison", {})
side = lambda k: f'{c.get(k, {}).get("train_samples_per_s", 0):.0f} sps ({c.get(k, {}).get("vs_headless", 0):.2f}x headless)'
print(f'mpwb --benchmark {b["preset"]} {b["steps"]} steps on {b.get("backend", "cpu?")} ({b["device"]}): '
      f'window {b["gui"]["median_samples_per_s"]:.0f} vs headless {b["headless"]["median_samples_per_s"]:.0f} '
      f'samples/s = {b["gui_vs_headless"]:.2f}, worst gap {b["gui"]["worst_event_loop_gap_ms"]:.0f} ms; '
      f'comparison fp32 {side("fp32")}, fp16-mixed {side("fp16-mixed")}, {c.get("wall_s_both", 0):.1f} s '
      f'vs {c.get("headless_sequential_wall_s", 0):.1f} s headless one after the other; '
      f'startup {b.get("startup_to_first_expose_s", -1):.2f} s' + (f'; no GPU: {b["why_not_gpu"]}' if "why_not_gpu" in b else ""))
PY
)"
    local db=$gui/compare.db
    run gui.log 90 "${qt[@]}" "$gui/bin/mpwb" --db "$db" --preset spiral-mlp --start compare --max-steps 2000 --quit-when-done
    local rc=$?
    run gui.log 30 "$cli" runs list --db "$db" --json
    note gui "mpwb --start compare --quit-when-done (gui archive $(cat "$gui/commit"), carry $(cat "$work/commit")):" \
        "exit status $rc; $(python3 - "$out/gui.log" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
block = text[text.rfind("runs list --db"):]
try:
    runs = json.JSONDecoder().raw_decode(block[block.index("["):])[0]
except ValueError:
    runs = []
print("; ".join(f'{r["name"]}: {r["status"]} on {r["backend"]}, test acc {r.get("test_accuracy")}, '
                f'{r.get("duration_seconds", 0):.1f} s' for r in reversed(runs)) or "no runs recorded")
PY
)"
}

for phase in "${phases[@]}"; do
    t0=$(date +%s)
    "phase_$phase"
    note time "$phase $(($(date +%s) - t0)) s"
done
note time "total $(($(date +%s) - started)) s"
echo "==== device check (logs under \$OUT) ===="
column -t -s $'\t' "$out/table.txt" 2>/dev/null || cat "$out/table.txt"
