#!/usr/bin/env bash
# ce31_a.sh — session 31's first GPU call (issue 36): the C++ ops built while test_gpu --ce runs,
# test_python_ce on the C++ ops and on ctypes, then bench/ce_run.sh (tune + runtime bench of the
# issue's shapes) and lab/ce_py_profile.py; the cache to $OUT for the next call.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash "$(dirname "$0")/ce_check.sh"
CE_SHAPES=${CE_SHAPES:-} bash bench/ce_run.sh 2>&1 | tail -22
echo "ce_run done $(( $(date +%s) - t0 )) s"
timeout 100 python3 lab/ce_py_profile.py 2>&1 | tail -40
cp /tmp/st_cache.db "$out/st_cache.db"
echo "all: $(( $(date +%s) - t0 )) s"
