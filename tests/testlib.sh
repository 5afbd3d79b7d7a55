# testlib.sh NAME — sourced by the shell tests of the command: a scratch folder /tmp/st_NAMEXXXXXX
# (removed at exit) as the working directory, fail (the count), bad MSG (one more failure, said)
# and has OUT TEXT (OUT contains TEXT, else bad).
tmp=$(mktemp -d "/tmp/st_${1}XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0

bad() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

has() { [[ "$1" == *"$2"* ]] || bad "wanted '$2' in: $1"; }
