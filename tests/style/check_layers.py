#!/usr/bin/env python3
"""Holds every include of core/, sessions/, widgets/ and app/ to the table of allowed arrows.

    python3 check_layers.py SOURCE_DIR            the tree against tests/style/layers.txt
    python3 check_layers.py --planted SOURCE_DIR  the check itself, against planted includes

The table (layers.txt beside this script) has one row per folder, "folder: entries": what the
files directly in that folder may include besides the files of their own folder. An entry is a
folder (any file directly in it), one file, or Qt (Qt's headers: <Q...>, <qt...>, <q*.h>). A row
for one file replaces its folder's row for that file, own folder included: the plain value
headers that the widgets may take from the engine have such rows, so that they stay plain.

Every #include "..." must follow an arrow of its file's row, and a file whose row does not name
Qt includes no Qt header. Each break is reported as FILE:LINE with the arrow it breaks and which
way it goes: up (the included unit reaches the includer through the table), past a layer (it is
below, but only through what the row names) or sideways. The table is checked too: every entry
exists, every folder with sources has a row, and no arrow leads back to where it started.

--planted adds, in memory, one include of each kind the check must refuse to a file of the tree
and fails unless each is reported with its line and direction: the check can fail.
Exits 0 when everything follows the table (or every planted include was caught), 1 otherwise.
"""
import os
import re
import sys

SCANNED = ("core", "sessions", "widgets", "app")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cu", ".cuh")
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ANGLED = re.compile(r"^\s*#\s*include\s*<([^>]+)>")
QT_HEADER = re.compile(r"^(Q|qt)\w*|^q\w+\.h$")
QT = "Qt"
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.txt")

# (file, the line planted at its end, what the report of that line must say)
PLANTED = [
    ("core/nn/layer.h", '#include "core/engine/step_engine.h"', "goes up (core/engine sits above core/nn)"),
    ("core/precision/loss_scaler.h", '#include "core/backend/backend.h"', "goes sideways"),
    ("sessions/run_recorder.cpp", '#include "core/backend/cpu/blas_kernel.h"', "skips a layer"),
    ("widgets/scaling_view.h", '#include "core/train/trainer.h"', "skips a layer"),
    ("core/train/run_records.h", '#include "core/train/observer.h"', "the arrow core/train/run_records.h ->"),
    ("core/common/error.h", "#include <QString>", "core/common includes no Qt"),
]


def is_file(unit):
    return unit.endswith(SOURCE_SUFFIXES)


def read_table(path, root, problems):
    """{unit: set of entries}; a unit is a folder or a file. An indented line goes on with the
    row above it."""
    rows, unit = {}, None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].rstrip()
            where = f"layers.txt:{number}"
            if not text.strip():
                continue
            if text[0].isspace() and unit:
                entries = text.split()
            else:
                unit, sep, rest = text.partition(":")
                unit = unit.strip()
                if not sep or not unit:
                    problems.append(f"{where}: not a row ('folder: entries'): {text}")
                    unit = None
                    continue
                if unit in rows:
                    problems.append(f"{where}: a second row for {unit}")
                rows[unit], entries = set(), rest.split()
                if not os.path.exists(os.path.join(root, unit)):
                    problems.append(f"{where}: {unit} does not exist")
            rows[unit] |= set(entries)
            for name in entries:
                if name != QT and not os.path.exists(os.path.join(root, name)):
                    problems.append(f"{where}: {unit} names {name}, which does not exist")
    return rows


def unit_of(path, rows):
    """The row that rules `path`: its own when it has one, else its folder's (None: no row)."""
    if path in rows:
        return path
    folder = os.path.dirname(path)
    return folder if folder in rows else None


def allows(rows, unit, target):
    """Whether a file ruled by `unit` may include the project file `target`."""
    entries = rows[unit]
    folder = os.path.dirname(target)
    own_folder = not is_file(unit) and folder == unit
    return own_folder or target in entries or folder in entries


