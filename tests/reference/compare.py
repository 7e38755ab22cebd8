"""The comparison rule of the reference tests (op_cases.py, model_check.py), and
the two steps both share: running ONNX Runtime unoptimized, and checking the
ref_output_N.pb files stitch_reference wrote against its outputs.

Floats: every element must satisfy |got - want| <= tol * max(|want|, 1), with
tol = 1e-5 for float32/float64 and 1e-2 for float16/bfloat16: a relative bound for
large values that becomes an absolute one below 1, so values near zero don't turn
rounding noise into huge relative errors. NaN must meet NaN, infinities must be
equal. Integers and bools must be equal. Dtypes and shapes must be equal.
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

FLOAT_TOLERANCE = {
    np.dtype(np.float32): 1e-5,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.float16): 1e-2,
}


def tolerance_of(dtype):
    if dtype in FLOAT_TOLERANCE:
        return FLOAT_TOLERANCE[dtype]
    if "bfloat16" in str(dtype):
        return 1e-2
    return None


def compare_arrays(got, want):
    """Returns "" when they match, else a one-line description of the mismatch."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    tol = tolerance_of(want.dtype)
    if tol is None:
        mismatch = got != want
        if np.any(mismatch):
            index = tuple(int(i) for i in np.argwhere(mismatch)[0])
            return (f"{int(mismatch.sum())} elements differ, first at {index}: "
                    f"{got[index]} != {want[index]}")
        return ""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_mismatch = np.isnan(g) != np.isnan(w)
    finite = np.isfinite(w) & np.isfinite(g)
    inf_mismatch = (~finite & ~np.isnan(w) & ~np.isnan(g)) & (g != w)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(finite, np.abs(g - w) / np.maximum(np.abs(w), 1.0), 0.0)
    bad = nan_mismatch | inf_mismatch | (error > tol)
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        worst = float(error.max()) if error.size else 0.0
        return (f"{int(bad.sum())} elements out of tolerance {tol:g} (max scaled error "
                f"{worst:.3g}), first at {index}: {got[index]} vs {want[index]}")
    return ""


def run_onnxruntime(path, feeds):
    """Output names and values of the model at `path` on ORT's CPU provider with
    graph optimizations disabled (the unrewritten graph is the reference)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return names, session.run(names, feeds)


def compare_reference_outputs(directory, names, expected):
    """Compares DIRECTORY/ref_output_N.pb with expected[N] for every output; returns
    "" when all match, else the mismatches joined by "; "."""
    problems = []
    for index, (name, want) in enumerate(zip(names, expected)):
        proto = onnx.TensorProto()
        with open(os.path.join(directory, f"ref_output_{index}.pb"), "rb") as f:
            proto.ParseFromString(f.read())
        got = numpy_helper.to_array(proto)
        problem = compare_arrays(np.asarray(got), np.asarray(want))
        if problem:
            problems.append(f"output {name}: {problem}")
    return "; ".join(problems)
