#!/usr/bin/env bash
# bad_input.sh BINARY MAKE_CACHE — every bad input the command can meet without a GPU: bad
# shapes (zero, negative, empty, exponent, capital X, spaces, beyond 64 bits), --gpu -1, unknown
# dtype, op, knob, option; a config with a duplicate or a missing knob; a cache path that is a
# directory, under a regular file, unreadable (itself, or its directory), in a read-only
# directory, not SQLite, truncated, or another program's SQLite database (for tune, log and
# cache list); a bundle cut short, with a byte flipped, missing, or a cache given as one; export
# without -o, to an unwritable place or matching nothing; templates with a Lua error (the message names
# file:line); a template that NVRTC cannot compile. Each case wants its exit status (2 for bad
# input, !0 any failure), exactly one line on stderr containing the given text, and nothing
# written: no file in the work folder (caches, HOME) made, changed or removed. A --shapes file with
# a bad line (attention kinds and options, cross-entropy over one class) tunes none of its lines.
# MAKE_CACHE is test_concurrent, run as `MAKE_CACHE --make-cache PATH` to make a cache with a run in it.
# As root, the permission cases run as nobody through setpriv (else they are skipped, saying so).
# ST_VERBOSE=1 prints every case's message.
set -u
bin=$1
make_cache=$2
src=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/st_bad_input_XXXXXX)
trap 'chmod -R u+rwX "$W" 2>/dev/null; rm -rf "$W" "$W.out"' EXIT
chmod 755 "$W"
export HOME=$W/home
unset SOFTMAX_TUNE_CACHE XDG_CACHE_HOME
mkdir -p "$HOME"

# ---- fixtures: none of the cases may touch them
"$make_cache" --make-cache "$W/canary.db" || { echo "FAIL: cannot make a cache with $make_cache"; exit 1; }
"$bin" log --cache "$W/canary.db" >/dev/null || { echo "FAIL: the fixture cache does not log"; exit 1; }
db=$W/canary.db
mkdir "$W/dir.db"
echo "a regular file" >"$W/file"
cp "$db" "$W/unreadable.db" && chmod 000 "$W/unreadable.db"
mkdir "$W/ro" && chmod 555 "$W/ro"
mkdir "$W/private" && cp "$db" "$W/private/cache.db" && chmod 700 "$W/private"
# an SQLite database of something else
if command -v sqlite3 >/dev/null; then
  sqlite3 "$W/foreign.db" 'CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES ("not a cache");' && foreign_ok=1
elif command -v python3 >/dev/null; then
  python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript("CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES (\"x\");"); c.commit()' \
    "$W/foreign.db" && foreign_ok=1
