"""Checks an exported PyTorch model against MP Workbench's own outputs (test_pytorch_export).

    python3 check_pytorch_export.py CASE.json

CASE.json: {"script", "weights", "inputs", "input_shape", "outputs", "output_shape", "reader"}:
the generated script and its safetensors file, raw little-endian float32 inputs and our outputs,
and the weights reader the script must have used ("safetensors", "numpy" or "any"). Exits 0 when
every output agrees within FP32 tolerance (|ours - torch| <= 1e-4 * (1 + |ours|)), 1 when one does
not or the model cannot be loaded, 77 (skip) when torch or numpy is missing, saying why.
"""
import importlib.util
import json
import struct
import sys


def read_floats(path, shape):
    with open(path, "rb") as f:
        data = f.read()
    count = 1
    for d in shape:
        count *= d
    if len(data) != 4 * count:
        raise ValueError(f"{path}: {len(data)} bytes for shape {shape}")
    return list(struct.unpack(f"<{count}f", data))


def main():
    try:
        import numpy  # noqa: F401  (the script's own reader needs it)
        import torch
    except ImportError as e:
        print(f"SKIP: {sys.executable} cannot import torch and numpy ({e}); install python3-torch")
        return 77
    with open(sys.argv[1]) as f:
        case = json.load(f)
    spec = importlib.util.spec_from_file_location("exported_model", case["script"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load_model(case["weights"])
    if case["reader"] != "any" and module.WEIGHTS_READER != case["reader"]:
        print(f"FAIL: weights read with {module.WEIGHTS_READER}, expected {case['reader']}")
        return 1
    x = torch.tensor(read_floats(case["inputs"], case["input_shape"]), dtype=torch.float32)
    x = x.reshape(case["input_shape"])
    with torch.no_grad():
        y = model(x).reshape(-1).tolist()
    ours = read_floats(case["outputs"], case["output_shape"])
    if len(y) != len(ours):
        print(f"FAIL: torch gives {len(y)} outputs, ours {len(ours)}")
        return 1
    worst = max(range(len(y)), key=lambda i: abs(y[i] - ours[i]) / (1 + abs(ours[i])))
    diff = abs(y[worst] - ours[worst])
    ok = all(abs(a - b) <= 1e-4 * (1 + abs(b)) for a, b in zip(y, ours))
    print(f"{'PASS' if ok else 'FAIL'}: {len(y)} outputs, weights read with {module.WEIGHTS_READER}, "
          f"largest difference {diff:.3g} at output {worst} (torch {y[worst]:.9g}, ours {ours[worst]:.9g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
