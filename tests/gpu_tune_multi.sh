#!/usr/bin/env bash
# gpu_tune_multi.sh BINARY — a list tuned at once on every GPU (--gpu all) into a temporary
# cache: exit 0, every problem tuned and named in the summary with its GPU, each GPU in the
# header; the same command again answers all from the cache; a shapes file does the same.
# Exit 77 (skipped) when there is no GPU.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/cache.db
fail=0
expect() { if ! grep -q -- "$2" "$1"; then echo "FAIL: $3: no '$2' in:"; cat "$1"; fail=1; fi; }

"$bin" --gpu all --shape 1024x1024,4096x512 --dtype f32,bf16 --cache "$db" >"$dir/out1" 2>"$dir/err1"
rc=$?
if [ $rc -eq 2 ] && grep -q -e "no CUDA driver" -e "no GPU" -e "sees no GPU" "$dir/err1"; then
  echo "SKIP: no GPU here: $(cat "$dir/err1")"
  exit 77
fi
cat "$dir/out1" "$dir/err1"
[ $rc -eq 0 ] || { echo "FAIL: tuning the list exited $rc"; exit 1; }
models=$(sed -n 's/^summary (4 problems, \([0-9]*\) GPUs, \([0-9]*\) models\{0,1\}):$/\2/p' "$dir/out1")
[ -n "$models" ] || { echo "FAIL: no summary line"; fail=1; models=1; }
expect "$dir/out1" "$((4 * models)) tuned, 0 from the cache, 0 failed, 0 not tuned" "first run"
expect "$dir/out1" "4096x512 bf16 softmax" "first run"
for ((i = 0; i < $(grep -c '^GPU [0-9]*:' "$dir/out1"); i++)); do expect "$dir/out1" "^GPU $i: " "header of GPU $i"; done

"$bin" --gpu all --shape 1024x1024,4096x512 --dtype f32,bf16 --cache "$db" >"$dir/out2" 2>&1 || { echo "FAIL: second run"; fail=1; }
expect "$dir/out2" "0 tuned, $((4 * models)) from the cache" "second run"

printf '# a list\n1024x1024 f32\n4096x512 bf16 softmax\n\n' >"$dir/list.txt"
"$bin" --gpu all --shapes "$dir/list.txt" --cache "$db" >"$dir/out3" 2>&1 || { echo "FAIL: --shapes run"; fail=1; }
expect "$dir/out3" "0 tuned, $((2 * models)) from the cache" "--shapes"
[ $fail -eq 0 ] && echo "gpu_tune_multi: ok"
exit $fail
