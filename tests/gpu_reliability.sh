#!/usr/bin/env bash
# gpu_reliability.sh BINARY — the command's reliability on a GPU, into temporary caches:
#  (a) `--force --shape 4096x4096` SIGKILLed at a random moment (0.2..3 s, or up to the end
#      of a whole tuning when that takes longer) 20 times on one cache; after each kill
#      `cache show` works, PRAGMA integrity_check says ok and every run has all its trials
#      (with sqlite3, when installed), and `bench` either verifies the cached winner or says
#      that none is cached; the runs grow by the tuners that finished (+1 for a kill that came
#      after a commit);
#  (b) 4 tuners at once on one new cache, same shape, --force: all exit 0, `cache list` shows
#      one entry for the shape, and (sqlite3) the log holds 4 runs;
#  (c) SIGINT while tuning: exit status 130, 'nothing was stored', no new run in `log`;
#  (d) bad input that needs a GPU to be found: --gpu 99 and a shape too large for the GPU's
#      memory: exit 2, one line on stderr, and the cache (existing or not) untouched.
# Exit 77 (skipped) when there is no GPU or driver. ST_KILLS=N changes the number of kills.
set -u
bin=$1
dir=$(mktemp -d /tmp/st_gpu_rel_XXXXXX)
trap 'rm -rf "$dir"' EXIT
shape=4096x4096
kills=${ST_KILLS:-20}
fail=0
have_sqlite=0
command -v sqlite3 >/dev/null && have_sqlite=1
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

"$bin" --shape 64x64 --cache "$dir/probe.db" >"$dir/probe.out" 2>"$dir/probe.err"
rc=$?
if [ $rc -ne 0 ] && grep -q -E "no CUDA driver|the CUDA driver|no GPU|cannot count GPUs|needs sm_75" "$dir/probe.err"; then
  echo "SKIP: no GPU here: $(cat "$dir/probe.err")"
  exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: tuning 64x64 exited $rc: $(cat "$dir/probe.err")"; exit 1; }
[ $have_sqlite -eq 1 ] || echo "note: no sqlite3 here: PRAGMA integrity_check and the trial counts are not checked"

# sqlite3 query: prints its result
q() { sqlite3 -cmd '.timeout 10000' "$1" "$2"; }

