#!/usr/bin/env bash
# vocab_parallel_run.sh [pack] [bench] — the vocab-parallel table of issue 57 (bench/vocab_parallel.py;
# docs/linear-cross-entropy.md, "Vocab-parallel").
#   pack   (here, not on the GPU machine) fill .carry_vp/ (git-ignored: /.carry_*/) with the peers' Python sources,
#          each with its commit in COMMIT: from a Megatron-LM git directory ($MEGATRON_GIT) the two files the bench
#          loads, megatron/core/tensor_parallel/cross_entropy.py and utils.py (what they import from the rest of
#          megatron.core, the bench stands in for), and LICENSE; from a Cut Cross-Entropy git directory ($CCE_GIT)
#          cut_cross_entropy/ and LICENSE, as bench/lce_run.sh packs it.
#   bench  (GPU machine with $RANKS GPUs, default 2; repository root; .carry/ from bench/carry.sh and .carry_vp/
#          carried) run bench/vocab_parallel.py under `timeout ${LIMIT:-500}` ($VP_ARGS passed on, e.g. "--rounds 20" or
#          "--ops cross_entropy --models gemma2"), its log and table under $OUT (default /tmp/st_out), then print the
#          table. The Python package is python/ of the tree; SOFTMAX_TUNE_TABLE, when set, passes through.
set -u
c=${CARRY:-.carry_vp}
step=${1:-bench}

if [ "$step" = pack ]; then
  set -e
  rm -rf "$c" && mkdir -p "$c/peers"
  if [ -n "${MEGATRON_GIT:-}" ]; then
    mkdir -p "$c/peers/megatron"
    git --git-dir="$MEGATRON_GIT" archive HEAD LICENSE megatron/core/tensor_parallel/cross_entropy.py \
      megatron/core/tensor_parallel/utils.py | tar -x -C "$c/peers/megatron"
    git --git-dir="$MEGATRON_GIT" rev-parse --short HEAD >"$c/peers/megatron/COMMIT"
  fi
  if [ -n "${CCE_GIT:-}" ]; then
    mkdir -p "$c/peers/cce"
    git --git-dir="$CCE_GIT" archive HEAD LICENSE cut_cross_entropy | tar -x -C "$c/peers/cce"
    git --git-dir="$CCE_GIT" rev-parse --short HEAD >"$c/peers/cce/COMMIT"
  fi
  find "$c" -type f | sort
  du -sh "$c"
  exit 0
fi

if [ "$step" != bench ]; then
  echo "unknown step $step (pack, bench)"
  exit 2
fi
. bench/carry_env.sh   # $out, LD_LIBRARY_PATH, SOFTMAX_TUNE_LIB, SOFTMAX_TUNE_CACHE
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export ST_TREE=${ST_TREE:-$(cat .carry/TREE 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z' 'a-z' |
      grep -o -E 'h200|h100|a100|b200|l40s' | head -1)
ranks=${RANKS:-2}
tsv=$out/vocab-parallel-${ranks}x${gpu:-gpu}-$(date +%F).tsv
# the rows are printed as measured (a run cut by the limit leaves them in the log and the table)
# shellcheck disable=SC2086
timeout -k 20 "${LIMIT:-500}" python3 bench/vocab_parallel.py --ranks "$ranks" --megatron "$c/peers/megatron" \
  --out "$tsv" ${VP_ARGS:-} 2>&1 | tee "$out/vocab_parallel.log"
echo "vocab_parallel: rc=${PIPESTATUS[0]} (124: cut by LIMIT=${LIMIT:-500}); log $out/vocab_parallel.log"
echo "---- $tsv"
cat "$tsv" 2>/dev/null || echo "(no table)"
