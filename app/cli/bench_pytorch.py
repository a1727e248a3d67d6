#!/usr/bin/python3
"""Times PyTorch on the same networks and batches as `mpwb-cli bench`, for a side-by-side figure.

CPU: eager FP32. CUDA: eager FP32 and torch.autocast(float16) + GradScaler (the AMP recipe);
with --cuda-graph also PyTorch's own whole-step CUDA graph (torch.cuda.graph around forward,
backward, clipping and the optimizer made capturable), in FP32 and under autocast(bfloat16),
which needs no loss scaler (GradScaler's skip decision reads the GPU from the host, so it
cannot be captured).
Prints one line per configuration and a JSON summary. CPU: the median step time, as mpwb-cli
bench prints for the CPU. CUDA: the mean over the timed window with one synchronisation at each
end, as mpwb-cli bench measures its device steps (a sync per step would charge PyTorch for
latency our asynchronous loop never waits for).

The model is the PyTorch export's own: `mpwb-cli bench --pytorch-script` writes the script the
export writes for the preset's network (or --network FILE, e.g. app/cli/bench_networks/mlp-4096.json
with --input 4096 --classes 4096 --batches 512) at the bench's data shape, and this program
imports its build_model(), LOSS and make_optimizer(), so the two sides cannot drift apart and
every layer kind the export knows (a GPT's blocks included) is timed here without a list of kinds.
A text preset's inputs are random token ids and its targets a random next token per position.
"""
import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn


