#!/usr/bin/env bash
# install_test.sh BUILD SOURCE CUDA_INCLUDE CUDA_LIBDIR CUDA_BINDIR — cmake --install into a temporary prefix, then build the example
# program against it twice, through find_package and through pkg-config, and run both. On a GPU
# the installed softmax-tune first tunes the example's shape into a temporary cache; without
# one the runs must say SKIP (exit 77) and the builds alone are tested.
set -eu
build=$1 src=$2
# The CUDA paths come from CMake's FindCUDAToolkit: nvcc need not be on PATH, nor /usr/local/cuda exist.
cuda_inc=${3%%;*} cuda_lib=$4 cuda_bin=$5
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/example" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCUDAToolkit_ROOT="$(dirname "$cuda_bin")" >/dev/null
cmake --build "$prefix/ex" >/dev/null
echo "built with find_package(softmax_tune)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror "$src/tests/example/example.c" -o "$prefix/ex_pc" $(pkg-config --cflags --libs softmax_tune) \
  -I"$cuda_inc" -L"$cuda_lib" -lcudart_static -lrt -ldl -lpthread -lm
echo "built with pkg-config: $(pkg-config --libs softmax_tune)"
if "$prefix/bin/softmax-tune" --shape 1024x2048 --cache "$prefix/cache.db" --quiet >"$prefix/tune.log" 2>&1; then
  echo "tuned 1024x2048 f32 into $prefix/cache.db"
fi
status=0
for exe in "$prefix/ex/example" "$prefix/ex_pc"; do
  set +e
  "$exe" "$prefix/cache.db"
  rc=$?
  set -e
  if [ $rc -eq 77 ]; then echo "run of $(basename "$exe") skipped: no GPU here"
  elif [ $rc -ne 0 ]; then echo "FAIL: $exe exited $rc"; status=1; fi
done
exit $status
