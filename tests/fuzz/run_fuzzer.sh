#!/bin/sh
# run_fuzzer.sh FUZZER RUNS DIR...
# Runs FUZZER on the inputs in each DIR that exists (the committed corpus
# and the regression inputs of past findings), then mutations, for exactly
# RUNS executions with a fixed seed. New inputs go to a scratch directory,
# never into a committed DIR; a crash input is kept in the current directory.
set -eu
exe=$1 runs=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/chring-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
dirs=""
for d in "$@"; do
    [ -d "$d" ] && dirs="$dirs $d"
done
# libFuzzer exits 77 on a crash by default, which meson reads as a skip.
# shellcheck disable=SC2086
"$exe" -runs="$runs" -seed=1 -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 \
    -artifact_prefix="./$(basename "$exe")-" "$work" $dirs
