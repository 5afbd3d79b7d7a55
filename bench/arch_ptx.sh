#!/usr/bin/env bash
# arch_ptx.sh [ARCH...] — on the GPU machine, from the repository root, with .carry/ packed by
# bench/carry.sh: every config of each architecture's space (75 80 86 89, and 100 120 where the
# driver can run their PTX) compiled as PTX for its virtual arch, JIT-compiled by this GPU's
# driver and verified against float64 (tests/test_arch_ptx.c). The results are appended to
# $OUT/arch-ptx-<gpu>-<date>.txt (or /tmp/st_out), to be committed as bench/results/; the last
# lines printed are each architecture's tally. Correctness only: it says nothing of speed there.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200|b200|a100|l40s?|l4|t4|a10g?' | head -1 | tr 'A-Z' 'a-z')
file="$out/arch-ptx-${gpu:-gpu}-$(date -u +%F).txt"
.carry/test_arch_ptx --out "$file" "$@" > "$out/arch-ptx.log" 2>&1
rc=$?
grep -E "^compute_|checks" "$out/arch-ptx.log"
echo "rc=$rc; results in $file"
exit $rc
