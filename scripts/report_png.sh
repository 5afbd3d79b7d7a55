#!/usr/bin/env bash
# report_png.sh CACHE OUT.png [WIDTHxHEIGHT] [REPORT-OPTIONS...] — a screenshot of the report of
# a cache, as headless Chromium draws it: `softmax-tune report --cache CACHE REPORT-OPTIONS`
# (such as --run 12 or --shape 32000x16384), then the top WIDTHxHEIGHT pixels of the page
# (default 1000x1400) into OUT.png. The command is $SOFTMAX_TUNE, else build/softmax-tune, else
# softmax-tune on PATH; Chromium is Debian's chromium (apt-get install chromium) or Chrome.
# Exit 0 with OUT.png written, 1 when the report or Chromium fails, 2 on bad arguments.
set -u
[ $# -ge 2 ] || { echo "usage: report_png.sh CACHE OUT.png [WIDTHxHEIGHT] [REPORT-OPTIONS...]" >&2; exit 2; }
cache=$1 out=$2 size=1000x1400
shift 2
if [[ ${1:-} =~ ^[0-9]+x[0-9]+$ ]]; then size=$1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SOFTMAX_TUNE:-$root/build/softmax-tune}
[ -x "$bin" ] || bin=$(command -v softmax-tune) || { echo "report_png: no softmax-tune (build it, or set SOFTMAX_TUNE)" >&2; exit 1; }
browser=
for b in chromium chromium-browser google-chrome google-chrome-stable; do
  command -v "$b" >/dev/null && { browser=$(command -v "$b"); break; }
done
[ -n "$browser" ] || { echo "report_png: no Chromium (apt-get install chromium)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/st_pngXXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$bin" report --cache "$cache" -o "$tmp/report.html" "$@" >/dev/null || exit 1
rm -f "$out"
# no network, no profile of the user's, no GPU: the page draws the same anywhere
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --user-data-dir="$tmp/profile" --screenshot="$(realpath -m "$out")" \
  --window-size="${size/x/,}" "file://$tmp/report.html" >"$tmp/chromium.log" 2>&1
[ -s "$out" ] || { tail -5 "$tmp/chromium.log" >&2; echo "report_png: Chromium wrote no screenshot" >&2; exit 1; }
echo "report_png: $out, ${size} of the report of $cache"
