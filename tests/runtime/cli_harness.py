"""What the end-to-end CLI tests of tests/runtime share: running stitchopt, collecting
failures (one line each, the test exits 1 when there are any) and finding the test
venv's nvdisasm (PyPI nvidia-cuda-nvdisasm) for the instruction estimate.
"""
import glob
import os
import subprocess
import sys


class Harness:
    def __init__(self, stitchopt):
        self.stitchopt_path = stitchopt
        self.failures = []

    def stitchopt(self, *argv, expect=0, timeout=900):
        """Runs stitchopt; an exit other than `expect` is a failure. Returns its output."""
        proc = subprocess.run([self.stitchopt_path, *argv], capture_output=True, text=True,
                              timeout=timeout)
        text = proc.stdout + proc.stderr
        if proc.returncode != expect:
            self.failures.append(f"stitchopt {' '.join(argv)}: exit {proc.returncode}, "
                                 f"expected {expect}:\n{text[-3000:]}")
        return text

    def check(self, condition, message):
        if not condition:
            self.failures.append(message)

    def finish(self, name):
        """Prints the failures, or that all passed; the exit code."""
        if self.failures:
            print("\n".join(self.failures))
            return 1
        print(f"{name}: all checks passed")
        return 0


def input_shape_flags(entry):
    """The --input-shape arguments of a models/manifest.json entry."""
    return [part for flag in entry["input_shape_flags"] for part in ("--input-shape", flag)]


def venv_nvdisasm():
    """The test venv's nvdisasm, or None."""
    found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                          "nvidia", "cu*", "bin", "nvdisasm")))
    return found[-1] if found else None
