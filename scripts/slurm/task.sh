#!/usr/bin/env bash
# task.sh SHAPES OUT — one task of a Slurm job array (submit.sh; docs/fleet.md): tunes its share
# of the problems listed in SHAPES on the one GPU Slurm gave it, into a cache of its own on
# local disk, and exports that cache to the bundle OUT/bundle-ID.stb.
#
# SHAPES: one problem a line, `RxC [dtype] [op]` (defaults f32 softmax); blank lines and lines
# starting with # are skipped. Task ID takes problems ID, ID+COUNT, ID+2*COUNT, ... (counted from
# 0 over the problems, ID counted from the array's first index), where ID and COUNT come from
# SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (set them by hand to run a task anywhere).
# SOFTMAX_TUNE: the command (default softmax-tune on PATH). The task's cache is
# ${TMPDIR:-/tmp}/softmax-tune-JOB-ID.db, removed at the end (SQLite's locks want local disk;
# only the bundle goes to OUT, which all tasks and the merge share).
# Exit: 0; 1 when a problem failed (the bundle holds the others); 2 bad input.
set -u
usage="usage: task.sh SHAPES OUT (in a Slurm job array, or with SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT set)"
shapes=${1:?$usage}
out=${2:?$usage}
st=${SOFTMAX_TUNE:-softmax-tune}
say() { echo "task.sh: $*" >&2; }

[ -n "${SLURM_ARRAY_TASK_ID:-}" ] || { say "SLURM_ARRAY_TASK_ID is not set: not a task of a job array ($usage)"; exit 2; }
first=${SLURM_ARRAY_TASK_MIN:-0}
count=${SLURM_ARRAY_TASK_COUNT:-$((${SLURM_ARRAY_TASK_MAX:-0} - first + 1))}
id=$((SLURM_ARRAY_TASK_ID - first))
if [ "$count" -lt 1 ] || [ "$id" -lt 0 ] || [ "$id" -ge "$count" ]; then
  say "task $SLURM_ARRAY_TASK_ID does not fit an array of $count tasks from $first"
  exit 2
fi
[ -r "$shapes" ] && [ -f "$shapes" ] || { say "cannot read the shape list '$shapes'"; exit 2; }
mkdir -p "$out" || { say "cannot make the output folder '$out'"; exit 2; }

cache=${TMPDIR:-/tmp}/softmax-tune-${SLURM_ARRAY_JOB_ID:-$$}-$SLURM_ARRAY_TASK_ID.db
rm -f "$cache" "$cache-wal" "$cache-shm"
trap 'rm -f "$cache" "$cache-wal" "$cache-shm"' EXIT
n=0 mine=0 failed=0
while read -r shape dtype op _; do
  case $shape in '' | \#*) continue ;; esac
  if [ $((n % count)) -eq "$id" ]; then
    mine=$((mine + 1))
    "$st" --gpu 0 --shape "$shape" --dtype "${dtype:-f32}" --op "${op:-softmax}" --cache "$cache" --quiet </dev/null
    rc=$?
    [ $rc -eq 0 ] || { say "task $SLURM_ARRAY_TASK_ID: $shape ${dtype:-f32} ${op:-softmax} failed (exit $rc)"; failed=$((failed + 1)); }
  fi
  n=$((n + 1))
done <"$shapes"
if [ $mine -eq $failed ]; then
  say "task $SLURM_ARRAY_TASK_ID: nothing tuned ($mine of $n problems were this task's, $failed failed): no bundle"
  [ $failed -eq 0 ]
  exit
fi
"$st" cache export --cache "$cache" -o "$out/bundle-$SLURM_ARRAY_TASK_ID.stb" || exit 1
say "task $SLURM_ARRAY_TASK_ID: $((mine - failed)) of $mine problems tuned into $out/bundle-$SLURM_ARRAY_TASK_ID.stb"
[ $failed -eq 0 ]
