#!/usr/bin/env bash
# gpu_tune.sh BINARY — the main command end to end on a GPU, into a temporary cache: tune,
# then the same command again answers from the cache in well under a second, and the log
# shows every trial (table, JSON, CSV). Exit 77 (skipped) when there is no GPU.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/cache.db
shape=${ST_TEST_SHAPE:-4096x2048}
fail=0
expect() { if ! grep -q -- "$2" "$1"; then echo "FAIL: $3: no '$2' in:"; cat "$1"; fail=1; fi; }

"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out1" 2>"$dir/err1"
rc=$?
if [ $rc -eq 2 ] && grep -q -e "no CUDA driver" -e "no GPU" "$dir/err1"; then
  echo "SKIP: no GPU here: $(cat "$dir/err1")"
  exit 77
fi
cat "$dir/out1" "$dir/err1"
[ $rc -eq 0 ] || { echo "FAIL: tuning exited $rc"; exit 1; }
expect "$dir/out1" "winner " "first run"
expect "$dir/out1" "copy floor" "first run"
expect "$dir/out1" "stored in" "first run"

start=$(date +%s%N)
"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out2" 2>&1 || { echo "FAIL: second run"; fail=1; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect "$dir/out2" "from the cache" "second run"
echo "cache hit answered in $ms ms"
[ $ms -lt 1000 ] || { echo "FAIL: cache hit took $ms ms"; fail=1; }

configs=$("$bin" space --shape "$shape" --arch sm_90 | wc -l)
"$bin" log --cache "$db" >"$dir/log" || fail=1
expect "$dir/log" "configs" "log"
trials=$(grep -c -E '(ok|pruned|failed) ' "$dir/log")
echo "log lists $trials trials"
"$bin" log --cache "$db" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["trials"]), "trials in JSON")' || fail=1
"$bin" log --cache "$db" --csv | head -2 || fail=1
"$bin" cache list --cache "$db" >"$dir/list" && expect "$dir/list" "1 entry" "cache list"
[ "$configs" -gt 0 ] || fail=1
exit $fail
