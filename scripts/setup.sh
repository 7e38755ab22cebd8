#!/usr/bin/env bash
# Installs what stitchopt needs on Debian 12 (only what is missing), makes the test
# harness's Python venv (.venv, pinned by scripts/requirements.txt), builds into
# build/ and installs the Python package stitchopt into .venv. Idempotent: a second run with everything in place takes seconds.
#
#   scripts/setup.sh            install + build
#   STITCH_BUILD_DIR=dir ...     build somewhere else
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libonnx-dev libprotobuf-dev protobuf-compiler zlib1g-dev
  libglpk-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format clang-tidy graphviz
  python3 python3-venv python3-pip python3-dev
  python3-torch python3-torchvision  # tests/exports: real torch.onnx.export output
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null; then
  echo "setup: note: no CUDA toolkit at /usr/local/cuda; GPU parts are skipped"
fi

# The test harness's Python: Debian's python3 with pinned PyPI packages. The stamp
# holds the requirements' hash so a changed pin reinstalls.
# scripts/requirements-headers.txt is installed without dependencies (header files).
requirements=scripts/requirements.txt
headers=scripts/requirements-headers.txt
stamp=.venv/.requirements.sha256
want=$(cat "$requirements" "$headers" | sha256sum | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "setup: creating .venv from $requirements and $headers"
  /usr/bin/python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r "$requirements"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r "$headers"
  echo "$want" > "$stamp"
fi

build_dir=${STITCH_BUILD_DIR:-build}
if [[ ! -f $build_dir/build.ninja ]]; then
  # -g1: line tables and function names (backtraces, addr2line, perf) for two thirds
  # of full -g's compile time (the whole build: docs/testing.md, "What the suite
  # costs"). To inspect variables in a debugger, configure a build of your own with -g.
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
fi
cmake --build "$build_dir" -j"$(nproc)"

# The Python package `stitchopt` into .venv, from the build directory above.
scripts/install_python_package.sh "$build_dir"
