#!/usr/bin/env bash
# Runs every test: builds (scripts/setup.sh must have run) and installs the Python
# package into .venv from that build, builds the libFuzzer
# targets with clang into build/fuzz, then ctest (unit tests, the error corpus, the
# differential harness with ONNX Runtime, fuzzer smoke runs).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STITCH_BUILD_DIR:-build}
cmake --build "$build_dir" -j"$(nproc)"
scripts/install_python_package.sh "$build_dir"  # the venv's stitchopt is this build's

if command -v clang++ >/dev/null; then
  fuzz_dir=$build_dir/fuzz
  if [[ ! -f $fuzz_dir/build.ninja ]]; then
    CXX=clang++ cmake -S . -B "$fuzz_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSTITCH_FUZZ_ONLY=ON >/dev/null
  fi
  cmake --build "$fuzz_dir" -j"$(nproc)"
fi

# The tests' temporary files go to a scratch TMPDIR of this run, removed when it ends
# however it ends: CI shares its disk with earlier runs, and the temporary outputs
# some test scripts once left behind (an emulated profile's builds, about 1.3 GB a
# run) filled it. What the tests leave there is listed; over 64 MiB fails the run
# (each test removes what it makes; a compiler killed by a test's time limit may
# leave a file of its own).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/stitch-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
status=0
TMPDIR=$scratch ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" || status=$?
if [[ -n $(ls -A "$scratch") ]]; then
  left=$(du -sm "$scratch" | cut -f1)
  echo "test.sh: the tests left temporary files behind (${left} MiB):"
  find "$scratch" -mindepth 1 -maxdepth 1 -printf "  %f\n" | head -20 || true
  if [[ $left -gt 64 && $status -eq 0 ]]; then status=1; fi
fi
exit "$status"
