#!/usr/bin/env bash
# ce31_f.sh — session 31's final cross-entropy tree: test_gpu --ce and test_python_ce (both
# paths) while the C++ ops build, then the tune table (bench/ce_run.sh); the cache to $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
bash "$(dirname "$0")/ce_check.sh"
bash bench/ce_run.sh 2>&1 | tail -21
cp /tmp/st_cache.db "$out/st_cache.db"
echo "all: $(( $(date +%s) - t0 )) s"
