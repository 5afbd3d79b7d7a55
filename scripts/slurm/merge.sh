#!/usr/bin/env bash
# merge.sh OUT [CACHE] — the step after the job array (submit.sh; docs/fleet.md): imports every
# bundle OUT/bundle-*.stb into CACHE, each checked whole, its kernels built here with NVRTC (no GPU
# needed) and merged in one transaction (on a key held twice the faster entry stays), then exports all of CACHE to OUT/fleet.stb: the one file
# to copy to every host (softmax-tune cache import fleet.stb). Without CACHE, OUT/fleet.db is
# made afresh from the bundles each time (a second merge does not log their runs twice).
# ST_TASKS=N: the array's size, to say when bundles are missing. SOFTMAX_TUNE: the command.
# Exit: 0; 1 when a bundle was refused or missing (the others are merged).
set -u
out=${1:?usage: merge.sh OUT [CACHE]}
cache=${2:-$out/fleet.db.new}
st=${SOFTMAX_TUNE:-softmax-tune}
say() { echo "merge.sh: $*" >&2; }

shopt -s nullglob
[ $# -ge 2 ] || rm -f "$cache" "$cache-wal" "$cache-shm"
bundles=("$out"/bundle-*.stb)
[ ${#bundles[@]} -gt 0 ] || { say "no bundles (bundle-*.stb) in '$out'"; exit 1; }
fail=0
for b in "${bundles[@]}"; do
  "$st" cache import "$b" --cache "$cache" || { say "left out $b"; fail=1; }
done
if [ -n "${ST_TASKS:-}" ] && [ ${#bundles[@]} -ne "$ST_TASKS" ]; then
  say "${#bundles[@]} bundles from $ST_TASKS tasks: see the tasks' logs"
  fail=1
fi
"$st" cache export --cache "$cache" -o "$out/fleet.stb" || exit 1
[ $# -ge 2 ] || mv -f "$cache" "$out/fleet.db" || exit 1
exit $fail
