#!/usr/bin/env bash
# run_smoke.sh FUZZER CORPUS WORK: a bounded libFuzzer run from the seed corpus.
# Exit 77 (ctest: skipped) when the clang build of the fuzzer is absent.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3
if [[ ! -x $fuzzer ]]; then
  echo "SKIP: $fuzzer not built (scripts/test.sh builds it when clang is installed)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
cp -r "$corpus"/. "$work"/
"$fuzzer" -runs=3000 -max_len=65536 -rss_limit_mb=2048 -timeout=10 "$work"
