#!/usr/bin/env bash
# gpu_tune.sh BINARY — the main command end to end on a GPU, into a temporary cache: tune,
# then the same command again answers from the cache in well under a second, and the log
# shows every trial (table, JSON, CSV). A bundle of the cache imported into a new cache
# answers there with no tuning. An entry marked as made under an older driver and NVRTC (with
# SQL) is verified again, once, by the command and by the runtime (bench),
# kept, and logged as a "reverified" run. A config with a small stack frame is timed unless
# --max-local 0. Exit 77 (skipped) when there is no GPU.
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

# a bundle carries the winner to another cache: answered there with no tuning
"$bin" cache export --cache "$db" -o "$dir/b.stb" && "$bin" cache import "$dir/b.stb" --cache "$dir/other.db" || fail=1
"$bin" --gpu 0 --shape "$shape" --cache "$dir/other.db" >"$dir/out5" 2>&1
expect "$dir/out5" "from the cache" "a cache made from a bundle"

# a kernel of exactly 48 KB of dynamic shared memory, with its static barriers on top, needs the
# opt-in as well (it was pruned as "zero occupancy"): a 256-thread ring of sm_90
ring=threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=128,xchg=global,hint=none
"$bin" --gpu 0 --shape 256x1048576 --dtype bf16 --config "$ring" --cache "$dir/ring.db" --quiet >"$dir/ring" 2>&1
if grep -q "not valid here" "$dir/ring"; then echo "SKIP (the 48 KB ring): $(cat "$dir/ring")"
else expect "$dir/ring" "winner " "a ring of 48 KB"; fi

# --sms: a claim ring on 96 of the SMs (a green context), verified and timed there; the header
# and the entry's key say 96 SMs. A count the GPU cannot give is refused with status 2.
claim=threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=64,xchg=claim,hint=none
"$bin" --gpu 0 --shape 256x1048576 --dtype bf16 --sms 96 --config "$claim" --cache "$dir/sms.db" >"$dir/sms" 2>&1
expect "$dir/sms" "winner " "--sms 96"
expect "$dir/sms" ", 96 SMs" "--sms 96"
"$bin" cache show --cache "$dir/sms.db" >"$dir/sms_list" && expect "$dir/sms_list" " 96 SMs," "--sms 96's entry"
expect "$dir/sms" "the copy floor too" "--sms 96"
"$bin" --gpu 0 --shape 64x64 --sms 4 --cache "$dir/sms.db" >"$dir/sms_bad" 2>&1
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: --sms 4 exited $rc"; fail=1; }
expect "$dir/sms_bad" "bad --sms 4" "--sms 4"

# --max-local: a config whose kernel holds a stack frame of 1-128 bytes a thread (bf16 cross-entropy,
# 16 rows of 13 packed vectors: 72 bytes on sm_90, NVRTC 13.0) is timed by default and refused
# under --max-local 0, its reason in the log; skipped where this GPU's kernel has no such frame
spill=threads=256,items=13,vec=8,reduce=shfl,passes=1,hold=packed,rows=16,split=1,xchg=none,hint=none
arch=$(grep -o -m1 ', sm_[0-9]*,' "$dir/out1" | tr -dc '0-9')
frame=$("$bin" compile --op cross_entropy --dtype bf16 --shape 4096x1600 --config "$spill" --arch "sm_$arch" \
        -o "$dir/spill.cubin" 2>&1 | grep -o '[0-9]* bytes stack' | cut -d' ' -f1)
if [ -n "$frame" ] && [ "$frame" -gt 0 ] && [ "$frame" -le 128 ]; then
  ce=(--gpu 0 --op cross_entropy --dtype bf16 --shape 4096x1600 --config "$spill")
  "$bin" "${ce[@]}" --cache "$dir/local.db" >"$dir/local" 2>&1
  grep -q '^winner' "$dir/local" || { cat "$dir/local"; echo "FAIL: a $frame-byte frame not timed by default"; fail=1; }
  "$bin" "${ce[@]}" --max-local 0 --cache "$dir/local0.db" >"$dir/local0" 2>&1
  grep -q '^winner' "$dir/local0" && { echo "FAIL: --max-local 0 timed a config with a $frame-byte frame"; fail=1; }
  "$bin" log --cache "$dir/local0.db" >"$dir/local0.log" 2>&1
  expect "$dir/local0.log" "spills: $frame bytes" "--max-local 0's log"
else
  echo "SKIP (the --max-local part): the config's kernel holds '${frame:-?}' bytes of stack on sm_$arch"
fi

# a winner made under another driver and NVRTC: verified again, not tuned again (the entry aged
# by SQL: the sqlite3 command, else python3's sqlite3 module; GPU machines may lack the former)
sql() {
  if command -v sqlite3 >/dev/null; then sqlite3 "$1" "$2"
  else python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); rows = c.execute(sys.argv[2]).fetchall(); c.commit()
print("\n".join("|".join(map(str, r)) for r in rows))' "$1" "$2"; fi
}
if ! command -v sqlite3 >/dev/null && ! command -v python3 >/dev/null; then
  echo "SKIP (the re-verification part): neither sqlite3 nor python3 to age the entry"
  exit $fail
fi
age() { sql "$1" "UPDATE entries SET driver = driver - 10, nvrtc = nvrtc - 10" || fail=1; }
last_run() { sql "$1" "SELECT status FROM runs ORDER BY id DESC LIMIT 1"; }
age "$db"
"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out3" 2>&1 || { echo "FAIL: the run after a driver change"; fail=1; }
cat "$dir/out3"
expect "$dir/out3" "verifying it again" "the run after a driver change"
expect "$dir/out3" "passed: kept" "the run after a driver change"
expect "$dir/out3" "from the cache" "the run after a driver change"
[ "$(last_run "$db")" = reverified ] || { echo "FAIL: the log's last run is '$(last_run "$db")', not 'reverified'"; fail=1; }
"$bin" --gpu 0 --shape "$shape" --cache "$db" >"$dir/out4" 2>&1 || fail=1
grep -q "verifying it again" "$dir/out4" && { echo "FAIL: verified a second time"; fail=1; }
age "$dir/other.db"
"$bin" bench --gpu 0 --shape "$shape" --cache "$dir/other.db" --reps 5 >"$dir/bench" 2>&1 || { cat "$dir/bench"; echo "FAIL: bench after a driver change"; fail=1; }
[ "$(last_run "$dir/other.db")" = reverified ] || { echo "FAIL: the runtime did not verify the aged entry"; fail=1; }
exit $fail
