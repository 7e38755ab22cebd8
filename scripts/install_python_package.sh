#!/usr/bin/env bash
# Installs the Python package stitchopt (pyproject.toml) into .venv from the build
# directory scripts/setup.sh made, so that nothing is compiled twice and the venv's
# copy is the build's (scripts/setup.sh and scripts/test.sh run it after building;
# the runtime.python test checks the installed copy).
#
#   scripts/install_python_package.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-${STITCH_BUILD_DIR:-build}}
.venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
  --config-settings=build-dir="$build_dir" .
