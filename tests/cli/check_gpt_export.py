"""Checks an exported GPT (a text run's `runs export --pytorch`) against MP Workbench (test_gpt_export).

    python3 check_gpt_export.py CASE.json

CASE.json: {"script", "weights", "windows", "targets", "logits", "shape", "loss", "text", "ids",
"prompt", "generated"}: the generated script and its safetensors file; raw little-endian float32
token windows and their next-token targets [n, T] and our logits on them [n, T, V]; our loss on
them (the run's loss, its z-loss included); a text and the ids our vocabulary gives it; a prompt
and what `mpwb-cli generate --temperature 0` printed for it (the prompt, then the drawn text).
Checks that the script's model gives our logits within FP32 tolerance (|ours - torch| <= 1e-4 *
(1 + |ours|)), its LOSS our loss within the same, its encode and decode our ids and text, and its
greedy generate() the text mpwb-cli drew. Exits 0 when all agree, 1 when one does not (each
disagreement printed), 77 (skip) when torch is missing, saying why.
"""
import importlib.util
import json
import struct
import sys


def read_floats(path, count):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != 4 * count:
        raise ValueError(f"{path}: {len(data)} bytes for {count} floats")
    return list(struct.unpack(f"<{count}f", data))


def close(ours, theirs):
    return abs(ours - theirs) <= 1e-4 * (1 + abs(ours))


def load_script(path):
    spec = importlib.util.spec_from_file_location("exported_gpt", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_logits(case, m, model, torch):
    """The disagreements of the model's logits and LOSS with ours."""
    n, tokens, vocabulary = case["shape"]
    windows = torch.tensor(read_floats(case["windows"], n * tokens)).reshape(n, tokens)
    targets = torch.tensor(read_floats(case["targets"], n * tokens)).reshape(n, tokens)
    ours = read_floats(case["logits"], n * tokens * vocabulary)
    with torch.no_grad():
        logits = model(windows)
        loss = float(m.LOSS(logits, targets))
    problems = []
    if list(logits.shape) != [n, tokens, vocabulary]:
        return [f"logits have shape {list(logits.shape)}, ours {[n, tokens, vocabulary]}"]
    theirs = logits.flatten().tolist()
    bad = [i for i in range(len(ours)) if not close(ours[i], theirs[i])]
    if bad:
        worst = max(bad, key=lambda i: abs(ours[i] - theirs[i]))
        problems.append(f"{len(bad)} of {len(ours)} logits differ, worst at {worst}: ours {ours[worst]}, "
                        f"torch {theirs[worst]}")
    if not close(case["loss"], loss):
        problems.append(f"LOSS gives {loss}, our loss is {case['loss']}")
    return problems


def check_text(case, m, model):
    """The disagreements of encode, decode and greedy generate() with ours."""
    problems = []
    if m.encode(case["text"]) != case["ids"]:
        problems.append(f"encode({case['text']!r}) is {m.encode(case['text'])}, ours {case['ids']}")
    if m.decode(case["ids"]) != case["text"]:
        problems.append(f"decode({case['ids']}) is {m.decode(case['ids'])!r}, ours {case['text']!r}")
    prompt, generated = case["prompt"], case["generated"]
    drawn = m.generate(model, prompt, len(m.encode(generated)) - len(m.encode(prompt)), temperature=0)
    if prompt + m.decode(drawn) != generated:
        problems.append(f"greedy generate gives {prompt + m.decode(drawn)!r}, mpwb-cli generate {generated!r}")
    return problems


def main():
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: {e}")
        return 77
    with open(sys.argv[1]) as f:
        case = json.load(f)
    m = load_script(case["script"])
    model = m.load_model(case["weights"])
    problems = check_logits(case, m, model, torch) + check_text(case, m, model)
    for problem in problems:
        print(problem)
    print("agree" if not problems else f"{len(problems)} disagreement(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
