#!/usr/bin/env bash
# python_pkg.sh SOURCE LIBRARY BUILD — the Python package with no torch and no GPU: every Python
# file of the binding, tests, benchmarks and lab/ compiles; softmax_tune/_lib.py (torch-free) finds the
# library through SOFTMAX_TUNE_LIB and, installed by `cmake --install`, in its prefix, and loads it;
# `pip install python/` builds with no torch (where setuptools and wheel are installed: offline,
# --no-build-isolation) and installs the package and softmax_tune_check (setup.py leaves the C++
# ops out: no torch).
set -eu
src=$1 lib=$2 build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$src"/python/softmax_tune/*.py "$src"/python/softmax_tune_check.py "$src"/python/setup.py "$src"/tests/*.py \
         "$src"/bench/*.py "$src"/lab/*.py; do
  python3 -c "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)" "$f" "$tmp/c.pyc"
done
echo "compiled: the package, setup.py, tests/*.py, bench/*.py, lab/*.py"
# library_path() and loading, from a module file at $1 (no torch imported)
lookup() {
  python3 - "$1" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_lib", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
m._load()
assert "torch" not in sys.modules
print(m.library_path(), "backward" if m.has_backward() else "no-backward")
PY
}
got=$(SOFTMAX_TUNE_LIB=$lib lookup "$src/python/softmax_tune/_lib.py")
[ "${got% *}" = "$lib" ] || { echo "FAIL: SOFTMAX_TUNE_LIB=$lib gave $got"; exit 1; }
echo "SOFTMAX_TUNE_LIB: loaded $got"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
got=$(env -u SOFTMAX_TUNE_LIB bash -c "$(declare -f lookup); lookup '$tmp/prefix/share/softmax-tune/python/softmax_tune/_lib.py'")
[ "${got% *}" = "$tmp/prefix/lib/libsoftmax_tune.so" ] || { echo "FAIL: the installed package found $got"; exit 1; }
echo "installed: found and loaded $got"
for py in python3 /usr/bin/python3; do
  if $py -c "import setuptools, wheel" 2>/dev/null; then
    cp -r "$src/python" "$tmp/pkg" && rm -rf "$tmp/pkg/build" "$tmp/pkg"/*.egg-info
    $py -m pip install --no-build-isolation --no-deps --target "$tmp/site" "$tmp/pkg" -q 2>&1 | grep -v "as the 'root' user" || true
    for f in softmax_tune/__init__.py softmax_tune/ops.py softmax_tune/nn.py softmax_tune/_lib.py softmax_tune/_native.py \
             softmax_tune_check.py; do
      [ -f "$tmp/site/$f" ] || { echo "FAIL: pip install python/ left out $f"; exit 1; }
    done
    echo "pip install python/ (with $py, no torch): the package and softmax_tune_check installed"
    exit 0
  fi
done
echo "pip install python/ not tried: no python3 here has setuptools and wheel"
