#!/usr/bin/env bash
# Run InfiniTensor/ntops' own tests (about 80 operators written by other people for
# upstream NineToothed) against our installed packages, one pytest per test file.
#
#   bash tools/ntops_tests.sh NTOPS_CHECKOUT [cpu|gpu] [FILES...]
#
# NTOPS_CHECKOUT is a copy of https://github.com/InfiniTensor/ntops (a git
# checkout or an extracted archive).  The tests run from a copy under
# ${NTOPS_WORK:-/tmp/ntops-run}: run inside this repository, pytest would load our
# conftest.py, which turns on Triton's interpreter.  "cpu" (the default) runs
# them through the interpreter, with the tests' "cuda" device strings turned
# into "cpu" (the kernels are unchanged); "gpu" runs them as written, with the
# interpreter off.  Each file gets NTOPS_FILE_SECONDS (default 120 on the CPU,
# 200 on the GPU); the summary, one line per file, goes to stdout and the logs to
# ${NTOPS_WORK}/logs.  NTOPS_JOBS files run at once (default: 1 on the CPU, 8 on
# the GPU).
set -uo pipefail
SOURCE="${1:?usage: tools/ntops_tests.sh NTOPS_CHECKOUT [cpu|gpu] [FILES...]}"
MODE="${2:-cpu}"
shift $(( $# >= 2 ? 2 : 1 ))
WORK="${NTOPS_WORK:-/tmp/ntops-run}"
PYTHON="${PYTHON:-python3}"
rm -rf "$WORK" && mkdir -p "$WORK/logs"
cp -r "$SOURCE/." "$WORK/"
cd "$WORK"
if [[ $MODE == cpu ]]; then
    sed -i 's/"cuda"/"cpu"/g' tests/*.py
    sed -i 's/not torch.cuda.is_available()/False/' tests/skippers.py
    export TRITON_INTERPRET=1
    SECONDS_PER_FILE="${NTOPS_FILE_SECONDS:-120}"
    JOBS="${NTOPS_JOBS:-1}"
else
    unset TRITON_INTERPRET
    SECONDS_PER_FILE="${NTOPS_FILE_SECONDS:-200}"
    JOBS="${NTOPS_JOBS:-8}"
fi
export PYTHONPATH="$WORK/src:$WORK${PYTHONPATH:+:$PYTHONPATH}"
FILES=("$@")
if [[ ${#FILES[@]} -eq 0 ]]; then FILES=(tests/test_*.py); fi
printf '%s\n' "${FILES[@]}" | xargs -P "$JOBS" -I{} sh -c \
    "timeout $SECONDS_PER_FILE $PYTHON -m pytest -q -p no:cacheprovider --tb=line -W ignore {} \
     > logs/\$(basename {}).txt 2>&1"
for log in logs/*.txt; do
    echo "$(basename "$log" .txt) :: $(tail -1 "$log" | cut -c1-160)"
done
