#!/usr/bin/env bash
# ce31_g.sh — the issue's Python table (bench/cross_entropy.py, both modes) on the C++ ops, with
# the kernels ce31_f.sh tuned (its cache carried as .carry/st_cache.db).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
cp .carry/st_cache.db /tmp/st_cache.db && chmod u+w /tmp/st_cache.db
bash bench/host_run.sh build >"$out/build.txt" 2>&1; head -2 "$out/build.txt"
CE_BENCH_ARGS="--compile-budget 100" bash bench/ce_py_run.sh bench 2>&1 | grep -E "softmax_tune|floor|liger|inductor|^#" | grep -vE "go2" | tail -90
echo "all: $(( $(date +%s) - t0 )) s"
