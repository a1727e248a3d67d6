#!/usr/bin/python3
"""Times PyTorch on the same networks and batches as `mpwb-cli bench`, for a side-by-side figure.

CPU: eager FP32. CUDA: eager FP32 and torch.autocast(float16) + GradScaler (the AMP recipe).
Prints one line per configuration and a JSON summary; the median step time is the figure,
as in mpwb-cli bench. Networks are read from the same preset JSON files (resources/presets).
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
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(os.path.join(here, "..", "..", "resources", "presets", args.preset + ".json")) as f:
        preset = json.load(f)
    kind = preset["training"]["dataset"]["kind"]
    in_shape = [1, 28, 28] if kind in ("fashion-mnist", "mnist") else [2]
    classes = 10 if kind in ("fashion-mnist", "mnist") else preset["training"]["dataset"].get("classes", 2)
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
            scaler = torch.cuda.amp.GradScaler(enabled=(mode == "fp16-amp"))
            x = torch.randn([batch] + in_shape, device=args.device)
            y = torch.randint(0, classes, (batch,), device=args.device)
            loss_fn = nn.CrossEntropyLoss()
            times = []
            for step in range(args.untimed_steps + args.steps):
                if args.device != "cpu":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                amp = (torch.autocast(device_type=args.device.split(":")[0], dtype=torch.float16)
                       if mode == "fp16-amp" else contextlib.nullcontext())
                with amp:
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                if args.device != "cpu":
                    torch.cuda.synchronize()
                if step >= args.untimed_steps:
                    times.append(time.perf_counter() - t0)
            median = statistics.median(times)
            row = {"preset": args.preset, "mode": mode, "batch": batch, "step_ms": median * 1e3,
                   "samples_per_second": batch / median}
            results.append(row)
            print(f"pytorch {args.preset:12s} {mode:9s} {batch:6d} {median*1e3:10.3f} ms {batch/median:12.0f} samples/s", flush=True)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "device": args.device,
                      "blas": os.environ.get("OPENBLAS_CORETYPE", "default"), "results": results}))


if __name__ == "__main__":
    sys.exit(main())
