"""Checks an exported PyTorch model against MP Workbench's own outputs (test_pytorch_export).

    python3 check_pytorch_export.py CASE.json

CASE.json: {"script", "weights", "inputs", "input_shape", "outputs", "output_shape", "reader"}:
the generated script and its safetensors file (null: the script's default, WEIGHTS_FILE beside
it), raw little-endian float32 inputs and our outputs, and the weights reader the script must have
used ("safetensors", "numpy" or "any"). Optional, for a script written from hostile texts:
"same_code_as", a script of the same network written from plain texts, and "texts_hex", the hex
bytes each module-level string constant (RUN_TITLE, WEIGHTS_FILE, NORMALISATION) must contain.
The script is then parsed before it runs: its syntax tree, string constants masked, must be that
of the plain one (the texts added no code), and each text must read back byte for byte.
Exits 0 when every check passes and every output agrees within FP32 tolerance
(|ours - torch| <= 1e-4 * (1 + |ours|)), 1 when one does not or the model cannot be loaded,
77 (skip) when torch or numpy is missing, saying why.
"""
import ast
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


def code_without_texts(path):
    """The script's syntax tree with every string constant masked, as text."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = "<text>"
    return ast.dump(tree)


def module_texts(path):
    """The module-level NAME = "text" assignments of the script."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    texts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str) and len(node.targets) == 1:
                texts[node.targets[0].id] = node.value.value
    return texts


def check_only_own_code(case):
    """None when the script holds only the writer's code and every text reads back; else why not."""
    try:
        own_code = code_without_texts(case["script"])
    except SyntaxError as e:
        return f"the script is not valid Python: {e}"
    if own_code != code_without_texts(case["same_code_as"]):
        return "the script's code differs from the plain script's: a text became code"
    texts = module_texts(case["script"])
    for name, hex_bytes in case["texts_hex"].items():
        if name not in texts:
            return f"the script has no {name} = \"...\" assignment"
        # surrogateescape: how the script holds bytes that are not UTF-8.
        held = texts[name].encode("utf-8", "surrogateescape")
        if bytes.fromhex(hex_bytes) not in held:
            return f"{name} is {held!r}, which does not hold {bytes.fromhex(hex_bytes)!r}"
    return None


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    # Before anything of the script runs, and before torch (which the check does not need).
    if "same_code_as" in case:
        why = check_only_own_code(case)
        if why:
            print(f"FAIL: {why}")
            return 1
    try:
        import numpy  # noqa: F401  (the script's own reader needs it)
        import torch
    except ImportError as e:
        print(f"SKIP: {sys.executable} cannot import torch and numpy ({e}); install python3-torch")
        return 77
    spec = importlib.util.spec_from_file_location("exported_model", case["script"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load_model(case["weights"])  # None: WEIGHTS_FILE beside the script
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
