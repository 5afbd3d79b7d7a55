# testlib.sh NAME — sourced by the shell tests of the command: a scratch folder /tmp/st_NAMEXXXXXX
# (removed at exit) as the working directory, fail (the count), bad MSG (one more failure, said)
# and has OUT TEXT (OUT contains TEXT, else bad).
tmp=$(mktemp -d "/tmp/st_${1}XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
# the rule and the default table are what these tests ask of explain, not the kernel set a build
# may have beside the command (tests/kernel_set.sh tests that one)
export SOFTMAX_TUNE_KERNELS=${SOFTMAX_TUNE_KERNELS:-none}

bad() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

has() { [[ "$1" == *"$2"* ]] || bad "wanted '$2' in: $1"; }