def exported_script(args, here):
    """The module of the PyTorch script mpwb-cli writes for the preset's network at the bench's shape."""
    cli = args.cli or os.path.join(here, "..", "..", "build", "app", "cli", "mpwb-cli")
    folder = tempfile.mkdtemp(prefix="mpwb_bench_pytorch_")
    path = os.path.join(folder, "model.py")
    command = [cli, "bench", "--preset", args.preset, "--pytorch-script", path, "--json"]
    if args.network:
        command += ["--network", args.network]
    if args.input:
        command += ["--input", str(args.input)]
    if args.classes:
        command += ["--classes", str(args.classes)]
    if args.data_path:
        command += ["--data-path", args.data_path]
    subprocess.run(command, check=True)
    spec = importlib.util.spec_from_file_location("mpwb_bench_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.remove(path)
    os.rmdir(folder)
    return module


def random_batch(script, model, batch, device):
    """Inputs and targets of the model's shape: token ids and a next token per position for a
    language model ([batch, T, V] outputs), else normal inputs and a class per sample."""
    shape = list(script.INPUT_SHAPE)
    probe = torch.zeros([1] + shape, device=device)
    with torch.no_grad():
        out = model.eval()(probe)
    model.train()
    classes = out.shape[-1]
    if out.dim() == 3:
        x = torch.randint(0, classes, [batch] + shape, device=device).float()
        y = torch.randint(0, classes, [batch] + shape, device=device)
    else:
        x = torch.randn([batch] + shape, device=device)
        y = torch.randint(0, classes, (batch,), device=device)
    return x, y


def make_optimizer(script, model, kind, lr):
    """The preset's optimizer as the export writes it, or --optimizer's (sgd: momentum 0.9)."""
    if kind is None:
        return script.make_optimizer(model)
    if kind == "adam":
        return torch.optim.Adam(model.parameters(), lr)
    return torch.optim.SGD(model.parameters(), lr, momentum=0.9)


def capturable_optimizer(opt, model):
    """The same optimizer with capturable=True where its class has the setting (Adam, AdamW):
    its step count and bias corrections then stay on the GPU, as a captured graph needs."""
    if "capturable" not in opt.defaults:
        return opt
    settings = dict(opt.defaults)
    settings.update(capturable=True, foreach=None, fused=None)
    return type(opt)(model.parameters(), **settings)


def graph_step(step_body, opt):
    """step_body captured once as a CUDA graph after three warm-up steps on a side stream (as
    torch.cuda.graph asks); returns the graph's replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            step_body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        step_body()
    return graph.replay


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--preset", default="fashion-mlp")
    ap.add_argument("--batches", default="256")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--untimed-steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", action="store_true", help="also time torch.autocast(float16) + GradScaler")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="CUDA: also time the whole step as one captured graph (fp32, bf16 autocast)")
    ap.add_argument("--optimizer", default=None, help="override the preset's optimizer (sgd, adam)")
    ap.add_argument("--network", default=None, help="network JSON file instead of the preset's network")
    ap.add_argument("--input", type=int, default=0, help="features per sample (default: the preset's data shape)")
    ap.add_argument("--classes", type=int, default=0, help="classes of the random labels (default: the preset's)")
    ap.add_argument("--data-path", default=None, help="the dataset's folder for mpwb-cli (a text preset's vocabulary)")
    ap.add_argument("--cli", default=None, help="the mpwb-cli that writes the model's script (default: build/app/cli/mpwb-cli)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(os.path.join(here, "..", "..", "resources", "presets", args.preset + ".json")) as f:
        preset = json.load(f)
    label = args.preset
    if args.network:
        label = os.path.splitext(os.path.basename(args.network))[0]
    script = exported_script(args, here)
    lr = preset["training"].get("lr", 0.01)
    clip_norm = preset["training"].get("clip_norm", 0.0)
    results = []
    modes = ["fp32"] + (["fp16-amp"] if args.amp else [])
    if args.cuda_graph and args.device != "cpu":
        modes += ["fp32-graph", "bf16-amp-graph"]
    for mode in modes:
        for batch in [int(b) for b in args.batches.split(",")]:
            torch.manual_seed(0)
            model = script.build_model().to(args.device)
            opt = make_optimizer(script, model, args.optimizer, lr)
            scaler = (torch.amp.GradScaler(args.device.split(":")[0], enabled=(mode == "fp16-amp"))
                      if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler(enabled=(mode == "fp16-amp")))
            x, y = random_batch(script, model, batch, args.device)
            loss_fn = script.LOSS
            times = []
            cuda = args.device != "cpu"

            def one_step():
                opt.zero_grad(set_to_none=True)
                amp = (torch.autocast(device_type=args.device.split(":")[0], dtype=torch.float16)
                       if mode == "fp16-amp" else contextlib.nullcontext())
                with amp:
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                if clip_norm > 0:  # as the preset's run clips (after unscaling)
                    scaler.unscale_(opt)
                    nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
                scaler.step(opt)
                scaler.update()

            def captured_body():
                amp = (torch.autocast(device_type="cuda", dtype=torch.bfloat16)
                       if mode == "bf16-amp-graph" else contextlib.nullcontext())
                with amp:
                    loss = loss_fn(model(x), y)
                loss.backward()
                if clip_norm > 0:
                    nn.utils.clip_grad_norm_(model.parameters(), clip_norm, foreach=True)
                opt.step()

            if mode.endswith("-graph"):
                opt = capturable_optimizer(opt, model)
                one_step = graph_step(captured_body, opt)

            for _ in range(args.untimed_steps):
                one_step()
            if cuda:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    one_step()
                torch.cuda.synchronize()
                times = [(time.perf_counter() - t0) / args.steps]
            else:
                for _ in range(args.steps):
                    t0 = time.perf_counter()
                    one_step()
                    times.append(time.perf_counter() - t0)
            median = statistics.median(times)
            row = {"preset": label, "mode": mode, "batch": batch, "step_ms": median * 1e3,
                   "samples_per_second": batch / median}
            results.append(row)
            print(f"pytorch {label:12s} {mode:9s} {batch:6d} {median*1e3:10.3f} ms {batch/median:12.0f} samples/s", flush=True)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "device": args.device,
                      "blas": os.environ.get("OPENBLAS_CORETYPE", "default"), "results": results}))


if __name__ == "__main__":
    sys.exit(main())
