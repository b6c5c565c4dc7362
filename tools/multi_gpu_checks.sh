#!/usr/bin/env bash
# Every check that needs two GPUs of one host, in one call (about 8 minutes):
#   bash tools/multi_gpu_checks.sh
# Expects the packages installed (editable: tools/gpu_session.sh does it) and
# two visible GPUs. Each step runs under its own time limit, and under what is
# left of NT_DEADLINE_SECONDS (default 520, counted from the start); a step
# that fails or times out is reported and the next one runs. Logs and figures
# go to $OUT (or ./multi-gpu-logs):
#   info.txt               GPUs, versions, CPUs and compile workers (1 rank, 2)
#   tests.log              the multi-GPU tests (tensor-parallel block under
#                          torchrun/NCCL, JAX shard_map and its refusals,
#                          two GPUs in one process, eight processes sharing
#                          one cache, tuning together's split over gloo)
#   first_call.jsonl       first call of mm 4096^3 (tuning included): 1 rank and
#                          2 ranks tuning together, alternated over
#                          NT_FIRST_CALL_ROUNDS rounds (default 3), then 2
#                          ranks alone once; each line has every rank's
#                          seconds, the tuner's phases, CPUs and compile workers
#   first_call.txt         each run's phases per rank, the median first call of
#                          each mode and the ratio (the floor: 2 ranks together
#                          no slower than 1)
#   tensor_parallel.log    tokens/s of the tensor-parallel block, ours vs torch
#   summary.txt            each step's status and time, and the figures above
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS="${OUT:-multi-gpu-logs}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
unset TRITON_INTERPRET
START=$SECONDS
DEADLINE="${NT_DEADLINE_SECONDS:-520}"
SUMMARY="$LOGS/summary.txt"
: >"$SUMMARY"

# step NAME LIMIT LOG COMMAND...: run under min(LIMIT, time left), output to LOG.
step() {
    local name=$1 limit=$2 log=$3
    shift 3
    local left=$((DEADLINE - (SECONDS - START)))
    if ((left < 15)); then
        echo "$name: SKIPPED (deadline reached)" | tee -a "$SUMMARY"
        return
    fi
    ((limit > left)) && limit=$left
    local began=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
    local status=$?
    local verdict="ok"
    ((status == 124 || status == 137)) && verdict="TIMED OUT after ${limit}s"
    ((status != 0 && status != 124 && status != 137)) && verdict="FAILED (status $status)"
    echo "$name: $verdict in $((SECONDS - began))s (log: $(basename "$log"))" | tee -a "$SUMMARY"
}

# fresh_caches DIR: empty NineToothed and Triton caches, so a first call tunes and compiles.
fresh_caches() {
    rm -rf "$1" && mkdir -p "$1/nt" "$1/triton"
    export NINETOOTHED_CACHE_DIR="$1/nt" TRITON_CACHE_DIR="$1/triton"
}

{
    nvidia-smi -L
    python3 -c "import torch, triton, jax; print('torch', torch.__version__, 'triton', \
triton.__version__, 'jax', jax.__version__, 'GPUs', torch.cuda.device_count())"
    python3 -c "import os; from nt_triton import knobs; print('CPUs', os.cpu_count(), 'usable', \
knobs.usable_cpus(), 'compile workers: 1 rank', knobs.compile_workers(1), '2 ranks together', \
knobs.compile_workers(2, 0), '+', knobs.compile_workers(2, 1))"
} >"$LOGS/info.txt" 2>&1
cat "$LOGS/info.txt"

WORK=$(mktemp -d)

# The first call of mm 4096^3, cold (fresh caches each): 1 rank and 2 ranks tuning
# together alternate, so drifting clocks or a busy host weigh on both alike; then
# 2 ranks alone once. Each run's phases per rank, the medians and their ratio.
rm -f "$LOGS/first_call.jsonl"
step "first call, 1 rank against 2 ranks together" 300 "$LOGS/first_call.txt" \
    python3 benchmarks/first_call_tuning.py --compare --ranks 2 \
    --rounds "${NT_FIRST_CALL_ROUNDS:-3}" --alone --timeout 60 --jsonl "$LOGS/first_call.jsonl"

fresh_caches "$WORK/tests"
# -v names each test as it starts: a test cut off by the step's limit is the
# last name without an outcome.  JAX's sharded test has a step of its own (its
# child compiles and tunes every kernel for jax-triton on cold caches).
step "tests" 200 "$LOGS/tests.log" env NT_TEST_GPU=1 python3 -m pytest -v -rs -p no:cacheprovider \
    -p no:logging --durations=10 -m "not interpreter_only" \
    tests/test_tensor_parallel.py tests/test_multi_gpu.py tests/test_tuning_together.py \
    "tests/test_launch_gpu.py::test_launches_on_the_arguments_device_and_its_current_stream" \
    "tests/test_shared_cache.py::test_eight_processes_on_the_gpus_make_and_compile_each_kernel_once"
step "JAX sharded test" 240 "$LOGS/tests.log" env NT_TEST_GPU=1 python3 -m pytest -v -rs \
    -p no:cacheprovider -p no:logging --durations=3 -m "not interpreter_only" tests/test_jax_sharded.py

# Tokens/s of the tensor-parallel block (half the 8B dimensions), ranks tuning together.
fresh_caches "$WORK/bench"
step "tensor-parallel benchmark" 150 "$LOGS/tensor_parallel.log" \
    env NINETOOTHED_TUNE_TOGETHER=1 python3 -m torch.distributed.run --standalone \
    --nproc-per-node=2 benchmarks/tensor_parallel_bench.py --quick --rounds 3 --runs 5 \
    --json "$LOGS/tensor_parallel.json"
rm -rf "$WORK"

{
    echo
    echo "== tests"
    grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|error|^tests/.*::" "$LOGS/tests.log" | tail -30
    echo "== first call of mm 4096^3 (slowest rank's seconds; same configuration on every rank)"
    cat "$LOGS/first_call.txt"
    echo "== tensor-parallel block, tokens/s"
    grep -E "ranks|tokens/s|ninetoothed / torch" "$LOGS/tensor_parallel.log"
    echo "== total $((SECONDS - START))s"
} >>"$SUMMARY"
cat "$SUMMARY"
