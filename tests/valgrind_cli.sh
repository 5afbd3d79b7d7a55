#!/usr/bin/env bash
# valgrind_cli.sh BINARY — the command under valgrind (memcheck): `emit` and `compile` of one
# config (NVRTC inside), `space`, `knobs`, tuning (one shape, and lists: an attention line, a bad
# line) without a GPU, then `log`, `report` and `cache list|show|clear|export|import` on a missing
# cache, on an empty file
# and on a small cache made here
# (the binary's own schema, filled by SQL with two runs, their trials and two entries, whatever
# columns the schema has grown). Every case must exit with its usual status, and valgrind must
# report no error and no definite leak (tests/valgrind.supp is passed along when it exists; it
# says why each suppression it holds is there).
# Exit 0 clean, 1 otherwise, 77 (skip, with the reason) when valgrind or a way to run SQL
# (the sqlite3 command or python3) is missing.
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
# sql DB < SCRIPT; query DB SELECT (rows as a|b|c)
if command -v sqlite3 >/dev/null; then
  sql() { sqlite3 -bail "$1"; }
  query() { sqlite3 "$1" "$2"; }
elif command -v python3 >/dev/null; then
  sql() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.stdin.read()); c.commit()' "$1"; }
  query() { python3 -c 'import sqlite3, sys; [print("|".join(map(str, r))) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]' "$1" "$2"; }
else echo "SKIP: neither the sqlite3 command nor python3 is installed (needed to fill a test cache)"; exit 77; fi

tmp=$(mktemp -d /tmp/st_valgrindXXXXXX)
trap 'rm -rf "$tmp"' EXIT
# --vex-guest-chase=no: the JIT's blocks end at each jump, which translates the run-once code of
# NVRTC's start (most of a case's time) faster: 2.9 -> 2.3 s a case, compile 24 -> 19 s
# (valgrind 3.19, 2026-11-29); what memcheck checks is the same
vg=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
    --num-callers=40 --vex-guest-chase=no --log-file="$tmp/vg.log")
[ -f "$here/valgrind.supp" ] && vg+=(--suppressions="$here/valgrind.supp")
fail=0 n=0

# check WANT ARGS... — run the command under valgrind; it must exit WANT with valgrind clean.
check() {
  local want=$1 rc t0 t1
  shift
  n=$((n + 1))
  t0=$(date +%s%N)
  "${vg[@]}" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  t1=$(date +%s%N)
  if [ $rc -eq 99 ] || grep -q 'ERROR SUMMARY: [1-9]' "$tmp/vg.log"; then
    # again with the origins of uninitialised values (a third slower, so only here)
    "${vg[@]}" --track-origins=yes "$bin" "$@" >/dev/null 2>&1
    echo "FAIL: softmax-tune $* -> valgrind found errors:"
    grep -v '^==[0-9]*== *$' "$tmp/vg.log" | tail -n +5
    fail=$((fail + 1))
  elif [ $rc -ne "$want" ]; then
    echo "FAIL: softmax-tune $* -> status $rc, want $want; stdout: $(head -c 400 "$tmp/out"); stderr: $(head -c 400 "$tmp/err")"
    grep -i 'fatal\|valgrind:' "$tmp/vg.log"
    fail=$((fail + 1))
  else
    printf 'ok %6.1f s  softmax-tune %s\n' "$(((t1 - t0) / 1000000))e-3" "$*"
  fi
}

