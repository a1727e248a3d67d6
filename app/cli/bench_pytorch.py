#!/usr/bin/python3
"""Times PyTorch on the same networks and batches as `mpwb-cli bench`, for a side-by-side figure.

CPU: eager FP32. CUDA: eager FP32 and torch.autocast(float16) + GradScaler (the AMP recipe).
Prints one line per configuration and a JSON summary. CPU: the median step time, as mpwb-cli
bench prints for the CPU. CUDA: the mean over the timed window with one synchronisation at each
end, as mpwb-cli bench measures its device steps (a sync per step would charge PyTorch for
latency our asynchronous loop never waits for). Networks are read from the same preset JSON
files (resources/presets) or a network file (--network, e.g. app/cli/bench_networks/mlp-4096.json
with --input 4096 --classes 4096 --batches 512).
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn


def build(layers, in_shape):
    modules, shape = [], list(in_shape)
    for spec in layers:
        t = spec["type"]
        if t == "Flatten":
            modules.append(nn.Flatten())
            n = 1
            for d in shape:
                n *= d
            shape = [n]
        elif t == "Linear":
            modules.append(nn.Linear(shape[0], spec["out"], bias=spec.get("bias", True)))
            shape = [spec["out"]]
        elif t == "Conv2d":
            k, s, p = spec["kernel"], spec.get("stride", 1), spec.get("padding", 0)
            modules.append(nn.Conv2d(shape[0], spec["out_channels"], k, s, p))
            shape = [spec["out_channels"], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif t in ("MaxPool2d", "AvgPool2d"):
            k = spec.get("kernel", 2)
            s, p = spec.get("stride", k), spec.get("padding", 0)
            modules.append((nn.MaxPool2d if t == "MaxPool2d" else nn.AvgPool2d)(k, s, p))
            shape = [shape[0], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif t == "ReLU":
            modules.append(nn.ReLU())
        elif t == "Tanh":
            modules.append(nn.Tanh())
        elif t == "Sigmoid":
            modules.append(nn.Sigmoid())
        elif t == "GELU":
            modules.append(nn.GELU())
        elif t == "LeakyReLU":
            modules.append(nn.LeakyReLU(spec.get("slope", 0.01)))
        elif t == "Dropout":
            modules.append(nn.Dropout(spec.get("p", 0.5)))
        elif t == "BatchNorm":
            modules.append(nn.BatchNorm1d(shape[0]) if len(shape) == 1 else nn.BatchNorm2d(shape[0]))
        else:
            raise SystemExit(f"unsupported layer {t}")
    return nn.Sequential(*modules), shape


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
    ap.add_argument("--optimizer", default=None, help="override the preset's optimizer (sgd, adam)")
    ap.add_argument("--network", default=None, help="network JSON file instead of the preset's network")
    ap.add_argument("--input", type=int, default=0, help="features per sample (default: the preset's data shape)")
    ap.add_argument("--classes", type=int, default=0, help="classes of the random labels (default: the preset's)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(os.path.join(here, "..", "..", "resources", "presets", args.preset + ".json")) as f:
        preset = json.load(f)
    kind = preset["training"]["dataset"]["kind"]
    in_shape = [1, 28, 28] if kind in ("fashion-mnist", "mnist") else [2]
    classes = 10 if kind in ("fashion-mnist", "mnist") else preset["training"]["dataset"].get("classes", 2)
    if args.input:
        in_shape = [args.input]
    if args.classes:
        classes = args.classes
    label = args.preset
    if args.network:
        with open(args.network) as f:
            preset["network"] = json.load(f)
        label = os.path.splitext(os.path.basename(args.network))[0]
    opt_kind = args.optimizer or preset["training"].get("optimizer", {}).get("kind", "sgd")
    lr = preset["training"].get("lr", 0.01)
    results = []
    modes = ["fp32"] + (["fp16-amp"] if args.amp else [])
    for mode in modes:
        for batch in [int(b) for b in args.batches.split(",")]:
            torch.manual_seed(0)
            model, _ = build(preset["network"]["layers"], in_shape)
            model = model.to(args.device)
            opt = torch.optim.Adam(model.parameters(), lr) if opt_kind == "adam" else torch.optim.SGD(model.parameters(), lr, momentum=0.9)
            scaler = (torch.amp.GradScaler(args.device.split(":")[0], enabled=(mode == "fp16-amp"))
                      if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler(enabled=(mode == "fp16-amp")))
            x = torch.randn([batch] + in_shape, device=args.device)
            y = torch.randint(0, classes, (batch,), device=args.device)
            loss_fn = nn.CrossEntropyLoss()
            times = []
            cuda = args.device != "cpu"

            def one_step():
                opt.zero_grad(set_to_none=True)
                amp = (torch.autocast(device_type=args.device.split(":")[0], dtype=torch.float16)
                       if mode == "fp16-amp" else contextlib.nullcontext())
                with amp:
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()

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
