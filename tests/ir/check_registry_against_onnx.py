#!/usr/bin/env python3
"""Compares the op registry's arity table with ONNX's operator schemas.

For every op the registry knows (read from the ir/shape_rules_*.cc sources), checks
min_opset and the input/output count ranges against onnx.defs for opsets 7..21 of
the default domain (the union over the versions in that range, as the registry
keeps one entry per op) and prints each mismatch. Exit status 1 when any.

A developer tool, not run in CI: it needs the onnx package.
  /tmp/venvtest/bin/python tests/ir/check_registry_against_onnx.py
"""
import pathlib
import re
import sys

import onnx.defs

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIRST_OPSET, LAST_OPSET = 7, 21
VARIADIC = -1


def number(token):
    token = token.strip()
    return VARIADIC if token == "kVariadic" else int(token)


def registry_entries():
    """op -> (min_opset, min_in, max_in, min_out, max_out) parsed from the sources."""
    entries = {}
    for path in sorted((ROOT / "ir").glob("shape_rules_*.cc")):
        text = path.read_text()
        for m in re.finditer(
            r'schemas\.push_back\(\{"(\w+)",\s*[\w:]+,\s*(\d+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),',
            text,
        ):
            entries[m.group(1)] = tuple(number(g) for g in m.groups()[1:])
        for m in re.finditer(r'\{"(\w+)",\s*(\d+),\s*TypeClass::\w+\}', text):
            entries[m.group(1)] = (int(m.group(2)), 1, 1, 1, 1)
        loop = re.search(r'for \(std::string_view op : \{([^}]*)\}\)\s*\{\s*schemas\.push_back\('
                         r'\{op,\s*kind,\s*(\d+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),', text)
        if loop:
            values = tuple(number(g) for g in loop.groups()[1:])
            for name in re.findall(r'"(\w+)"', loop.group(1)):
                entries[name] = values
    return entries


def onnx_entry(op):
    versions = []
    for opset in range(FIRST_OPSET, LAST_OPSET + 1):
        try:
            schema = onnx.defs.get_schema(op, opset, "")
        except onnx.defs.SchemaError:
            continue
        versions.append((opset, schema))
    if not versions:
        return None
    def bound(value):
        return VARIADIC if value >= 2**31 - 1 else value
    return (
        versions[0][0],
        min(s.min_input for _, s in versions),
        VARIADIC if any(bound(s.max_input) == VARIADIC for _, s in versions)
        else max(s.max_input for _, s in versions),
        min(s.min_output for _, s in versions),
        VARIADIC if any(bound(s.max_output) == VARIADIC for _, s in versions)
        else max(s.max_output for _, s in versions),
    )


def main():
    fields = ("min_opset", "min_inputs", "max_inputs", "min_outputs", "max_outputs")
    entries = registry_entries()
    mismatches = 0
    for op in sorted(entries):
        expected = onnx_entry(op)
        if expected is None:
            print(f"{op}: not an ONNX op in opsets {FIRST_OPSET}..{LAST_OPSET}")
            mismatches += 1
            continue
        for field, ours, theirs in zip(fields, entries[op], expected):
            if ours != theirs:
                print(f"{op}: {field} is {ours} in the registry but {theirs} in ONNX")
                mismatches += 1
    print(f"{len(entries)} ops checked, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