fi
[ "${foreign_ok:-0}" -eq 1 ] && cp "$W/foreign.db" "$W/foreign2.db"   # one for each case: a failing case may write
printf 'SQLite format 2\nthis is not a database\n' >"$W/notsqlite.db"
size=$(stat -c %s "$db")
cp "$db" "$W/trunc_header.db" && truncate -s 50 "$W/trunc_header.db"      # inside the 100-byte header
cp "$db" "$W/trunc_half.db" && truncate -s $((size / 2)) "$W/trunc_half.db"
cp "$db" "$W/trunc_page.db" && truncate -s $((size - 4096)) "$W/trunc_page.db"   # the last page lost
# bundles: a good one, one cut short, one with a byte flipped in its image
"$bin" cache export --cache "$db" -o "$W/good.stb" >/dev/null || { echo "FAIL: cannot export the fixture cache"; exit 1; }
bsize=$(stat -c %s "$W/good.stb")
head -c $((bsize - 1)) "$W/good.stb" >"$W/cut.stb"
cp "$W/good.stb" "$W/flip.stb"
printf '\x5a' | dd of="$W/flip.stb" bs=1 seek=$((bsize - 100)) conv=notrunc status=none
cfg=$("$bin" space --shape 32000x16384 | grep -E 'split=1(,|$)' | head -1)
nosplit=$(printf '%s' "$cfg" | sed -E 's/,?split=[^,]*//')
[ -n "$cfg" ] || { echo "FAIL: no config from space"; exit 1; }
# templates: a Lua syntax error, a Lua runtime error (both in row.cu), a space.lua that throws,
# and a row.cu that NVRTC refuses; each a copy of the source templates with one line changed
for t in lua_syntax lua_runtime space cuda ok; do cp -r "$src/templates" "$W/tpl_$t"; done
tcfg=$("$bin" space --templates "$W/tpl_ok" --shape 32000x16384 | grep -E 'split=1(,|$)' | head -1)
[ -n "$tcfg" ] || { echo "FAIL: no config from space --templates (a copy of $src/templates)"; exit 1; }
syn=$(grep -n '^% *if ' "$W/tpl_lua_syntax/row.cu" | head -1 | cut -d: -f1)
sed -i "${syn}s/.*/% if if then/" "$W/tpl_lua_syntax/row.cu"
inc=$(grep -n '^%' "$W/tpl_lua_runtime/row.cu" | head -1 | cut -d: -f1)
sed -i "${inc}a % local broken = nil + 1" "$W/tpl_lua_runtime/row.cu"
run=$((inc + 1))
sed -i '1i error("space.lua broken on purpose")' "$W/tpl_space/space.lua"
ext=$(grep -n 'extern "C"' "$W/tpl_cuda/row.cu" | head -1 | cut -d: -f1)
sed -i "${ext}i int not_cuda = @@@;" "$W/tpl_cuda/row.cu"
rm -rf "$W/tpl_ok"
# shapes files whose last line is bad (a good one first: nothing of the file is tuned)
printf '2x4x8x64 bf16 attention_softmax mask=causal\n2x4x8x64 bf16 attention_softmax mask=diagonal\n' >"$W/attn_mask.txt"
printf '2x4x8x64 bf16 attention_softmax_backward mask=causal bias=alibi\n' >"$W/attn_bias.txt"
printf '64x4096 f32 softmax\n64x4096 bf16 attention_softmax mask=causal\n' >"$W/attn_shape.txt"
printf '2x4x8x64 bf16 attention_softmax mask=window\n' >"$W/attn_window.txt"
printf '64x50257 bf16 cross_entropy\n64x1 bf16 cross_entropy_loss\n' >"$W/ce_one.txt"
printf '64x64 f32 softmax\n' >"$W/good.txt"

# ---- running as someone whom permissions stop
if [ "$(id -u)" -ne 0 ]; then
  as_nobody() { "$@"; }
  nobody_ok=1
elif command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" knobs >/dev/null 2>&1; then
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  nobody_ok=1
else
  nobody_ok=0
fi

# Every file under $W: type, path, mode, size, mtime and checksum (directories: path and mode).
snapshot() {
  (cd "$W" && find . -type d -printf 'd %p %m\n' -o -printf 'f %p %m %s %T@\n' | sort &&
    find . -type f ! -name unreadable.db -exec cksum {} + | sort)
}

n=0 fail=0 skip=0
before=$(snapshot)
while IFS='|' read -r want_rc want who args; do
  [ -z "$want_rc" ] && continue
  case $want_rc in \#*) continue ;; esac
  n=$((n + 1))
  eval "set -- $args"
  if [ "$who" = nobody ] && [ $nobody_ok -eq 0 ]; then
    echo "SKIP: softmax-tune $args: running as root, and cannot drop to nobody (no setpriv), so permissions do not stop it"
    skip=$((skip + 1))
    continue
  fi
  if [ "$who" = foreign ] && [ "${foreign_ok:-0}" -eq 0 ]; then
    echo "SKIP: softmax-tune $args: neither sqlite3 nor python3 here to make an SQLite file of something else"
    skip=$((skip + 1))
    continue
  fi
  if [ "$who" = nobody ]; then
    err=$(as_nobody "$bin" "$@" 2>&1 >"$W.out")
  else
    err=$("$bin" "$@" 2>&1 >"$W.out")
  fi
  rc=$?
  lines=0
  [ -n "$err" ] && lines=$(printf '%s\n' "$err" | wc -l)
  why=""
  case $want_rc in
    '!0') [ $rc -ne 0 ] || why="exit status 0, want nonzero; " ;;
    *) [ $rc -eq "$want_rc" ] || why="exit status $rc, want $want_rc; " ;;
  esac
  [ "$lines" -eq 1 ] || why="$why$lines lines on stderr, want 1; "
  [[ "$err" == *"$want"* ]] || why="${why}stderr does not say \"$want\"; "
  after=$(snapshot)
  if [ "$after" != "$before" ]; then
    why="${why}files changed: $(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep '^[<>]' | tr '\n' ' ')"
    before=$after
  fi
  if [ -n "$why" ]; then
    fail=$((fail + 1))
    echo "FAIL: softmax-tune $args$([ "$who" = nobody ] && echo " (as nobody)")"
    echo "      $why"
    echo "      stderr: $(printf '%s' "$err" | head -c 600 | sed '2,$s/^/              /')"
    echo "      stdout: $(head -c 300 "$W.out" | sed '2,$s/^/              /')"
  elif [ -n "${ST_VERBOSE:-}" ]; then
    echo "ok (status $rc): softmax-tune $args: $err"
  fi
