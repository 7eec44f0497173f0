#!/bin/sh
# run_fuzzer.sh FUZZER CORPUS RUNS [LIBFUZZER ARGS...]
# Runs FUZZER for exactly RUNS executions (corpus inputs first, then
# mutations) with a fixed seed. New inputs go to a scratch directory, never
# into the committed CORPUS; a crash input is kept in the current directory.
set -eu
exe=$1 corpus=$2 runs=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/chring-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# libFuzzer exits 77 on a crash by default, which meson reads as a skip.
"$exe" -runs="$runs" -seed=1 -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 \
    -artifact_prefix="./$(basename "$exe")-" "$@" "$work" "$corpus"
