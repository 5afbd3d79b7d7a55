"""setup.py — what pyproject.toml cannot say: the optional C++ ops, softmax_tune._C
(softmax_tune/csrc/ops.cpp), built against the torch installed where the build runs:

    pip install --no-build-isolation ./python     # torch visible to the build: the C++ ops too
    pip install ./python                          # an isolated build (no torch): the package alone
    python3 python/setup.py build_ext --inplace   # in a checkout: softmax_tune/_C*.so next to the sources

Built when torch (with its C++ headers), CUDA's headers (CUDA_HOME) and include/softmax_tune.h
($SOFTMAX_TUNE_INCLUDE, else the source tree's include/, else the install prefix's: this file is
P/share/softmax-tune/python/setup.py after `cmake --install`) are there; else, or when the compile
fails, the package installs without them and runs through ctypes (a note says why).
SOFTMAX_TUNE_CPP=1 makes a failure an error; SOFTMAX_TUNE_NO_CPP=1 skips them. The extension
does not link libsoftmax_tune.so: it calls the library the package loads (softmax_tune/_lib.py).
"""

import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIRED = os.environ.get("SOFTMAX_TUNE_CPP") == "1"


def note(why):
    print("softmax_tune: the C++ ops are not built (%s); the package runs through ctypes" % why, file=sys.stderr)
    if REQUIRED:
        raise SystemExit("softmax_tune: SOFTMAX_TUNE_CPP=1 and the C++ ops cannot be built: %s" % why)
    return {}


def compiler():
    """The C++ compiler setuptools will call: $CXX, else Python's configured one."""
    import shlex
    import sysconfig
    return shlex.split(os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "c++")[0]


def loaded_libstdcxx():
    """The libstdc++ this process loaded (torch's, which the module will run beside), or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libstdc++.so" in line}
    except OSError:
        return None
    paths = [p for p in paths if os.path.isabs(p) and os.path.exists(p)]
    return paths[0] if len(paths) == 1 else None


def shared_libstdcxx():
    """Link arguments that bind libstdc++ as a shared library. A toolchain that links it statically
    (the GPU machines' /opt/gcc/bin/g++ wrapper does) puts a second copy beside the one torch
    loaded: its locale facets then index the other copy's tables, and the first error message that
    formats a number crashes the process (bench/cpp_probe.py, docs/design/python-host.md). Naming the libstdc++
    that torch runs with (else the compiler's libstdc++.so) first makes the linker take every
    symbol from it; the static archive the driver adds later then has nothing left to give."""
    import subprocess
    import torch  # noqa: F401  (its libstdc++ mapped into this process)
    lib = loaded_libstdcxx()
    if lib is None:
        try:
            lib = subprocess.run([compiler(), "-print-file-name=libstdc++.so"], capture_output=True, text=True,
                                 timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return []
    return ["-Wl,--no-as-needed", lib, "-Wl,--as-needed"] if os.path.isabs(lib) and os.path.exists(lib) else []


def static_libstdcxx(path):
    """Why the built module at path cannot be used (it does not load libstdc++.so.6, so it carries a
    copy of its own), or None; None also where readelf is not there to tell."""
    import subprocess
    try:
        dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if "libstdc++.so" in dyn:
        return None
    return ("%s links libstdc++ statically (compiler %s): a second libstdc++ beside torch's crashes on the first "
            "error; set CXX to a compiler that links it as a shared library" % (os.path.basename(path), compiler()))


def cpp_ops():
    """setup()'s ext_modules and cmdclass for softmax_tune._C, or {} where it cannot be built."""
    if os.environ.get("SOFTMAX_TUNE_NO_CPP") == "1":
        return {}
    try:
        from torch.utils import cpp_extension
    except ImportError:
        return note("no torch here: an isolated build? pip install --no-build-isolation ./python")
    dirs = [os.environ.get("SOFTMAX_TUNE_INCLUDE") or os.path.join(HERE, "..", "include"),
            os.path.join(HERE, "..", "..", "..", "include")]
    found = [d for d in dirs if os.path.exists(os.path.join(d, "softmax_tune.h"))]
    if not found:
        return note("no softmax_tune.h in %s (set SOFTMAX_TUNE_INCLUDE)" % " or ".join(map(os.path.normpath, dirs)))
    include = os.path.normpath(found[0])
    if cpp_extension.CUDA_HOME is None:
        return note("no CUDA toolkit headers (set CUDA_HOME)")

    class Build(cpp_extension.BuildExtension):
        def build_extensions(self):
            try:
                super().build_extensions()
            except Exception as e:   # noqa: BLE001  (no compiler, no torch headers: the ctypes path)
                return note("%s: %s" % (type(e).__name__, e))
            for path in self.get_outputs():
                why = static_libstdcxx(path)
                if why:
                    os.remove(path)
                    note(why)

    ext = cpp_extension.CUDAExtension("softmax_tune._C", ["softmax_tune/csrc/ops.cpp"], include_dirs=[include],
                                      extra_compile_args={"cxx": ["-O2"]}, extra_link_args=shared_libstdcxx(),
                                      optional=not REQUIRED)
    return {"ext_modules": [ext], "cmdclass": {"build_ext": Build.with_options(use_ninja=False)}}


os.chdir(HERE)   # the sources are named relative to python/, wherever this runs from
setup(**cpp_ops())
