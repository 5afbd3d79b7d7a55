#!/usr/bin/env bash
# backward_run.sh [DTYPE...] — on a GPU machine, from the repository root with the binaries in
# $CARRY (default .carry, packed by bench/carry.sh): the backward ops' GPU tests (unless
# NOTESTS=1), then the public shapes tuned for softmax_backward and log_softmax_backward in each
# DTYPE (default f32 bf16), one line per problem: the winner's fraction of the two-read-one-write
# floor, its config and the sweep counts (0 failed expected). Logs and the cache under $OUT; a
# TSV of the problems in $OUT/backward.tsv. $SWEEP (fast or full) is passed on as --sweep.
set -u
out=${OUT:-/tmp/st_out}
carry=${CARRY:-.carry}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$PWD/$carry/softmax-tune
SHAPES=${SHAPES:-"4096x4096 32000x16384 1048576x128 131072x1000 65536x2048 8192x32000 2048x128256 256x1048576 32x16384"}
DTYPES=${*:-f32 bf16}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

if [ "${NOTESTS:-0}" != 1 ]; then
  for t in "test_verify_bw gpu" "test_gpu --backward" "test_runtime gpu"; do
    log="$out/$(echo "$t" | tr ' -' '__').log"
    if timeout ${TEST_S:-240} $PWD/$carry/$t >"$log" 2>&1; then echo "PASS $t: $(tail -1 "$log")"
    else echo "FAIL $t (rc $?)"; grep -E "failed|FAIL" "$log" | head -8; fi
  done
fi

printf "dtype\top\tshape\tfrac_of_floor\twinner_us\tfloor_us\tconfig\tsweep\n" >"$out/backward.tsv"
for s in $SHAPES; do
  for d in $DTYPES; do
    for op in softmax_backward log_softmax_backward; do
      timeout ${TUNE_S:-60} $B --shape "$s" --dtype "$d" --op "$op" ${SWEEP:+--sweep "$SWEEP"} --cache "$out/st.db" --quiet >"$out/tune.log" 2>&1
      rc=$?
      w=$(grep -aE '^winner' "$out/tune.log"); f=$(grep -aE '^copy floor' "$out/tune.log" | awk '{print $3}')
      sw=$(grep -aE '^swept' "$out/tune.log")
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$d" "$op" "$s" "$(echo "$w" | awk '{print $6}')" "$(echo "$w" | awk '{print $2}')" \
        "$f" "$(echo "$w" | awk '{print $9}')" "$sw" | tee -a "$out/backward.tsv"
      [ $rc -eq 0 ] || { echo "rc=$rc"; tail -3 "$out/tune.log"; }
      $B log --cache "$out/st.db" --shape "$s" --dtype "$d" --op "$op" | grep -aE " wrong" | head -2
    done
  done
done
$B log --cache "$out/st.db" --csv >"$out/trials.csv" 2>/dev/null
echo "== table"; column -t -s "$(printf '\t')" "$out/backward.tsv" | cut -c1-200
