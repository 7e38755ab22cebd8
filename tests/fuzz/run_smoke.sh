#!/usr/bin/env bash
# run_smoke.sh FUZZER CORPUS WORK [FLAG...]: a bounded libFuzzer run from the seed
# corpus, in WORK (which also receives crash inputs); FLAGs (default -runs=3000)
# bound it and override the defaults.
# Exit 77 (ctest: skipped) when the clang build of the fuzzer is absent.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3
shift 3
if [[ ! -x $fuzzer ]]; then
  echo "SKIP: $fuzzer not built (scripts/test.sh builds it when clang is installed)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/corpus"
cp -r "$corpus"/. "$work/corpus"/
cd "$work"
# libFuzzer exits 77 on a crash by default: ctest would call that "skipped".
"$fuzzer" -error_exitcode=1 -timeout_exitcode=1 -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
  "${@:--runs=3000}" corpus
