#!/usr/bin/env bash
# carry.sh [BUILD] — pack what a GPU machine without Lua or a package registry needs into
# .carry/ (git-ignored): the command, the test programs, the shared library with the Lua and
# SQLite libraries it links, and the example program. bench/device_run.sh runs from there.
# SET=FILE also packs a kernel set built here from this tree (`softmax-tune kernels --build`, or
# a CI build's softmax_tune.kernels), gzipped to a quarter of its size: bench/kernel_set_run.sh
# build unpacks it there instead of compiling the set (about two minutes of device time). Its
# templates' hash is checked; the untuned rules (templates/untuned.lua) are not in that hash, so
# a set made before a change of them passes the check with the old rules' kernels.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
if [ -n "${SET:-}" ]; then   # a set of this build's templates only: the runtime would not use another
  [ -f "$SET" ] || { echo "carry.sh: no kernel set '$SET'" >&2; exit 2; }
  want=$("$build/softmax-tune" explain --arch sm_90 --shape 16x16 | awk '/^templates/ {print $2}')
  have=$(SOFTMAX_TUNE_KERNELS=$SET "$build/softmax-tune" kernels | head -1 | grep -o 'templates [0-9a-f]*' | cut -d' ' -f2)
  [ -n "$want" ] && [ "$have" = "$want" ] ||
    { echo "carry.sh: the set '$SET' was made by templates ${have:-?}, this build's are ${want:-?}" >&2; exit 2; }
fi
rm -rf .carry && mkdir -p .carry/lib
cp "$build/softmax-tune" "$build/tests/test_gpu" "$build/tests/test_runtime" "$build/tests/test_verify" \
   "$build/tests/test_verify_bw" "$build/tests/test_verify_ce" "$build/tests/test_verify_attn" "$build/tests/test_verify_attn_bw" "$build/tests/test_multigpu" "$build/tests/test_arch_ptx" .carry/
cp -L "$build/libsoftmax_tune.so" .carry/lib/
ln -s libsoftmax_tune.so .carry/lib/libsoftmax_tune.so.0
cp -L /usr/lib/x86_64-linux-gnu/liblua5.4.so.0 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 .carry/lib/
cmake --install "$build" --prefix "$PWD/.carry/prefix" >/dev/null
cmake -S tests/example -B .carry/exbuild -DCMAKE_PREFIX_PATH="$PWD/.carry/prefix" >/dev/null
cmake --build .carry/exbuild >/dev/null
cp .carry/exbuild/example .carry/ && rm -rf .carry/exbuild .carry/prefix
if [ -n "${SET:-}" ]; then gzip -c "$SET" >.carry/softmax_tune.kernels.gz; fi
# the tree measured, for the tables' headers (benchlib.tree): the GPU machines get no .git
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo +changes)" >.carry/TREE
du -sh .carry
