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

ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)"
