#!/usr/bin/env bash
# report_screenshot.sh BINARY REPORT_CACHE — the report page as a browser draws it: headless
# Chromium (scripts/report_png.sh) takes a screenshot of the report of a cache filled by
# report_cache (the fake backend), kept as report_screenshot.png in the folder the test runs
# in, which must not be blank: many colours, ink on a fair share of it, and strongly coloured
# pixels (the chart's marks and bars; text alone has none). Chromium (Debian's `chromium`) is installed with
# apt-get where missing and possible (root, or sudo without a password); otherwise the test
# is skipped with the reason. python3 reads the PNG (tests/png_ink.py).
# Exit 0 passed, 1 failed, 77 skipped.
set -u
bin=$(realpath "$1")
fill=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
shot=$PWD/report_screenshot.png

browser() {
  local b
  for b in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$b" >/dev/null && { command -v "$b"; return 0; }
  done
  return 1
}

command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (it reads the screenshot)"; exit 77; }
if ! browser >/dev/null; then
  sudo=
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  if command -v apt-get >/dev/null && $sudo true 2>/dev/null; then
    echo "installing chromium with apt-get (a few minutes, once)"
    $sudo apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive timeout 800 $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1
  fi
  browser >/dev/null || { echo "SKIP: no Chromium, and apt-get could not install Debian's chromium here"; exit 77; }
fi

tmp=$(mktemp -d /tmp/st_shotXXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$fill" "$tmp/c.db" >"$tmp/fill.log" 2>&1 || { cat "$tmp/fill.log"; echo "FAIL: report_cache"; exit 1; }
SOFTMAX_TUNE=$bin bash "$here/../scripts/report_png.sh" "$tmp/c.db" "$shot" 1000x1600 || { echo "FAIL: report_png.sh"; exit 1; }

read -r w h colours ink sat < <(python3 "$here/png_ink.py" "$shot")
echo "screenshot $shot: ${w}x$h, $colours colours, ink on $ink of it, $sat strongly coloured pixels"
python3 -c 'import sys; c, i, s = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); sys.exit(not (c >= 100 and i >= 0.03 and s >= 2000))' \
  "$colours" "$ink" "$sat" || { echo "FAIL: the screenshot looks blank (want 100 colours, 3% ink, 2000 coloured pixels)"; exit 1; }
echo "report_screenshot: ok"
