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
#
# Every command has its own time limit, so a hang costs one phase, not the call.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/mpwb-device-out}
mkdir -p "$out"
work=/tmp/mpwb-device
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(selftest stats fp8 peers train gpt resume)
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
      f'{s.get("test_loss")} steps {s.get("steps")} backend {doc.get("backend", "?")} wall {s.get("wall_seconds")}')
PY
}

phase_train() {
    for precision in fp16-mixed fp8-delayed fp8-current; do
        run train.log 180 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda --precision $precision --json --no-store
        note train "$(train_row train.log "fashion-mlp $precision")"
    done
}

phase_gpt() {
    run train.log 240 "$cli" train --preset fortunes-gpt --data-path "$work/data/fortunes" --backend cuda --precision fp32 --max-steps 2000 --json --no-store
    note train "$(train_row train.log "fortunes-gpt fp32 2000 steps")"
}

phase_resume() {
    local db=$work/resume.db
    run resume.log 120 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda --precision bf16-mixed --max-steps 600 --json --db "$db" --run-name whole
    run resume.log 120 "$cli" train --preset fashion-mlp "${fashion[@]}" --backend cuda --precision bf16-mixed --max-steps 300 --json --db "$db" --run-name parted --checkpoint-every 100
    run resume.log 120 "$cli" train --resume parted --max-steps 600 --json --db "$db"
    note resume "$(grep -E 'test_loss' "$out/resume.log" | tr -d ' ' | tr '\n' ' ' | cut -c1-300)"
}

for phase in "${phases[@]}"; do
    t0=$(date +%s)
    "phase_$phase"
    note time "$phase $(($(date +%s) - t0)) s"
done
note time "total $(($(date +%s) - started)) s"
echo "==== device check (logs under \$OUT) ===="
column -t -s $'\t' "$out/table.txt" 2>/dev/null || cat "$out/table.txt"
