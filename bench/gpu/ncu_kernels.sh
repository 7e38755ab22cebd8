#!/bin/bash
# Nsight Compute on chosen kernels, on a lent GPU machine (after bench/gpu/prepare.py
# staged build/gpu here and the device tool carried it there):
#
#   bash bench/gpu/ncu_kernels.sh build/gpu OUTPUT:KERNEL_REGEX ...
#
# e.g. bert:attention. Each OUTPUT (a job of STAGE/jobs.tsv) is compiled and run once
# (its kernels built and checked against the reference), then `stitchopt bench` runs
# one iteration under `ncu --set full --clock-control none` (the clocks as found) for
# the first kernel whose name matches; the report lands in $OUT/ncu_<OUTPUT>.txt (or
# /tmp/gpu_out).
set -u
STAGE=${1:-build/gpu}
shift
RESULTS=${OUT:-/tmp/gpu_out}
mkdir -p "$RESULTS"
source "$(dirname "$0")/wrapper.sh"
for spec in "$@"; do
  name=${spec%%:*}
  kernel=${spec#*:}
  read -r _ model flags < <(grep -P "^\Q$name\E\t" "$STAGE/jobs.tsv" | tr '\t' ' ')
  out=$STAGE/out/$name
  rm -rf "$out"
  "$BIN" "$model" -o "$out" -q $flags || { echo "$name: compile failed"; continue; }
  "$BIN" run "$out" | tail -1
  ncu --clock-control none --target-processes all -k "regex:$kernel" -c 1 --set full \
    "$BIN" bench "$out" --warmup 0 --iterations 1 >"$RESULTS/ncu_$name.txt" 2>&1
  echo "$name: ncu rc=$? ($(wc -l <"$RESULTS/ncu_$name.txt") lines)"
  grep -E "Duration|Achieved Occupancy|Registers Per|Memory Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Block Size|Grid Size" \
    "$RESULTS/ncu_$name.txt" | head -12
done
