#!/bin/bash
# Runs on a lent GPU machine (the device tool of this workplace), from the repository
# root, over the stage bench/gpu/prepare.py wrote here (carried as build/gpu):
#
#   bash bench/gpu/device_run.sh [STAGE]
#
# 1. compiles every job of STAGE/jobs.tsv with the carried stitchopt (the same binary
#    and flags as the estimates; model.fused.onnx's sha256 is printed to prove it),
#    STAGE/extra.txt may name more outputs, already compiled into STAGE/out/ (variants
#    of the emitter built here, to compare on the same machine),
# 2. `stitchopt run` on each output: every kernel built with nvcc for the device and
#    every output compared with the reference interpreter,
# 3. `stitchopt bench --graph --per-kernel` on each, one at a time (every step timed
#    alone host-launched and replayed alone as a CUDA graph),
# 4. `stitchopt calibrate -v`, `stitchopt run -v` on the outputs named in
#    $VERBOSE_RUNS (what runs where, and why a step stays on the host),
# 5. the PyTorch peers (bench/gpu/torch_peer.py), unless $SKIP_TORCH is set.
# With CALIBRATE_ONLY set, step 4's calibrate alone.
# Everything lands in $OUT (or /tmp/gpu_out): env.txt, compile.log, run.log, bench.log,
# calibrated.json, calibrate.log, verbose.log, torch.log. bench/gpu/compare.py turns
# them into docs/benchmarks.md's tables.
set -u
STAGE=${1:-build/gpu}
RESULTS=${OUT:-/tmp/gpu_out}
mkdir -p "$RESULTS"
source "$(dirname "$0")/wrapper.sh"  # BIN: stitchopt with its libraries
if [ -n "${CALIBRATE_ONLY:-}" ]; then
  "$BIN" calibrate -v -o "$RESULTS/calibrated.json" 2>&1 | grep -v "^calibrate: [0-9]* bytes:"
  exit "${PIPESTATUS[0]}"
fi
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  nvcc --version | tail -2
  echo "libraries: $LIBS"
  LD_LIBRARY_PATH=$LIBS ldd "$STAGE/bin/stitchopt" "$STAGE/lib/libstitch_runtime_cuda.so" | grep -E "not found|cud|nvrtc|onnx"
} >"$RESULTS/env.txt" 2>&1
cat "$RESULTS/env.txt"

compile_one() {  # name model flags...
  local name=$1 model=$2
  shift 2
  local out=$STAGE/out/$name
  rm -rf "$out"
  if "$BIN" "$model" -o "$out" -q "$@"; then
    echo "$name compiled $(sha256sum "$out/model.fused.onnx" | cut -c1-16)"
  else
    echo "$name compile FAILED"
  fi
}
export -f compile_one
export BIN STAGE
start=$(date +%s)
# jobs.tsv: name <TAB> model <TAB> flags (space separated, none with spaces inside)
xargs -d '\n' -P 8 -I{} bash -c 'compile_one $1' _ {} <"$STAGE/jobs.tsv" >"$RESULTS/compile.log" 2>&1
echo "compiled in $(($(date +%s) - start)) s: $(grep -c compiled "$RESULTS/compile.log") ok, $(grep -c FAILED "$RESULTS/compile.log") failed"

NAMES=$(cut -f1 "$STAGE/jobs.tsv"; [ -f "$STAGE/extra.txt" ] && cat "$STAGE/extra.txt")
start=$(date +%s)
echo "$NAMES" | xargs -P 4 -I{} bash -c \
  'log=$(timeout 240 "$BIN" run "$STAGE/out/{}" 2>&1); echo "=== {} rc=$?"; echo "$log" | tail -4' \
  >"$RESULTS/run.log" 2>&1
echo "ran in $(($(date +%s) - start)) s: $(grep -c 'rc=0' "$RESULTS/run.log") matched the reference, failed: $(grep '^===' "$RESULTS/run.log" | grep -v 'rc=0' | tr '\n' ' ')"

start=$(date +%s)
for name in $NAMES; do
  echo "=== $name"
  timeout 60 "$BIN" bench "$STAGE/out/$name" --graph --per-kernel --warmup 20 --iterations 200 2>&1
  echo "rc=$?"
done >"$RESULTS/bench.log"
echo "benched in $(($(date +%s) - start)) s"
grep -E "^===|end to end|CUDA graph" "$RESULTS/bench.log"

timeout 60 "$BIN" calibrate -v -o "$RESULTS/calibrated.json" >"$RESULTS/calibrate.log" 2>&1
echo "calibrate rc=$?"; grep -v " bytes: " "$RESULTS/calibrate.log" | tail -8

for name in ${VERBOSE_RUNS:-}; do
  echo "=== $name"
  timeout 120 "$BIN" run "$STAGE/out/$name" -v 2>&1 | grep -v "^nvcc\|^  *-" | head -60
done >"$RESULTS/verbose.log" 2>&1
[ -n "${VERBOSE_RUNS:-}" ] && grep -i "host\|refuse\|cudnn\|error" "$RESULTS/verbose.log" | head -20

[ -n "${SKIP_TORCH:-}" ] && exit 0

timeout 200 python3 bench/gpu/torch_peer.py 8x64 32x128 >"$RESULTS/torch.log" 2>&1
echo "torch peer rc=$?"; cat "$RESULTS/torch.log" | grep -v Warning | tail -12
