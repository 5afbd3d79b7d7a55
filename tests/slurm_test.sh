#!/usr/bin/env bash
# slurm_test.sh BINARY FAKE_TUNE — the Slurm fleet recipe (scripts/slurm/) on CPU: FAKE_TUNE
# (tests/fake_tune.c) tunes on the fake backend where the recipe runs softmax-tune, BINARY does
# the cache export and import. Checks: three array tasks, run by hand with SLURM_ARRAY_TASK_ID
# set, split a list of seven problems between them (each tuned once) and each writes a bundle;
# the merge imports them into one cache of seven entries and seven runs and writes fleet.stb
# (merging again makes the same, not twice the runs),
# which a fresh cache imports whole; submit.sh through a stand-in sbatch (tests/slurm/sbatch)
# does the same; a task outside an array, a bad problem in the list (the others still go into
# the bundle) and a damaged bundle at merge time (the others still merged) fail as they should.
set -u
bin=$1
fake=$2
src=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/st_slurm_XXXXXX)
trap '[ -n "${ST_KEEP:-}" ] || rm -rf "$W"' EXIT
export SOFTMAX_TUNE=$fake ST_REAL_BIN=$bin TMPDIR=$W SOFTMAX_TUNE_CUBINS=$W/cubins
fail=0
no() { echo "FAIL: $*"; fail=1; }
entries() { "$bin" cache list --cache "$1" | head -1 | cut -d' ' -f1; }

cat >"$W/shapes.txt" <<'LIST'
# the problems of the fleet: RxC [dtype] [op]
1024x4096
2048x4096 f16

4096x4096 bf16 log_softmax
1024x8192 f32
8192x1024
512x2048 f16 softmax
32x16384 bf16
LIST

# three tasks by hand
for i in 0 1 2; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 bash "$src/scripts/slurm/task.sh" "$W/shapes.txt" "$W/out" >"$W/task$i.log" 2>&1 ||
    { no "task $i exited $?"; cat "$W/task$i.log"; }
  [ -s "$W/out/bundle-$i.stb" ] || no "task $i wrote no bundle"
done
ls "$W"/softmax-tune-*.db >/dev/null 2>&1 && no "a task left its cache behind"
bash "$src/scripts/slurm/merge.sh" "$W/out" >"$W/merge.log" 2>&1 || { no "merge exited $?"; cat "$W/merge.log"; }
[ "$(entries "$W/out/fleet.db")" = 7 ] || no "fleet.db holds $(entries "$W/out/fleet.db") entries, want 7"
runs=$(sqlite3 "$W/out/fleet.db" "SELECT count(DISTINCT id) || ' ' || count(DISTINCT rows || 'x' || cols || dtype) FROM runs" 2>/dev/null)
[ -z "$runs" ] || [ "$runs" = "7 7" ] || no "fleet.db runs: '$runs', want 7 runs of 7 problems"
bash "$src/scripts/slurm/merge.sh" "$W/out" >"$W/merge1.log" 2>&1 || { no "a second merge exited $?"; cat "$W/merge1.log"; }
runs=$(sqlite3 "$W/out/fleet.db" "SELECT count(*) FROM runs" 2>/dev/null)
[ -z "$runs" ] || [ "$runs" = 7 ] || no "a second merge: fleet.db logs $runs runs, want 7"
"$bin" cache import "$W/out/fleet.stb" --cache "$W/host.db" >"$W/import.log" 2>&1 || { no "importing fleet.stb"; cat "$W/import.log"; }
grep -q "7 new" "$W/import.log" || { no "fleet.stb did not bring 7 new entries"; cat "$W/import.log"; }
"$bin" cache list --cache "$W/host.db" --shape 4096x4096 --dtype bf16 --op log_softmax | grep -q "^1 entry" ||
  no "the host cache lacks 4096x4096 bf16 log_softmax"
[ "$("$bin" cache list --cache "$W/host.db" | grep -c "\[bundle, not verified or retimed here yet\]")" = 7 ] ||
  no "cache list does not mark the 7 imported entries"
"$bin" log --cache "$W/host.db" | grep -q "imported from a bundle" || no "log does not say the run came from a bundle"

# the same through submit.sh and a stand-in sbatch
PATH=$src/tests/slurm:$PATH SBATCH_LOG=$W/sbatch.log bash "$src/scripts/slurm/submit.sh" "$W/shapes.txt" "$W/sub" 4 \
  --partition=gpu >"$W/submit.log" 2>&1 || { no "submit.sh exited $?"; cat "$W/submit.log"; }
[ "$(entries "$W/sub/fleet.db" 2>/dev/null)" = 7 ] || { no "submit.sh: fleet.db does not hold 7 entries"; cat "$W/sub/"*.log; }
grep -q -- "--array=0-3 --gres=gpu:1" "$W/sbatch.log" || no "submit.sh asked for no array of 4 one-GPU tasks"
grep -q -- "--dependency=afterany:" "$W/sbatch.log" || no "submit.sh's merge does not wait for the array"

# failures
env -u SLURM_ARRAY_TASK_ID bash "$src/scripts/slurm/task.sh" "$W/shapes.txt" "$W/x" 2>"$W/err"
[ $? -eq 2 ] && grep -q "SLURM_ARRAY_TASK_ID" "$W/err" || no "a task outside an array did not stop with status 2"
printf '64x64\n0x5\n' >"$W/bad.txt"
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=1 bash "$src/scripts/slurm/task.sh" "$W/bad.txt" "$W/bad" >"$W/bad.log" 2>&1
[ $? -eq 1 ] || no "a task with a bad problem did not exit 1"
[ "$("$bin" cache import "$W/bad/bundle-0.stb" --cache "$W/bad.db" >/dev/null && entries "$W/bad.db")" = 1 ] ||
  no "a task with a bad problem lost the good one"
head -c 1000 "$W/out/bundle-1.stb" >"$W/out/bundle-1.stb.cut" && mv "$W/out/bundle-1.stb.cut" "$W/out/bundle-1.stb"
bash "$src/scripts/slurm/merge.sh" "$W/out" "$W/again.db" >"$W/merge2.log" 2>&1
[ $? -eq 1 ] && grep -q "truncated" "$W/merge2.log" || { no "a damaged bundle at merge time"; cat "$W/merge2.log"; }
[ "$(entries "$W/again.db")" = 5 ] || no "merge with a damaged bundle: $(entries "$W/again.db") entries, want 5"

echo "slurm_test: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
