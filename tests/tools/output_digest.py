#!/usr/bin/env python3
"""Digests of everything stitchopt writes for every bundled model and every export.

A refactoring that claims "no output changes" is checked with it (issue 37): compile
every model of models/manifest.json and of the exports' manifest with one binary,
record a SHA-256 per output file, and compare with another binary's record:

    output_digest.py --stitchopt OLD/stitchopt --work /tmp/d --save before.json
    output_digest.py --stitchopt NEW/stitchopt --work /tmp/d --compare before.json

JSON files are compared without their wall-clock fields ("seconds", the model's
path); everything else byte for byte. --compare prints each differing file with the
first differing JSON paths (or lines), and exits 1 when any file differs.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WALL_CLOCK_KEYS = {"seconds"}


def normalize(value):
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if k not in WALL_CLOCK_KEYS}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def canonical_bytes(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".json"):
        document = normalize(json.loads(data))
        if isinstance(document, dict) and isinstance(document.get("model"), dict):
            document["model"].pop("path", None)
        return json.dumps(document, indent=1, sort_keys=True).encode()
    return data


def models(exports_dir):
    """(label, path, flags) for every bundled model and every export."""
    found = []
    with open(os.path.join(ROOT, "models", "manifest.json")) as f:
        for entry in json.load(f)["models"]:
            flags = []
            for spec in entry["input_shape_flags"]:
                flags += ["--input-shape", spec]
            found.append((entry["name"], os.path.join(ROOT, "models", entry["file"]), flags))
    manifest = os.path.join(exports_dir, "manifest.json") if exports_dir else ""
    if manifest and os.path.exists(manifest):
        with open(manifest) as f:
            for entry in json.load(f)["models"]:
                flags = []
                if entry["dynamic"]:
                    for spec in entry["inputs"]:
                        flags += ["--input-shape",
                                  f"{spec['name']}={','.join(map(str, spec['shape']))}"]
                found.append((entry["file"][:-5], os.path.join(exports_dir, entry["file"]),
                              flags))
    return found


def digest_one(stitchopt, work, extra, label, path, flags):
    out = os.path.join(work, label)
    command = [stitchopt, path, "-o", out, "-q", "--force"] + flags + extra
    done = subprocess.run(command, capture_output=True, text=True)
    record = {"exit": done.returncode}
    if done.returncode != 0:
        record["stderr"] = done.stderr.strip()
        return label, record, {}
    files = {}
    contents = {}
    for directory, _, names in os.walk(out):
        for name in names:
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, out)
            data = canonical_bytes(full)
            files[relative] = hashlib.sha256(data).hexdigest()
            contents[relative] = data
    record["files"] = dict(sorted(files.items()))
    return label, record, contents


def first_differences(old, new, limit=8):
    try:
        a, b = json.loads(old), json.loads(new)
    except ValueError:
        a, b = old.decode(errors="replace").splitlines(), new.decode(
            errors="replace").splitlines()
    found = []

    def walk(x, y, where):
        if len(found) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y)):
                walk(x.get(key), y.get(key), f"{where}.{key}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{where}[{i}]")
        elif x != y:
            found.append(f"{where}: {str(x)[:120]!r} -> {str(y)[:120]!r}")

    walk(a, b, "")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--work", required=True, help="scratch directory for the outputs")
    parser.add_argument("--exports", default=os.path.join(ROOT, "build", "exports", "models"),
                        help="directory of the exports' manifest.json (optional)")
    parser.add_argument("--save", help="write the digests here")
    parser.add_argument("--compare", help="compare with digests saved by --save")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--flag", action="append", default=[],
                        help="an extra stitchopt flag for every compile (repeatable), e.g. "
                             "--flag=--no-stencil-tiles")
    args = parser.parse_args()
    stitchopt = os.path.abspath(args.stitchopt)
    os.makedirs(args.work, exist_ok=True)
    digests, contents = {}, {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(digest_one, stitchopt, args.work, args.flag, *m) for m in models(args.exports)]
        for job in jobs:
            label, record, files = job.result()
            digests[label] = record
            contents[label] = files
    digests = dict(sorted(digests.items()))
    if args.save:
        saved = {"digests": digests,
                 "contents": {label: {name: data.decode("latin-1")
                                      for name, data in files.items()}
                              for label, files in contents.items()}}
        with open(args.save, "w") as f:
            json.dump(saved, f)
        print(f"{len(digests)} models, "
              f"{sum(len(r.get('files', {})) for r in digests.values())} files -> {args.save}")
    if not args.compare:
        return 0
    with open(args.compare) as f:
        before = json.load(f)
    differing = 0
    for label in sorted(set(before["digests"]) | set(digests)):
        old, new = before["digests"].get(label), digests.get(label)
        if old is None or new is None:
            print(f"{label}: only {'after' if old is None else 'before'}")
            differing += 1
            continue
        if old["exit"] != new["exit"]:
            print(f"{label}: exit {old['exit']} -> {new['exit']} {new.get('stderr', '')}")
            differing += 1
            continue
        old_files, new_files = old.get("files", {}), new.get("files", {})
        for name in sorted(set(old_files) | set(new_files)):
            if old_files.get(name) == new_files.get(name):
                continue
            differing += 1
            if name not in old_files or name not in new_files:
                print(f"{label}/{name}: only {'after' if name not in old_files else 'before'}")
                continue
            print(f"{label}/{name}: differs")
            was = before["contents"][label][name].encode("latin-1")
            for line in first_differences(was, contents[label][name]):
                print(f"    {line}")
    total = sum(len(r.get("files", {})) for r in digests.values())
    print(f"{differing} of {total} files differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
