#!/usr/bin/env bash
# report.sh BINARY REPORT_CACHE — `softmax-tune report` on caches filled by sweeps on the fake
# backend (tests/report_cache.c): the whole cache, filtered by shape, by dtype and op, one run,
# to stdout, to the default file, through $SOFTMAX_TUNE_CACHE, and a cache of schema version 1
# (release 0.1's); tests/check_report.py checks each page against its cache (it parses, an
# <svg> per run with a mark per timed trial, the winner and every reason named, nothing to
# fetch, no script). A report that fails (no such run, no cache, a newer schema) leaves no
# file, keeps an older page, and says why in one line.
# Exit 0 passed, 1 failed, 77 (skip, with the reason) without python3.
set -u
bin=$(realpath "$1")
fill=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (it checks the pages)"; exit 77; }
tmp=$(mktemp -d /tmp/st_reportXXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0 n=0

bad() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

"$fill" c.db >fill.log 2>&1 || { cat fill.log; echo "FAIL: report_cache c.db"; exit 1; }
"$fill" old.db --schema1 >fill.log 2>&1 || { cat fill.log; echo "FAIL: report_cache old.db --schema1"; exit 1; }

# page FILE CACHE CHECK-ARGS -- REPORT-ARGS... — the report must be written to FILE (status 0,
# "wrote FILE" unless FILE is stdout) and pass check_report.py FILE CACHE CHECK-ARGS.
page() {
  local file=$1 cache=$2 check=$3 out rc
  shift 4
  n=$((n + 1))
  if [ "$file" = - ]; then
    "$bin" report "$@" >stdout.html 2>err
    rc=$? file=stdout.html
  else
    out=$("$bin" report "$@" 2>err)
    rc=$?
    [[ $rc -ne 0 || "$out" == "wrote $file: "* ]] || bad "report $* said '$out', want 'wrote $file: ...'"
  fi
  if [ $rc -ne 0 ] || [ -s err ]; then bad "report $* -> status $rc, stderr: $(cat err)"; return; fi
  # shellcheck disable=SC2086
  python3 "$here/check_report.py" "$file" "$cache" $check || bad "report $* wrote a page that fails its check"
}

page all.html c.db "" -- --cache c.db -o all.html
page shape.html c.db "--where rows*cols=4096*4096" -- --cache c.db --shape 4096x4096 -o shape.html
page bf16.html c.db "--where dtype='bf16'AND(op='log_softmax')" -- --cache c.db --dtype bf16 --op log_softmax -o bf16.html
page run.html c.db "--where id=4 --single" -- --cache c.db --run 4 -o run.html
page f32.html c.db "--where dtype='f32'" -- --cache c.db --dtype f32 -o f32.html   # narrow bars, 1048576x128 first
page - c.db "" -- --cache c.db -o -
page softmax-tune-report.html c.db "" -- --cache c.db
SOFTMAX_TUNE_CACHE=$tmp/c.db page env.html c.db "" -- -o env.html
page old.html old.db "" -- --cache old.db -o old.html

# fails: status and first words of the message (stdout for "nothing there", else one line on
# stderr), then the report's arguments; no page is left, an older one is kept
cp c.db v99.db
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE meta SET v = 99"); c.commit()' v99.db
echo "an older page" >keep.html
while IFS='|' read -r want words args; do
  n=$((n + 1))
  eval "set -- $args"
  "$bin" report "$@" >out 2>err
  rc=$?
  msg=$(cat out err)
  [ $rc -eq "$want" ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && [[ "$msg" == *"$words"* ]] ||
    bad "report $args -> status $rc, output '$msg' (want $want and '$words')"
done <<EOF
1|no run 99 in|--cache c.db --run 99 -o keep.html
1|no runs match in|--cache c.db --shape 5x5 -o keep.html
1|no cache at|--cache none.db -o keep.html
2|has schema version 99|--cache v99.db -o keep.html
2|it is a directory|--cache c.db -o .
EOF
[ "$(cat keep.html)" = "an older page" ] || bad "a failed report replaced keep.html"
[ -z "$(ls | grep -E '\.tmp$')" ] || bad "a report left $(ls | grep -E '\.tmp$')"
[ ! -e none.db ] || bad "report made a cache at none.db"

echo "report: $n cases, $fail failed"
[ $fail -eq 0 ]
