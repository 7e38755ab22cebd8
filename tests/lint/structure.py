#!/usr/bin/env python3
"""Structure lint: sizes, complexity and layering, kept by CI (issue 37).

Usage: structure.py [--root REPO] [--baseline FILE] [--write-baseline] [--self-test]

Fails on
  - a code file (C++, CUDA, Python) over MAX_FILE_LINES lines;
  - a function over MAX_FUNCTION_LINES lines or over MAX_COMPLEXITY cyclomatic
    complexity (lizard, from the test venv);
  - an #include "folder/..." from one top-level folder into another that the table
    under "## Layering" in docs/architecture.md does not allow;
  - a header (.h, .cuh) under one of README_FOLDERS, subfolders included, that the
    folder's README.md does not name by its file name (or a missing README.md);
the first three unless the violation is recorded in the baseline
(tests/lint/structure_baseline.json): the debt that existed when this check came (main
of 2026-11-29), each entry with the size it had then. The baseline only shrinks: an
entry whose file or function grew fails, and so does an entry that no longer violates
(remove it: the check says so).
Registration tables, which are long by nature, are listed by name in
PERMANENT_EXCEPTIONS. Generated files (the codegen goldens) are not code we write.

--write-baseline rewrites the baseline from the tree (only to record a decision,
never to make a failure go away; README failures have no baseline). --self-test
plants each kind of violation in a scratch tree and checks that each is reported.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import lizard

MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 150
MAX_COMPLEXITY = 30
CODE_SUFFIXES = (".cc", ".h", ".cu", ".cuh", ".py")
# Generated, pinned outputs of the emitter, and data: not code anyone writes.
GENERATED = (re.compile(r"^tests/codegen_golden/golden/"), re.compile(r"^models/.*\.onnx$"))
# Tables that register one entry per op or case: their length is the number of ops.
PERMANENT_EXCEPTIONS = {
    "ir/reference/reference_ops_elementwise.cc::stitch::ir::reference::add_elementwise_kernels",
    "tests/onnx_import/shape_crosscheck_test.cc::stitch::onnx_import::cases",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Top-level code folders whose README.md lists every header in them, one line each.
README_FOLDERS = ("artifact", "cli", "cost_model", "driver", "emit", "fusion", "ir",
                  "onnx_import", "profiling", "runtime_stub", "support")
HEADER_SUFFIXES = (".h", ".cuh")


def tracked_files(root):
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True, text=True, check=True).stdout
    return sorted(path for path in listed.split()
                  if path.endswith(CODE_SUFFIXES) and not any(p.search(path) for p in GENERATED)
                  and (root / path).is_file())


def allowed_edges(root):
    """folder -> set of folders it may include, from docs/architecture.md's table
    "| folder | may include |" under "## Layering"; plus header-level exceptions
    written as folder/file in the second column, and subfolder rows (a first column
    such as `artifact/reader/`) whose edges add to their folder's."""
    text = (root / "docs" / "architecture.md").read_text()
    section = text.split("\n## Layering", 1)
    if len(section) < 2:
        sys.exit("docs/architecture.md has no '## Layering' section")
    edges = {}
    for line in section[1].split("\n## ", 1)[0].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`/")
        edges[folder] = {item.strip().strip("`").rstrip("/")
                         for item in cells[1].split(",") if item.strip() not in ("", "-")}
    return edges


