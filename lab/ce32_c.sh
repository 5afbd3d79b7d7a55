#!/usr/bin/env bash
# ce32_c.sh — the Python table's rows that ce32_b.sh's call left without max-autotune (its compile
# budget spent): float32 (all five shapes, both modes) and bfloat16 1024x256000, every system
# again in this run, on tree 80403ef's kernels (tuned here), the C++ ops. Tables under $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
( bash bench/host_run.sh build >"$out/build.txt" 2>&1 ) &
CE_DTYPES=f32 OUT=$out/tune bash bench/ce_run.sh 2>&1 | cut -f1-8
CE_DTYPES=bf16 CE_SHAPES=1024x256000 OUT=$out/tune2 bash bench/ce_run.sh 2>&1 | cut -f1-8 | tail -n +2
wait; head -2 "$out/build.txt"; echo "tuned, built: $(( $(date +%s) - t0 )) s"
python3 bench/cross_entropy.py --dtypes float32 --compile-budget 330 --out "$out/ce-f32.tsv" >"$out/ce-f32.log" 2>&1
echo "f32: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^# .*(budget|WRONG)|Error" "$out/ce-f32.log" | head
python3 bench/cross_entropy.py --dtypes bfloat16 --shapes 1024x256000 --compile-budget 120 --out "$out/ce-bf16.tsv" >"$out/ce-bf16.log" 2>&1
echo "bf16: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^# .*(budget|WRONG)|Error" "$out/ce-bf16.log" | head
grep -vE "^#" "$out/ce-f32.tsv" "$out/ce-bf16.tsv" | grep -vE "go2"