# The cache C after a kill: readable, whole, and bench finds a verified entry or none.
check_after_kill() {
  local c=$1 what=$2 rc out
  out=$("$bin" cache show --cache "$c" 2>&1)
  rc=$?
  # a kill before the first store may leave no cache (exit 1, "no cache ... yet"/"holds nothing yet")
  if [ $rc -ne 0 ] && ! { [ $rc -eq 1 ] && [[ "$out" == *"no cache at"* || "$out" == *"holds nothing yet"* ]]; }; then
    bad "$what: cache show exited $rc: $out"
  fi
  if [ $have_sqlite -eq 1 ] && [ -s "$c" ]; then
    out=$(q "$c" 'PRAGMA integrity_check' 2>&1)
    [ "$out" = ok ] || bad "$what: integrity_check: $out"
    out=$(q "$c" "SELECT count(*) FROM runs r WHERE r.configs != (SELECT count(*) FROM trials t WHERE t.run = r.id)" 2>&1)
    [ "$out" = 0 ] || bad "$what: runs without all their trials: $out"
    out=$(q "$c" "SELECT count(*) FROM entries WHERE run NOT IN (SELECT id FROM runs)" 2>&1)
    [ "$out" = 0 ] || bad "$what: entries without their run: $out"
  fi
  out=$("$bin" bench --shape $shape --reps 10 --cache "$c" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    [[ "$out" == *"verified against float64"* ]] || bad "$what: bench exited 0 without verifying: $out"
  elif [[ "$out" != *"no tuned kernel"* ]]; then
    bad "$what: bench exited $rc, neither verified nor 'no tuned kernel': $out"
  fi
}

# ---- (a) SIGKILL at random moments: 0.2..3 s, or to the end of a whole tuning when it takes
# longer, so that kills also land in the store at its end; first one whole tuning, so that
# bench has an entry to verify
c=$dir/kill.db
start=$(date +%s%N)
"$bin" --quiet --shape $shape --cache "$c" >/dev/null 2>"$dir/kill.err" || bad "(a) the first tuning failed: $(cat "$dir/kill.err")"
whole=$((($(date +%s%N) - start) / 1000000))
span=$((whole + 200 > 3000 ? whole + 200 : 3000))
runs0=$([ $have_sqlite -eq 1 ] && q "$c" 'SELECT count(*) FROM runs')
echo "(a) a whole tuning of $shape takes $whole ms; killing at 200..$span ms"
stored=0 t0=$(date +%s)
for i in $(seq 1 "$kills"); do
  ms=$((200 + (RANDOM * 32768 + RANDOM) % (span - 199)))
  "$bin" --force --quiet --shape $shape --cache "$c" >"$dir/kill.out" 2>"$dir/kill.err" &
  pid=$!
  sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  rc=$?
  [ $rc -eq 0 ] && stored=$((stored + 1))
  [ $rc -eq 0 ] || [ $rc -eq 137 ] || bad "(a) kill $i: the tuner exited $rc before the kill: $(cat "$dir/kill.err")"
  check_after_kill "$c" "(a) kill $i after $ms ms"
done
runs=$([ $have_sqlite -eq 1 ] && q "$c" 'SELECT count(*) FROM runs')
[ $have_sqlite -eq 0 ] || [ $((runs - runs0)) -eq $stored ] || [ $((runs - runs0)) -eq $((stored + 1)) ] ||
  bad "(a) $stored tuners finished, but the cache went from $runs0 to $runs runs"
echo "(a) $kills kills in $(($(date +%s) - t0)) s; $stored tuners finished before theirs; runs in the cache: ${runs0:-?} -> ${runs:-?}"

# ---- (b) 4 tuners at once on a new cache
c=$dir/four.db
pids=()
for i in 1 2 3 4; do
  "$bin" --force --quiet --shape $shape --cache "$c" >"$dir/four$i.out" 2>"$dir/four$i.err" &
  pids+=($!)
done
for i in 1 2 3 4; do
  wait "${pids[$((i - 1))]}"
  rc=$?
  [ $rc -eq 0 ] || bad "(b) tuner $i of 4 exited $rc: $(cat "$dir/four$i.err")"
done
out=$("$bin" cache list --shape $shape --cache "$c" 2>&1)
[[ "$out" == "1 entry"* ]] || bad "(b) cache list --shape $shape: $out"
if [ $have_sqlite -eq 1 ]; then
  n=$(q "$c" "SELECT count(*) FROM runs WHERE rows = 4096 AND cols = 4096")
  [ "$n" = 4 ] || bad "(b) $n runs for 4 tuners"
fi
echo "(b) 4 tuners at once: $(printf '%s' "$out" | head -1)"

# ---- (c) SIGINT while tuning: tries later moments until one lands in the sweep
c=$dir/int.db
"$bin" --quiet --shape $shape --cache "$c" >/dev/null 2>&1 || bad "(c) the first tuning failed"
last() { "$bin" log --cache "$1" 2>/dev/null | head -1 | cut -d, -f1; }
before=$(last "$c")
landed=0
set -m   # background jobs as from a terminal: SIGINT not ignored
for ms in 600 1000 1500 2200 300; do
  "$bin" --force --quiet --shape $shape --cache "$c" >"$dir/int.out" 2>"$dir/int.err" &
  pid=$!
  sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  kill -INT $pid 2>/dev/null
  wait $pid
  rc=$?
  if grep -q "nothing was stored" "$dir/int.err"; then
    landed=1
    [ $rc -eq 130 ] || bad "(c) SIGINT after $ms ms: exit status $rc, want 130"
    lines=$(wc -l <"$dir/int.err")
    [ "$lines" -eq 1 ] || bad "(c) SIGINT after $ms ms: $lines lines on stderr: $(cat "$dir/int.err")"
    now=$(last "$c")
    [ "$now" = "$before" ] || bad "(c) SIGINT after $ms ms: the log's last run went from '$before' to '$now'"
    echo "(c) SIGINT after $ms ms: exit $rc, $(cat "$dir/int.err")"
    break
  fi
  echo "(c) SIGINT after $ms ms did not land in the sweep (exit $rc: $(head -c 200 "$dir/int.err")); trying another moment"
  before=$(last "$c")
done
set +m
[ $landed -eq 1 ] || bad "(c) no SIGINT landed in the sweep"

# ---- (d) bad input that needs a GPU
cp "$dir/int.db" "$dir/keep.db"
for args in "--gpu 99 --shape 64x64|GPU 99" "--shape 4000000000x100000|4000000000x100000"; do
  a=${args%|*} want=${args#*|}
  for c in "$dir/keep.db" "$dir/new.db"; do
    sum=$([ -e "$c" ] && cksum <"$c")
    mt=$([ -e "$c" ] && stat -c "%y %s" "$c")
    # shellcheck disable=SC2086
    err=$("$bin" $a --cache "$c" 2>&1 >/dev/null)
    rc=$?
    lines=0
    [ -n "$err" ] && lines=$(printf '%s\n' "$err" | wc -l)
    [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$err" == *"$want"* ]] ||
      bad "(d) softmax-tune $a --cache $c: exit $rc, $lines lines on stderr (want 2, 1 line naming $want): $err"
    if [ "$c" = "$dir/new.db" ]; then
      [ -e "$c" ] && bad "(d) softmax-tune $a: made the cache $c ($(stat -c %s "$c") bytes)"
      rm -f "$c" "$c-wal" "$c-shm"
    else
      [ "$(cksum <"$c")" = "$sum" ] && [ "$(stat -c "%y %s" "$c")" = "$mt" ] || bad "(d) softmax-tune $a: changed $c"
    fi
    echo "(d) softmax-tune $a: exit $rc: $err"
  done
done

echo "gpu_reliability: $fail failed"
[ $fail -eq 0 ]
