#!/usr/bin/env bash
# gpu_reverify.sh BINARY — a cached winner made under another driver is verified again, not tuned
# again: tune a shape into a temporary cache, mark its entry as made under an older driver and
# NVRTC (plain SQL), run the same command again: it verifies the entry, keeps it, answers from
# the cache, and the log's last run is the verification. Exit 77 (skipped) when there is no GPU.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/cache.db
shape=${ST_TEST_SHAPE:-4096x2048}
fail=0
expect() { if ! grep -q -- "$2" "$1"; then echo "FAIL: $3: no '$2' in:"; cat "$1"; fail=1; fi; }

"$bin" --gpu 0 --shape "$shape" --cache "$db" --quiet >"$dir/out1" 2>"$dir/err1"
rc=$?
if [ $rc -eq 2 ] && grep -q -e "no CUDA driver" -e "no GPU" "$dir/err1"; then
  echo "SKIP: no GPU here: $(cat "$dir/err1")"
  exit 77
fi
[ $rc -eq 0 ] || { cat "$dir/out1" "$dir/err1"; echo "FAIL: tuning exited $rc"; exit 1; }
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 command"; exit 77; }
sqlite3 "$db" "UPDATE entries SET driver = driver - 10, nvrtc = nvrtc - 10" || exit 1
"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out2" 2>&1 || { cat "$dir/out2"; echo "FAIL: second run"; fail=1; }
cat "$dir/out2"
expect "$dir/out2" "verifying it again" "second run"
expect "$dir/out2" "passed: kept" "second run"
expect "$dir/out2" "from the cache" "second run"
"$bin" log --cache "$db" >"$dir/log" || fail=1
head -1 "$dir/log"
expect "$dir/log" "1 configs: 1 verified" "log of the verification"
[ "$(sqlite3 "$db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")" = reverified ] || { echo "FAIL: last run is not 'reverified'"; fail=1; }
"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out3" 2>&1 || fail=1
grep -q "verifying it again" "$dir/out3" && { echo "FAIL: verified a second time"; fail=1; }
exit $fail
