#!/usr/bin/env bash
# Everything a GPU session checks, in one device call (leases are short):
#   bash tools/gpu_session.sh
# Installs the packages (offline, editable) and carried wheels from .whl/ if
# present, then runs the GPU test suite through nox (or the plain script when
# nox is missing), the benchmarks and the torch-vs-JAX launch comparison.
# Every step has a time limit and writes its log under $OUT (or ./gpu-logs).
# NT_STEPS picks steps (default "tests bench frameworks"), to split the
# checklist over several calls when one call's limit is too short for all;
# NT_BENCH_ARGS replaces the benchmarks' arguments (default --quick).
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS="${OUT:-gpu-logs}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
# The seed documents live beside the checkout, which does not travel: a copy
# carried in .seeds/ lets their snippets run on the GPU too.
if [[ -d .seeds ]]; then export NT_SEEDS_DIR="$PWD/.seeds"; fi
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/nt-site .whl/*.whl && export PYTHONPATH=/tmp/nt-site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-deps --no-build-isolation \
    -e packages/nt-core -e packages/nt-triton -e packages/nt-torch -e packages/nt-paddle \
    -e packages/nt-jax >"$LOGS/install.log" 2>&1 || { tail -20 "$LOGS/install.log"; exit 1; }
nvidia-smi -L
python3 -c "import torch, triton, jax; print('torch', torch.__version__, 'triton', triton.__version__, 'jax', jax.__version__, jax.devices())"

STEPS=" ${NT_STEPS:-tests bench frameworks} "

if [[ $STEPS == *" tests "* ]]; then
echo "=== GPU tests"
if python3 -c "import nox" 2>/dev/null; then
    runner=(python3 -m nox -s gpu --)
else
    runner=(python3 tools/gpu_tests.py)
fi
timeout "${NT_TESTS_SECONDS:-330}" "${runner[@]}" -n 8 -q -rfs --tb=short -p no:cacheprovider \
    -p no:benchmark 2>&1 | grep -v "PytestBenchmarkWarning\|warner(" | tee "$LOGS/gpu-tests.log" | tail -40
# timeout stops nox, not pytest's workers: stop any that outlived it.
pkill -f "pytest" 2>/dev/null; sleep 1
fi

if [[ $STEPS == *" bench "* ]]; then
echo "=== benchmarks"
timeout "${NT_BENCH_SECONDS:-200}" python3 benchmarks/run.py ${NT_BENCH_ARGS:---quick} 2>&1 | tee "$LOGS/bench.log" | tail -8
fi

if [[ $STEPS == *" frameworks "* ]]; then
echo "=== torch and JAX launches"
timeout "${NT_FRAMEWORKS_SECONDS:-90}" python3 benchmarks/frameworks.py 2>&1 | tee "$LOGS/frameworks.log" | tail -14
fi
