#!/usr/bin/env bash
# The project's C++ lint, run by ctest (tests/lint/tests.cmake) and by hand:
#
#   scripts/lint.sh format          clang-format --dry-run -Werror on every C++ file
#                                   of ours (.clang-format; the tree is kept clean, so
#                                   this checks every change)
#   scripts/lint.sh tidy [BASE]     clang-tidy (.clang-tidy's checks) on the .cc files
#                                   changed since the commit BASE (default HEAD~1: the
#                                   last commit); needs the build's compile_commands.json
#   scripts/lint.sh tidy --all      clang-tidy on every .cc file (minutes)
#
# Before committing on a branch: scripts/lint.sh format && scripts/lint.sh tidy main.
# STITCH_BUILD_DIR names the build directory (default build). clang-format-14 and
# clang-tidy-14 are Debian 12's (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STITCH_BUILD_DIR:-build}

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "lint: not a git checkout; nothing to lint" >&2
  exit 0
fi

# Our C++ sources: everything tracked but the fuzzers' seed inputs.
sources() { git ls-files -- '*.cc' '*.h' | grep -v '^tests/fuzz/corpus/' || true; }

case ${1:-} in
  format)
    mapfile -t files < <(sources)
    if ! clang-format --dry-run -Werror "${files[@]}"; then
      echo "lint: run clang-format -i on the files above (column limit 100, .clang-format)" >&2
      exit 1
    fi
    echo "lint: ${#files[@]} files clang-format clean"
    ;;
  tidy)
    base=${2:-HEAD~1}
    if [[ ! -f $build_dir/compile_commands.json ]]; then
      echo "lint: $build_dir/compile_commands.json is missing; build first (scripts/setup.sh)" >&2
      exit 1
    fi
    if [[ $base == --all ]]; then
      mapfile -t files < <(sources | grep '\.cc$')
    elif ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
      echo "lint: no commit $base (a shallow clone?); nothing to compare with" >&2
      exit 0
    else
      mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- '*.cc' |
                           grep -v '^tests/fuzz/corpus/' || true)
    fi
    # Only translation units the build compiles (the CUDA plugin may not be built).
    checked=()
    for file in "${files[@]}"; do
      if grep -q "\"file\": \"$PWD/$file\"" "$build_dir/compile_commands.json"; then
        checked+=("$file")
      fi
    done
    if ((${#checked[@]} == 0)); then
      echo "lint: no compiled .cc file changed since $base"
      exit 0
    fi
    printf '%s\n' "${checked[@]}" |
      xargs -P "$(nproc)" -n 4 clang-tidy -p "$build_dir" --quiet 2> >(grep -v \
        -e 'warnings generated' -e 'Suppressed [0-9]* warnings' -e 'Use -header-filter' \
        -e '^$' >&2)
    echo "lint: ${#checked[@]} files clang-tidy clean"
    ;;
  *)
    echo "usage: scripts/lint.sh format | tidy [BASE|--all]" >&2
    exit 2
    ;;
esac