def measure(root, files, edges):
    """The violations of the tree: {"files": {path: lines}, "functions": {key: [lines,
    complexity]}, "includes": {"path -> header": 1}}."""
    found = {"files": {}, "functions": {}, "includes": {}}
    folders = {path.split("/")[0] for path in files if "/" in path}
    for path in files:
        text = (root / path).read_text(errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            found["files"][path] = lines
        for function in lizard.analyze_file.analyze_source_code(path, text).function_list:
            key = f"{path}::{function.name}"
            if key in PERMANENT_EXCEPTIONS:
                continue
            if function.length > MAX_FUNCTION_LINES or \
                    function.cyclomatic_complexity > MAX_COMPLEXITY:
                old = found["functions"].get(key, [0, 0])
                found["functions"][key] = [max(old[0], function.length),
                                           max(old[1], function.cyclomatic_complexity)]
        if "/" not in path or path.endswith(".py"):
            continue
        source = path.split("/")[0]
        if source == "tests":
            continue  # tests may include what they test
        for line in text.splitlines():
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            target = header.split("/")[0]
            if target == source or target not in folders:
                continue
            # A row may name a subfolder (artifact/reader/): its edges add to its folder's.
            allowed = set()
            for row, row_allowed in edges.items():
                if row == source or path.startswith(row + "/"):
                    allowed |= row_allowed
            if target in allowed or header in allowed:
                continue
            found["includes"][f"{path} -> {header}"] = 1
    return found


def readme_failures(root, files):
    """Headers of README_FOLDERS that their folder's README.md does not name, as lines.
    A header is named when its file name appears in the README as a word of its own
    (`core/graph.h` and `graph.h` name graph.h; `composition_plan.h` does not name
    plan.h)."""
    failures = []
    for folder in README_FOLDERS:
        if not (root / folder).is_dir():
            continue
        headers = [path for path in files
                   if path.startswith(folder + "/") and path.endswith(HEADER_SUFFIXES)]
        readme = root / folder / "README.md"
        if not readme.is_file():
            failures.append(f"{folder}/README.md: missing; write one: what {folder}/ is for, "
                            "its place in the layering and every header it holds")
            continue
        text = readme.read_text(errors="replace")
        for path in headers:
            name = path.rsplit("/", 1)[-1]
            if not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
                failures.append(f"{folder}/README.md: does not name {path}; add it with one "
                                "line on what it holds (its header comment)")
    return failures


def compare(found, baseline):
    """Failures of `found` against `baseline`, as lines."""
    failures = []
    for path, lines in sorted(found["files"].items()):
        recorded = baseline["files"].get(path)
        if recorded is None:
            failures.append(f"{path}: {lines} lines, more than {MAX_FILE_LINES}; split it along "
                            "its concepts (STYLE.md 13)")
        elif lines > recorded:
            failures.append(f"{path}: {lines} lines, grown from the {recorded} the baseline "
                            "allows; the baseline only shrinks")
    for key, (length, complexity) in sorted(found["functions"].items()):
        recorded = baseline["functions"].get(key)
        what = f"{key}: {length} lines, cyclomatic complexity {complexity}"
        if recorded is None:
            failures.append(f"{what}; a function may have at most {MAX_FUNCTION_LINES} lines "
                            f"and complexity {MAX_COMPLEXITY}: split it")
        elif length > recorded[0] or complexity > recorded[1]:
            failures.append(f"{what}, grown from {recorded[0]} lines, complexity {recorded[1]} "
                            "in the baseline; the baseline only shrinks")
    for edge in sorted(found["includes"]):
        if edge not in baseline["includes"]:
            failures.append(f"{edge}: an include docs/architecture.md's layering table does not "
                            "allow; depend the other way, or move the shared type down")
    for kind in ("files", "functions", "includes"):
        for key in sorted(set(baseline[kind]) - set(found[kind])):
            failures.append(f"{key}: fixed, so remove it from the baseline "
                            "(tests/lint/structure_baseline.json)")
    return failures


def check(root, baseline_path, write):
    files = tracked_files(root)
    found = measure(root, files, allowed_edges(root))
    if write:
        baseline_path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {baseline_path}")
        return 0
    baseline = json.loads(baseline_path.read_text())
    failures = compare(found, baseline) + readme_failures(root, files)
    for failure in failures:
        print(f"FAIL {failure}")
    debt = sum(len(baseline[kind]) for kind in ("files", "functions", "includes"))
    print(f"{len(files)} files checked; {len(failures)} failures; {debt} baseline entries")
    return 1 if failures else 0


def self_test():
    """Plants one violation of each kind in a scratch repository and checks that an
    empty baseline reports each, that a recorded entry that grew is reported, and that
    a header its folder's README.md does not name (only a longer name that ends in
    it), and a folder without README.md, are reported while listed headers are not."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        (root / "docs").mkdir()
        (root / "docs" / "architecture.md").write_text(
            "# a\n\n## Layering\n\n| folder | may include |\n|---|---|\n"
            "| `ir/` | `support` |\n| `support/` | - |\n| `support/sub/` | `ir` |\n\n"
            "## Next\n")
        (root / "ir").mkdir()
        (root / "support").mkdir()
        (root / "support" / "a.h").write_text('#include "ir/b.h"\n')
        (root / "ir" / "b.h").write_text('#include "support/a.h"\n')
        (root / "support" / "sub").mkdir()
        (root / "support" / "sub" / "d.h").write_text('#include "ir/b.h"\n')
        body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES))
        (root / "ir" / "long.cc").write_text(f"int f(int x) {{\n{body}  return x;\n}}\n")
        branches = "".join(f"  if (x == {i}) return {i};\n" for i in range(MAX_COMPLEXITY + 1))
        (root / "ir" / "branchy.cc").write_text(f"int g(int x) {{\n{branches}  return 0;\n}}\n")
        (root / "ir" / "big.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
        (root / "ir" / "core").mkdir()
        (root / "ir" / "core" / "c.h").write_text("int c();\n")
        (root / "ir" / "unlisted.h").write_text("int u();\n")
        (root / "ir" / "README.md").write_text(
            "# ir/\n\n- b.h: b\n- `core/c.h`: c\n- old_unlisted.h: another header\n")
        found = measure(root, tracked_files(root), allowed_edges(root))
        empty = {"files": {}, "functions": {}, "includes": {}}
        failures = compare(found, empty)
        expected = ["ir/big.py: 901 lines", "ir/long.cc::f: 153 lines",
                    "ir/branchy.cc::g: 34 lines, cyclomatic complexity 32",
                    "support/a.h -> ir/b.h: an include"]
        missing = [text for text in expected if not any(f.startswith(text) for f in failures)]
        allowed = [f for f in failures if f.startswith(("ir/b.h", "support/sub/d.h"))]
        grown = compare(found, {"files": {"ir/big.py": 900}, "functions": found["functions"],
                                "includes": found["includes"]})
        stale = compare(found, {"files": dict(found["files"], **{"ir/gone.cc": 950}),
                                "functions": found["functions"], "includes": found["includes"]})
        readmes = readme_failures(root, tracked_files(root))
        expected_readmes = ["ir/README.md: does not name ir/unlisted.h",
                            "support/README.md: missing"]
        problems = []
        if [f.split(";")[0] for f in readmes] != expected_readmes:
            problems.append(f"README failures: expected {expected_readmes}, got {readmes}")
        if missing:
            problems.append(f"planted violations not reported: {missing} (got {failures})")
        if allowed:
            problems.append(f"an allowed include was reported: {allowed}")
        if grown != ["ir/big.py: 901 lines, grown from the 900 the baseline allows; the "
                     "baseline only shrinks"]:
            problems.append(f"a grown baseline entry: {grown}")
        if not any(f.startswith("ir/gone.cc: fixed") for f in stale):
            problems.append(f"a stale baseline entry: {stale}")
        for problem in problems:
            print(f"FAIL {problem}")
        cases = len(expected) + 4
        print(f"self-test: {cases - len(problems)} of {cases} planted cases reported as "
              "they should")
        return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parents[2], type=Path)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--write-baseline", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    baseline = args.baseline or args.root / "tests" / "lint" / "structure_baseline.json"
    return check(args.root, baseline, args.write_baseline)


if __name__ == "__main__":
    sys.exit(main())