# insert TABLE COLUMN=SQL-VALUE... — an INSERT of one row of TABLE of the database $db: the
# values given, and a zero of its declared type for every other column, so that the fill
# outlives new columns of the schema (cache/cache.c); a value for a column that is gone is an
# error.
insert() {
  local table=$1 kv name type names=() vals=()
  local -A v=()
  shift
  for kv in "$@"; do v[${kv%%=*}]=${kv#*=}; done
  while IFS='|' read -r name type; do
    names+=("$name")
    if [ -n "${v[$name]+set}" ]; then
      vals+=("${v[$name]}")
      unset "v[$name]"
    else
      case ${type^^} in
        *INT*) vals+=(0) ;;
        *REAL* | *FLOA* | *DOUB*) vals+=(0.0) ;;
        *BLOB*) vals+=("X'00'") ;;
        *) vals+=("''") ;;
      esac
    fi
  done < <(query "$db" "SELECT name, type FROM pragma_table_info('$table')")
  if [ ${#v[@]} -gt 0 ] || [ ${#names[@]} -eq 0 ]; then
    echo "no table $table or no column ${!v[*]} in it" >&2
    return 1
  fi
  echo "INSERT INTO $table($(IFS=,; echo "${names[*]}")) VALUES($(IFS=,; echo "${vals[*]}"));"
}

# one config of a shape, from the space (not hard-coded: the knobs change)
shape=4096x16384
cfg=$("$bin" space --shape $shape | head -n 1)
[ -n "$cfg" ] || { echo "FAIL: softmax-tune space --shape $shape gave no config"; exit 1; }

check 0 emit --shape $shape --config "$cfg"
check 0 emit --shape 7x1000 --dtype bf16 --op log_softmax --arch sm_80 --config "$("$bin" space --shape 7x1000 --dtype bf16 --op log_softmax --arch sm_80 | tail -n 1)"
check 0 compile --shape $shape --config "$cfg" --arch sm_90 -o "$tmp/k.cubin" --log
[ -s "$tmp/k.cubin" ] || { echo "FAIL: compile wrote no cubin"; fail=$((fail + 1)); }
check 0 space --shape $shape
check 0 knobs

# a missing cache and an empty file: said on stdout, status 1
check 1 log --cache "$tmp/none.db"
check 1 cache list --cache "$tmp/none.db"
: >"$tmp/empty.db"
check 1 log --cache "$tmp/empty.db"
check 1 cache list --cache "$tmp/empty.db"
check 1 cache show --cache "$tmp/empty.db"

# tuning without a GPU stops at the driver, before it makes a cache (not where a driver is
# installed: a real libcuda is not valgrind-clean, and not ours)
db=$tmp/cache.db
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  check 2 --shape $shape --cache "$db" --quiet
  [ -e "$db" ] && { echo "FAIL: tuning without a GPU left a cache at $db"; fail=$((fail + 1)); rm -f "$db"; }
  printf '# a list\n64x64 bf16\n128x4096 f32 log_softmax\n2x4x8x3000 bf16 attention_softmax mask=causal bias=alibi\n' >"$tmp/list.txt"
  check 2 --gpu all --shape $shape,64x64 --dtype f32,bf16 --cache "$db" --quiet
  check 2 --gpu 0,1 --shapes "$tmp/list.txt" --cache "$db" --quiet
  printf '64x64 bf16\n2x4x8x64 bf16 attention_softmax mask=window\n' >"$tmp/bad.txt"   # a bad line: refused first
  check 2 --shapes "$tmp/bad.txt" --cache "$db" --quiet
  [ -e "$db" ] && { echo "FAIL: tuning a list without a GPU left a cache at $db"; fail=$((fail + 1)); rm -f "$db"; }
fi

# a small cache: the schema is the binary's own (cache/cache.c keeps it in one string, from
# `CREATE TABLE IF NOT EXISTS meta(` on, with its version row); SQL fills it
schema=$(strings -n 32 "$bin" | grep -m 1 '^CREATE TABLE IF NOT EXISTS meta(')
[ -n "$schema" ] || { echo "FAIL: no schema (CREATE TABLE IF NOT EXISTS meta(...) found in $bin"; exit 1; }
printf '%s\n' "$schema" | sql "$db" || { echo "FAIL: the schema from $bin does not run"; exit 1; }
sha=$(sha256sum "$tmp/k.cubin" | cut -d' ' -f1)
hex=$(od -An -v -tx1 "$tmp/k.cubin" | tr -d ' \n')
tpl=$(printf templates | sha256sum | cut -d' ' -f1)
key=("gpu='NVIDIA H100 80GB HBM3'" arch=90 sms=132 driver=12040 nvrtc=12060 "templates='$tpl'")
runs=("started='2025-01-01 10:00:00Z'" seconds=5.5)
fill() {
  set -e
  echo "BEGIN;"
  insert runs id=1 "${key[@]}" "${runs[@]}" "dtype='f32'" "op='softmax'" rows=4096 cols=16384 "status='done'" \
    configs=3 verified=1 pruned=1 failed=1 "winner='$cfg'" winner_us=71.2 copy_us=68.9 frac=0.968
  insert runs id=2 "${key[@]}" "${runs[@]}" "dtype='bf16'" "op='log_softmax'" rows=7 cols=1000 "status='failed'" \
    configs=1 failed=1 winner=NULL copy_us=3.1
  insert trials run=1 idx=0 "config='$cfg'" "status='ok'" reason=NULL regs=40 smem=64 blocks_sm=8 occupancy=1.0 \
    compile_ms=310.5 us=71.2 gbps=3770.1 frac=0.968 max_err=1.2e-7 finalist=1
  insert trials run=1 idx=1 "config='threads=32,\"quoted\",x'" "status='pruned'" \
    "reason='uses 96 bytes of local memory (spills)'" regs=255 local_bytes=96 blocks_sm=1 occupancy=0.03
  insert trials run=1 idx=2 "config='threads=1024'" "status='failed'" \
    "reason='max error 3.5e-2 at row 7 col 12 (ref 0.5, got \"nan\")'" regs=32 blocks_sm=2 us=80 max_err=0.035
  insert trials run=2 idx=0 "config='threads=64'" "status='failed'" "reason='launch failed: too many resources requested'"
  # the second entry's checksum is wrong: listed, never handed out
  for e in "dtype='f32' rows=4096 cols=16384 sha256='$sha'" "dtype='f16' rows=1024 cols=2048 sha256='$(printf 'bad%.0s' {1..21})b'"; do
    # shellcheck disable=SC2086
    insert entries "${key[@]}" $e "op='softmax'" "config='$cfg'" "kernel='softmax_row'" threads=256 rows_per_block=1 \
      blocks_per_row=1 "cubin=X'$hex'" us=71.2 gbps=3770.1 frac=0.968 copy_us=68.9 run=1 "created='2025-01-01 10:00:05Z'"
  done
  echo "COMMIT;"
}
(fill) >"$tmp/fill.sql" 2>"$tmp/sql.log"
rc=$?
[ $rc -eq 0 ] && { sql "$db" <"$tmp/fill.sql" >>"$tmp/sql.log" 2>&1; rc=$?; }
if [ $rc -ne 0 ]; then
  echo "FAIL: could not fill the test cache:"
  cat "$tmp/sql.log"
  exit 1
fi

check 0 log --cache "$db"
check 0 log --run 2 --cache "$db"
check 0 log --json --cache "$db"
check 0 log --csv --run 1 --cache "$db"
check 0 log --shape 7x1000 --dtype bf16 --op log_softmax --cache "$db"
check 1 log --run 99 --cache "$db"
check 0 report --cache "$db" -o "$tmp/report.html"
check 0 report --run 1 --cache "$db" -o -
check 1 report --run 99 --cache "$db" -o "$tmp/report.html"
check 0 cache list --cache "$db"
check 0 cache show --cache "$db"
check 0 cache list --shape 4096x16384 --dtype f32 --op softmax --cache "$db"
check 0 cache export --cache "$db" -o "$tmp/all.stb"   # a bundle carries no cubin: the spoiled one is not read
check 0 cache export --shape 4096x16384 --cache "$db" -o "$tmp/b.stb"
check 0 cache import "$tmp/b.stb" --cache "$tmp/other.db"
check 0 cache import "$tmp/b.stb" --cache "$db"
head -c 3000 "$tmp/b.stb" >"$tmp/cut.stb"
check 2 cache import "$tmp/cut.stb" --cache "$tmp/other.db"
check 0 cache clear --shape 1024x2048 --cache "$db"
check 0 cache list --cache "$db"
check 0 cache clear --cache "$db"

echo "valgrind_cli: $n cases, $fail failed"
[ $fail -eq 0 ]
