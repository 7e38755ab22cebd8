#!/usr/bin/env python3
"""Compiles every bundled model (models/manifest.json, with its --input-shape flags)
into OUT/<model>/ with the given stitchopt, so two builds can be compared:

    scripts/compile_bundled.py --stitchopt OLD/bin/stitchopt /tmp/before
    scripts/compile_bundled.py --stitchopt build/bin/stitchopt /tmp/after
    scripts/compile_bundled.py --compare /tmp/before /tmp/after

--compare lists every file that differs, ignoring report.json's timings (the only
fields that vary between runs), the emulation's build products and profile.json.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def without_timings(value):
    if isinstance(value, dict):
        return {k: (0 if k == "seconds" else without_timings(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def comparable(path):
    data = path.read_bytes()
    if path.name == "report.json":
        report = without_timings(json.loads(data))
        report.get("model", {}).pop("path", None)
        return json.dumps(report, indent=1).encode()
    return data


def files(root):
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and "emu_build" not in p.parts
            and "emu_counters_build" not in p.parts and p.name != "profile.json"}


def compare(before, after):
    before, after = Path(before), Path(after)
    differ = 0
    for name in sorted(files(before) | files(after)):
        a, b = before / name, after / name
        if not a.exists() or not b.exists():
            print(f"only in {'after' if not a.exists() else 'before'}: {name}")
            differ += 1
        elif comparable(a) != comparable(b):
            print(f"differs: {name}")
            differ += 1
    print(f"{differ} files differ")
    return 1 if differ else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("out", nargs="?")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text())
    failed = 0
    for entry in manifest["models"]:
        out = Path(args.out) / entry["name"]
        flags = [f for flag in entry["input_shape_flags"] for f in ("--input-shape", flag)]
        command = [args.stitchopt, str(ROOT / "models" / entry["file"]), "-o", str(out), "-q"]
        result = subprocess.run(command + flags, capture_output=True, text=True)
        if result.returncode != 0:
            failed += 1
            print(f"{entry['name']}: exit {result.returncode}: {result.stderr.strip()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