def arrows(rows):
    """The table as a graph over units: unit -> the units its files may include. A file entry
    without a row of its own stands for its folder, whose row rules it; a folder entry reaches
    the files of that folder that have rows of their own."""
    graph = {}
    for unit, entries in rows.items():
        reach = set(entries) - {QT}
        if not is_file(unit):
            reach.add(unit)
        targets = set()
        for entry in reach:
            if is_file(entry):
                targets.add(entry if entry in rows else os.path.dirname(entry))
            else:
                targets.add(entry)
                targets |= {u for u in rows if is_file(u) and os.path.dirname(u) == entry}
        targets.discard(unit)
        graph[unit] = targets
    return graph


def reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def sources(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, name), root)


def check_table(rows, graph, files, problems):
    for unit in rows:
        if unit in reachable(graph, unit):
            problems.append(f"layers.txt: {unit} reaches itself through the arrows (a cycle)")
    for folder in sorted({os.path.dirname(f) for f in files} - set(rows)):
        problems.append(f"layers.txt: the folder {folder} has sources but no row")


def direction(graph, unit, target_unit):
    if target_unit is None:
        return "leads to a folder the table does not know"
    if unit in reachable(graph, target_unit):
        return f"goes up ({target_unit} sits above {unit})"
    if target_unit in reachable(graph, unit):
        return f"skips a layer ({target_unit} is below {unit}, but only through what {unit} may include)"
    return f"goes sideways ({target_unit} is neither above nor below {unit})"


def check_lines(path, lines, rows, graph, problems):
    """Checks the includes among `lines` of `path`; returns how many it checked."""
    unit = unit_of(path, rows)
    if unit is None:
        return 0  # its folder is reported once by check_table
    allowed = " ".join(sorted(rows[unit])) or "nothing"
    count = 0
    for number, line in enumerate(lines, 1):
        quoted, angled = QUOTED.match(line), ANGLED.match(line)
        if quoted:
            count += 1
            target = quoted.group(1)
            if not allows(rows, unit, target):
                target_unit = unit_of(target, rows)
                problems.append(f"{path}:{number}: #include \"{target}\": the arrow {unit} -> "
                                f"{target_unit or os.path.dirname(target)} is not in the table; it "
                                f"{direction(graph, unit, target_unit)}. {unit} may include: {allowed}")
        elif angled and QT_HEADER.match(angled.group(1)):
            count += 1
            if QT not in rows[unit]:
                problems.append(f"{path}:{number}: #include <{angled.group(1)}>: {unit} includes no Qt "
                                f"(it builds and runs where Qt is not installed)")
    return count


def read_lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def check_tree(root):
    problems = []
    rows = read_table(TABLE, root, problems)
    graph = arrows(rows)
    files = list(sources(root))
    check_table(rows, graph, files, problems)
    includes = sum(check_lines(path, read_lines(root, path), rows, graph, problems) for path in files)
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} includes or rows break the allowed arrows of tests/style/layers.txt")
        return 1
    print(f"{includes} includes in {len(files)} files follow the {len(rows)} rows of tests/style/layers.txt")
    return 0


def check_planted(root):
    rows = read_table(TABLE, root, [])
    graph = arrows(rows)
    missed = 0
    for path, planted, expected in PLANTED:
        lines = read_lines(root, path) + [planted]
        problems = []
        check_lines(path, lines, rows, graph, problems)
        where = f"{path}:{len(lines)}: "
        caught = [p for p in problems if p.startswith(where) and expected in p]
        print(caught[0] if caught else f"MISSED: {where}{planted} (expected: {expected}); got {problems}")
        missed += not caught
    if missed:
        print(f"the check let {missed} of {len(PLANTED)} planted includes through")
        return 1
    print(f"all {len(PLANTED)} planted includes refused")
    return 0


def main(argv):
    if len(argv) == 2 and not argv[1].startswith("-"):
        return check_tree(argv[1])
    if len(argv) == 3 and argv[1] == "--planted":
        return check_planted(argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
