#!/usr/bin/env bash
# bundle_run.sh — issue 40 on a GPU machine (from the repository root, .carry/ packed by
# bench/carry.sh): the 18 public problems (9 shapes, f32 and bf16) tuned into one cache from
# working folder A; exported to a bundle there, whose bytes are searched for the host name, the
# working folders, $HOME and $USER; imported into an empty cache from working folder B with an
# empty kept-cubins folder (every kernel built there), each entry's cubin compared byte for byte
# with A's (python3's sqlite3); imported again with --retime into another empty cache from
# folder C (timed: target under 30 s), each retimed entry's time against the time A tuned;
# then `softmax-tune bench` on two of B's entries and the tune command on a third (each
# verifies an imported entry before its first use). Everything goes to $OUT/bundle-run.txt (OUT default /tmp/st_out).
# Exit 0 when every check passed.
set -u
root=$PWD
out=${OUT:-/tmp/st_out}
W=${BUNDLE_WORK:-/tmp/st_bundle}
bin=$root/.carry/softmax-tune
shapes=32000x16384,4096x4096,1048576x128,131072x1000,65536x2048,8192x32000,2048x128256,256x1048576,32x16384
export LD_LIBRARY_PATH=$root/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
unset SOFTMAX_TUNE_CACHE SOFTMAX_TUNE_CUBINS
rm -rf "$W" && mkdir -p "$W/a" "$W/b" "$W/c" "$out"
exec > >(tee "$out/bundle-run.txt") 2>&1
fail=0
no() { echo "FAIL: $*"; fail=1; }
secs() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
echo "## bundle_run.sh $(date -u '+%F %T') UTC, $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

cd "$W/a" || exit 1
t0=$(date +%s.%N)
"$bin" --shape "$shapes" --dtype f32,bf16 --cache "$W/a/cache.db" --cubins "$W/a/cubins" --quiet >"$W/a/tune.log" 2>&1 ||
  { no "tuning exited $?"; tail -5 "$W/a/tune.log"; }
echo "tuned the 18 problems in $(secs "$t0") s"
"$bin" cache export --cache "$W/a/cache.db" -o "$W/a/fleet.stb" || no "export exited $?"
ls -l "$W/a/fleet.stb" | awk '{ print "bundle: " $5 " bytes" }'
for needle in "$(cat /proc/sys/kernel/hostname)" "$W" "$root" "${HOME:-}" "${USER:-}"; do
  [ ${#needle} -ge 4 ] || continue
  grep -qaF -- "$needle" "$W/a/fleet.stb" && no "the bundle holds '$needle'"
done

cd "$W/b" || exit 1
t0=$(date +%s.%N)
"$bin" cache import "$W/a/fleet.stb" --cache "$W/b/cache.db" --cubins "$W/b/cubins" || no "import exited $?"
echo "import (every kernel built here, no GPU work): $(secs "$t0") s"
cd "$W/c" || exit 1
t0=$(date +%s.%N)
"$bin" cache import "$W/a/fleet.stb" --cache "$W/c/cache.db" --cubins "$W/c/cubins" --retime --gpu 0 || no "import --retime exited $?"
t=$(secs "$t0")
echo "import --retime (built, verified and timed here): $t s (target under 30 s)"
awk -v t="$t" 'BEGIN { exit !(t < 30) }' || no "import --retime took $t s"

python3 - "$W/a/cache.db" "$W/b/cache.db" "$W/c/cache.db" <<'PY' || fail=1
import sqlite3, sys
key = "gpu, arch, sms, templates, dtype, op, rows, cols"
def entries(path):
    c = sqlite3.connect(path)
    return {r[:8]: r[8:] for r in c.execute(f"SELECT {key}, config, cubin, us, origin, driver FROM entries")}
a, b, c = (entries(p) for p in sys.argv[1:4])
bad = 0
for name, other in (("import", b), ("import --retime", c)):
    same = sum(1 for k in a if k in other and other[k][1] == a[k][1])
    print(f"{name}: {len(other)} of {len(a)} entries, {same} with the same cubin bytes as the tuning cache's")
    for k in a:
        if k not in other: print("  missing:", k[4:]); bad = 1
        elif other[k][0] != a[k][0]: print("  other config:", k[4:]); bad = 1
        elif other[k][1] != a[k][1]: print("  other bytes:", k[4:], len(a[k][1]), len(other[k][1])); bad = 1
print("import: origins", sorted({v[3] + " driver " + str(v[4]) for v in b.values()}))
print("import --retime: origins", sorted({v[3] for v in c.values()}))
print(f"{'problem':34} {'tuned us':>10} {'retimed us':>10} {'ratio':>6}")
for k in sorted(a, key=lambda k: (k[4], k[6] * k[7])):
    if k in c:
        print(f"{k[4] + ' ' + str(k[6]) + 'x' + str(k[7]):34} {a[k][2]:10.1f} {c[k][2]:10.1f} {c[k][2] / a[k][2]:6.3f}")
sys.exit(bad)
PY
"$bin" cache list --cache "$W/c/cache.db" | head -4
"$bin" log --cache "$W/c/cache.db" --shape 4096x4096 | head -3
for s in 4096x4096 256x1048576; do
  "$bin" bench --shape "$s" --cache "$W/b/cache.db" --cubins "$W/b/cubins" --reps 20 2>&1 || no "bench $s"
done
"$bin" --shape 32x16384 --dtype bf16 --cache "$W/b/cache.db" --cubins "$W/b/cubins" | head -3
"$bin" cache list --cache "$W/b/cache.db" --shape 4096x4096 --dtype f32
"$bin" cache list --cache "$W/b/cache.db" --shape 32x16384 --dtype bf16
echo "bundle_run: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