done <<EOT
# exit status|text the one line on stderr must hold|runs as nobody, needs foreign.db, or -|arguments
2|'0x5'|-|--shape 0x5 --cache $db
2|'5x0'|-|--shape 5x0 --cache $db
2|'-1x3'|-|--shape -1x3 --cache $db
2|'32000x'|-|--shape 32000x --cache $db
2|'x16384'|-|--shape x16384 --cache $db
2|'1e3x5'|-|--shape 1e3x5 --cache $db
2|'32000X16384 '|-|--shape '32000X16384 ' --cache $db
2|' 32000x16384'|-|--shape ' 32000x16384' --cache $db
2|'18446744073709551616x5'|-|--shape 18446744073709551616x5 --cache $db
2|'5x18446744073709551616'|-|--shape 5x18446744073709551616 --cache $db
2|'99999999999999999999999999x99999999999999999999999999'|-|--shape 99999999999999999999999999x99999999999999999999999999 --cache $db
2|'4611686018427387904x4'|-|--shape 4611686018427387904x4 --cache $db
2|'0x5'|-|log --shape 0x5 --cache $db
2|'0x5'|-|cache list --shape 0x5 --cache $db
2|'0x5'|-|bench --shape 0x5 --cache $db
2|'-1'|-|--gpu -1 --shape 64x64 --cache $db
2|'18446744073709551617'|-|--gpu 18446744073709551617 --shape 64x64 --cache $db
2|'-1'|-|bench --gpu -1 --shape 64x64 --cache $db
2|bad --space 'all'|-|--shape 64x64 --space all --cache $db
# the cross-entropy ops: no rows, one class, bad options (each refused before any GPU work)
2|'0x32000'|-|--shape 0x32000 --op cross_entropy --cache $db
2|'0x32000'|-|bench --shape 0x32000 --op cross_entropy_loss --cache $db
2|cross_entropy needs 2 or more classes|-|--shape 64x1 --op cross_entropy --cache $db
2|cross_entropy_loss needs 2 or more classes|-|bench --shape 64x1 --op cross_entropy_loss --cache $db
2|cross_entropy needs 2 or more classes|-|space --shape 64x1 --op cross_entropy
2|cross_entropy needs 2 or more classes|-|--shape 64x2,64x1 --op cross_entropy --cache $db
2|cross_entropy_loss needs 2 or more classes|-|--shape 64x1 --op softmax,cross_entropy_loss --cache $db
2|cross_entropy needs 2 or more classes|-|explain --arch sm_90 --shape 64x1 --op cross_entropy --cache $db
2|cross_entropy_loss needs 2 or more classes|-|emit --shape 64x1 --op cross_entropy_loss --config $cfg
2|cross_entropy needs 2 or more classes|-|compile --shape 64x1 --op cross_entropy --arch sm_90 -o $W/k.cubin --config $cfg
2|bad --label-smoothing '1.5'|-|--shape 64x32000 --op cross_entropy --label-smoothing 1.5 --cache $db
2|bad --label-smoothing '-0.1'|-|--shape 64x32000 --op cross_entropy --label-smoothing -0.1 --cache $db
2|bad --label-smoothing 'nan'|-|--shape 64x32000 --op cross_entropy --label-smoothing nan --cache $db
2|bad --z-loss 'inf'|-|--shape 64x32000 --op cross_entropy --z-loss inf --cache $db
2|bad --z-loss '-1e-4'|-|bench --shape 64x32000 --op cross_entropy --z-loss -1e-4 --cache $db
2|bad --z-loss '1e99'|-|--shape 64x32000 --op cross_entropy --z-loss 1e99 --cache $db
2|bad --softcap 'x'|-|--shape 64x32000 --op cross_entropy --softcap x --cache $db
2|bad --softcap '-30'|-|--shape 64x32000 --op cross_entropy_loss --softcap -30 --cache $db
2|bad --ignore-index '1.5'|-|--shape 64x32000 --op cross_entropy --ignore-index 1.5 --cache $db
2|bad --ignore-index '99999999999999999999'|-|--shape 64x32000 --op cross_entropy --ignore-index 99999999999999999999 --cache $db
2|bad --labels 'int16'|-|--shape 64x32000 --op cross_entropy --labels int16 --cache $db
2|option '--z-loss' needs a value|-|--shape 64x32000 --op cross_entropy --z-loss
2|label smoothing 0.1 with class weights is not supported|-|--shape 64x32000 --op cross_entropy --label-smoothing 0.1 --weight --cache $db
2|--weight is an option of --op cross_entropy or cross_entropy_loss, not softmax|-|--shape 64x32000 --weight --cache $db
2|--softcap is an option of --op cross_entropy, cross_entropy_loss, attention_softmax or attention_softmax_backward, not log_softmax|-|bench --shape 64x32000 --op log_softmax --softcap 30 --cache $db
2|bad shape '64x2048': attention_softmax takes BxHxQxK|-|--op attention_softmax --shape 64x2048 --cache $db
2|bad shape '2x4x0x2048': attention_softmax takes BxHxQxK|-|--op attention_softmax --shape 2x4x0x2048 --cache $db
2|bad shape '2x4x8x-1': attention_softmax takes BxHxQxK|-|space --op attention_softmax --shape 2x4x8x-1
2|bad shape '2x4x8x4294967296': K must be at most 2147483647|-|--op attention_softmax --shape 2x4x8x4294967296 --cache $db
2|bad --mask 'diagonal'|-|--op attention_softmax --shape 2x4x8x64 --mask diagonal --cache $db
2|mask window needs a window >= 0 (its left width), got -1|-|--op attention_softmax --shape 2x4x8x64 --mask window --cache $db
2|bad --mask 'causal+causal'|-|--op attention_softmax --shape 2x4x8x64 --mask causal+causal --cache $db
2|bad --mask 'causal+'|-|--op attention_softmax --shape 2x4x8x64 --mask causal+ --cache $db
2|mask padding_causal_window needs a window >= 0|-|--op attention_softmax --shape 2x4x8x64 --mask padding+window+causal --cache $db
2|a window (4) is for the masks with a window (window, causal_window, padding_window, ...), not padding_causal|-|--op attention_softmax --shape 2x4x8x64 --mask causal+padding --window 4 --cache $db
2|mask causal_window needs a window >= 0|-|bench --op attention_softmax --shape 2x4x8x64 --mask causal+window --cache $db
2|a window (16) is for the masks with a window (window, causal_window, padding_window, ...), not causal|-|--op attention_softmax --shape 2x4x8x64 --mask causal --window 16 --cache $db
2|bad --window '-3': expected a width >= 0|-|--op attention_softmax --shape 2x4x8x64 --mask window --window -3 --cache $db
2|bad --scale 'inf': expected a finite number|-|--op attention_softmax --shape 2x4x8x64 --scale inf --cache $db
2|bad --scale 'nan': expected a finite number|-|--op attention_softmax --shape 2x4x8x64 --scale nan --cache $db
2|bad --scale '1e99': expected a finite number|-|--op attention_softmax --shape 2x4x8x64 --scale 1e99 --cache $db
2|bad --softcap '-5'|-|--op attention_softmax --shape 2x4x8x64 --softcap -5 --cache $db
2|bad --offset '1.5': expected a whole number|-|--op attention_softmax --shape 2x4x8x64 --mask causal --offset 1.5 --cache $db
2|bad causal offset 99999999999999: expected at most 2^40 either way|-|--op attention_softmax --shape 2x4x8x64 --mask causal --offset 99999999999999 --cache $db
2|--mask is an option of --op attention_softmax|-|--shape 64x2048 --mask causal --cache $db
2|--alibi is an option of --op attention_softmax|-|space --shape 64x2048 --op log_softmax --alibi
2|attention_softmax takes one problem, not a list|-|--op attention_softmax --shape 2x4x8x64,2x4x8x128 --cache $db
2|--scale needs --shape BxHxQxK|-|log --op attention_softmax --scale 0.5 --cache $db
2|--alibi: attention_softmax_backward has no bias kind|-|--op attention_softmax_backward --shape 2x4x8x64 --alibi --cache $db
2|--bias-tensor: attention_softmax_backward has no bias kind|-|--op attention_softmax_backward --shape 2x4x8x64 --bias-tensor --cache $db
2|--bias-tensor and --alibi: one bias kind at a time|-|--op attention_softmax --shape 2x4x8x64 --alibi --bias-tensor --cache $db
2|bad shape '64x2048': attention_softmax takes BxHxQxK|-|bench --op attention_softmax_backward --shape 64x2048 --cache $db
2|mask window needs a window >= 0|-|--op attention_softmax_backward --shape 2x4x8x64 --mask window --cache $db
2|bad --scale 'inf': expected a finite number|-|bench --op attention_softmax_backward --shape 2x4x8x64 --scale inf --cache $db
2|bad --softcap '-5'|-|--op attention_softmax_backward --shape 2x4x8x64 --softcap -5 --cache $db
2|attention_softmax_backward takes one problem, not a list|-|--op attention_softmax_backward --shape 2x4x8x64,2x4x8x128 --cache $db
2|--mask is an option of --op attention_softmax or attention_softmax_backward|-|--shape 64x2048 --op softmax_backward --mask causal --cache $db
2|mask and bias are knobs of attention_softmax only|-|emit --shape 64x2048 --config threads=256,items=1,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none,mask=causal,bias=none
2|attention_softmax configs name the problem's kinds last: mask=causal,bias=none|-|emit --op attention_softmax --shape 2x4x8x2048 --mask causal --config threads=256,items=1,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none
2|--z-loss is for tuning, bench, space, emit, compile or explain of a cross-entropy op, not for kernels|-|kernels --op cross_entropy --z-loss 1e-4
2|--labels is for tuning, bench, space, emit, compile or explain of a cross-entropy op, not for log|-|log --op cross_entropy --labels int32 --cache $db
2|--ignore-index is for one cross-entropy problem, not a list|-|--shape 64x32000,64x50257 --op cross_entropy --ignore-index 0 --cache $db
2|bad --space 'Full'|-|space --shape 64x64 --space Full
2|unknown dtype 'f64'|-|--shape 64x64 --dtype f64 --cache $db
2|unknown dtype 'F32'|-|log --dtype F32 --cache $db
2|unknown op 'softmin'|-|--shape 64x64 --op softmin --cache $db
2|unknown op 'softmin'|-|cache clear --op softmin --cache $db
2|unknown option '--bogus'|-|--shape 64x64 --bogus --cache $db
2|unknown option '--shapez'|-|--shapez 64x64 --cache $db
2|cannot read --shapes '64x64'|-|--shapes 64x64 --cache $db
2|$W/attn_mask.txt:2: bad mask 'diagonal'|-|--shapes $W/attn_mask.txt --cache $W/new.db
2|$W/attn_bias.txt:1: bias=alibi: attention_softmax_backward has no bias kind|-|--shapes $W/attn_bias.txt --cache $W/new.db
2|$W/attn_shape.txt:2: bad shape '64x4096': attention_softmax takes BxHxQxK|-|--shapes $W/attn_shape.txt --cache $W/new.db
2|$W/attn_window.txt:1: mask window needs a window >= 0|-|--shapes $W/attn_window.txt --cache $W/new.db
2|$W/ce_one.txt:2: cross_entropy_loss needs 2 or more classes|-|--shapes $W/ce_one.txt --cache $W/new.db
2|$W/attn_mask.txt:2: bad mask 'diagonal'|-|--shapes $W/good.txt,$W/attn_mask.txt --cache $W/new.db
2|cannot read --shapes '$W/none.txt'|-|--shapes $W/good.txt,$W/none.txt --cache $W/new.db
2|bad --shapes '$W/good.txt,': FILE[,FILE...]|-|--shapes $W/good.txt, --cache $W/new.db
2|'0x5'|-|--shape 64x64,0x5 --dtype f32,bf16 --cache $db
2|unknown dtype 'f8'|-|--shape 64x64 --dtype f32,f8 --cache $db
2|unknown op 'exp'|-|--shape 64x64 --op softmax,exp --cache $db
2|unknown gpu 'x'|-|--gpu 0,x --shape 64x64 --cache $db
2|GPU 1 is twice|-|--gpu 1,0,1 --shape 64x64 --cache $db
2|bench takes one --gpu|-|bench --gpu all --shape 64x64 --cache $db
2|space takes one --gpu|-|space --shape 64x64,128x128
2|unknown option '-z'|-|log -z --cache $db
2|unknown knob 'warp'|-|emit --shape 32000x16384 --config $cfg,warp=2 --cache $db
2|unknown knob 'warp'|-|compile --shape 32000x16384 --arch sm_90 -o $W/k.cubin --config $cfg,warp=2
2|duplicate knob 'vec'|-|emit --shape 32000x16384 --config $cfg,vec=4 --cache $db
2|duplicate knob 'threads'|-|compile --shape 32000x16384 --arch sm_90 -o $W/k.cubin --config threads=64,$cfg
2|missing knob 'split'|-|emit --shape 32000x16384 --config $nosplit --cache $db
2|missing knob 'split'|-|compile --shape 32000x16384 --arch sm_90 -o $W/k.cubin --config $nosplit
2|$W/dir.db|-|--shape 64x64 --cache $W/dir.db
2|$W/dir.db|-|log --cache $W/dir.db
2|$W/dir.db|-|cache list --cache $W/dir.db
2|$W/file/cache.db|-|--shape 64x64 --cache $W/file/cache.db
2|$W/file/cache.db|-|log --cache $W/file/cache.db
2|$W/file/cache.db|-|cache list --cache $W/file/cache.db
2|$W/unreadable.db|nobody|--shape 64x64 --cache $W/unreadable.db
2|$W/unreadable.db|nobody|log --cache $W/unreadable.db
2|$W/unreadable.db|nobody|cache list --cache $W/unreadable.db
2|$W/ro/cache.db|nobody|--shape 64x64 --cache $W/ro/cache.db
2|$W/private/cache.db|nobody|--shape 64x64 --cache $W/private/cache.db
2|$W/private/cache.db|nobody|log --cache $W/private/cache.db
2|$W/private/cache.db|nobody|cache list --cache $W/private/cache.db
2|$W/notsqlite.db|-|--shape 64x64 --cache $W/notsqlite.db
2|$W/notsqlite.db|-|log --cache $W/notsqlite.db
2|$W/notsqlite.db|-|cache list --cache $W/notsqlite.db
2|$W/trunc_header.db|-|--shape 64x64 --cache $W/trunc_header.db
2|$W/trunc_header.db|-|log --cache $W/trunc_header.db
2|$W/trunc_header.db|-|cache list --cache $W/trunc_header.db
2|$W/trunc_half.db|-|--shape 64x64 --cache $W/trunc_half.db
2|$W/trunc_half.db|-|log --cache $W/trunc_half.db
2|$W/trunc_half.db|-|cache list --cache $W/trunc_half.db
2|$W/trunc_page.db|-|--shape 64x64 --cache $W/trunc_page.db
2|$W/trunc_page.db|-|log --cache $W/trunc_page.db
2|$W/trunc_page.db|-|cache list --cache $W/trunc_page.db
2|$W/foreign.db|foreign|--shape 64x64 --cache $W/foreign.db
2|$W/foreign2.db|foreign|log --cache $W/foreign2.db
2|truncated|-|cache import $W/cut.stb --cache $db
2|truncated|-|cache import $W/cut.stb --cache $W/new.db
2|SHA-256|-|cache import $W/flip.stb --cache $db
2|not a softmax-tune bundle|-|cache import $db --cache $db
2|cannot read bundle '$W/none.stb'|-|cache import $W/none.stb --cache $db
2|needs one bundle file|-|cache import --cache $db
2|needs -o FILE|-|cache export --cache $db
2|cannot write bundle '$W/file/x.stb'|-|cache export --cache $db -o $W/file/x.stb
2|bad --gpu-model ''|-|cache list --gpu-model '' --cache $db
1|no cache entries match|-|cache export --gpu-model nope --cache $db -o $W/x.stb
!0|tpl_lua_syntax/row.cu:$syn:|-|emit --templates $W/tpl_lua_syntax --shape 32000x16384 --config $tcfg --cache $db
!0|tpl_lua_runtime/row.cu:$run:|-|emit --templates $W/tpl_lua_runtime --shape 32000x16384 --config $tcfg --cache $db
!0|tpl_lua_syntax/row.cu:$syn:|-|compile --templates $W/tpl_lua_syntax --shape 32000x16384 --arch sm_90 --config $tcfg -o $W/k.cubin
!0|tpl_space/space.lua:1:|-|space --templates $W/tpl_space --shape 32000x16384 --cache $db
!0|tpl_space/space.lua:1:|-|knobs --templates $W/tpl_space --cache $db
1|NVRTC|-|compile --templates $W/tpl_cuda --shape 32000x16384 --arch sm_90 --config $tcfg -o $W/k.cubin
EOT
echo "bad_input: $n cases, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ $fail -eq 0 ]
