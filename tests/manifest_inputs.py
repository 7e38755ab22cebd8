"""Seeded random inputs for a bundled model, from its models/manifest.json entry.

Shared by the ONNX Runtime round-trip harness (tests/diff) and the reference
interpreter's model check (tests/reference), so both feed the same inputs: float32
standard normal, int64 uniform in the manifest's [low, high) range (token ids below
the vocabulary size), bool fair coin. Seeded per model name.
"""
import zlib

import numpy as np


def random_feeds(entry):
    rng = np.random.default_rng(zlib.crc32(entry["name"].encode()))
    feeds = {}
    for spec in entry["inputs"]:
        shape = tuple(spec["shape"])
        dtype = spec["dtype"]
        if dtype == "float32":
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.float32)
        elif dtype == "int64":
            low, high = spec["range"]
            feeds[spec["name"]] = rng.integers(low, high, size=shape, dtype=np.int64)
        elif dtype == "bool":
            feeds[spec["name"]] = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            raise ValueError(f"manifest input {spec['name']} has unsupported dtype {dtype}")
    return feeds
