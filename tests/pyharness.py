"""pyharness.py — what the Python tests share: skip (exit 77) without torch or a CUDA GPU, the
binding and the verification rule on the path, expect() and the exit status; both host paths
(host_path() says which serves; finish(name, both=True) runs the test again on the ctypes
fallback, SOFTMAX_TUNE_NO_CPP=1, when the C++ ops served)."""

import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA GPU")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
failures = 0


def expect(cond, what):
    """Count a failure (and say what) unless cond."""
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def raises(fn, kind, what, needle=""):
    """fn() must raise kind, its message containing needle."""
    try:
        fn()
    except kind as e:
        print("  ok, refused:", str(e).splitlines()[0][:200])
        return expect(needle in str(e), "%s: the message lacks %r: %s" % (what, needle, e))
    except Exception as e:   # noqa: BLE001  (the wrong kind is a failure, not a crash)
        return expect(False, "%s raised %s, not %s: %s" % (what, type(e).__name__, kind.__name__, e))
    return expect(False, what + " was accepted")


def host_path(st):
    """Say which host path this run tests: the C++ ops (softmax_tune._C) or the ctypes fallback;
    a SKIP line for the C++ ops when they are not built."""
    forced = os.environ.get("SOFTMAX_TUNE_NO_CPP") == "1"
    expect(not (forced and st.cpp_ops), "SOFTMAX_TUNE_NO_CPP=1, yet the C++ ops serve")
    if st.cpp_ops:
        print("host path: the C++ ops (softmax_tune._C)", flush=True)
    elif forced:
        print("host path: the ctypes fallback (SOFTMAX_TUNE_NO_CPP=1)", flush=True)
    else:
        print("SKIP: the C++ ops (softmax_tune._C) are not built (python3 python/setup.py build_ext --inplace): "
              "this run tests the ctypes fallback only", flush=True)


def finish(name, both=False):
    """Exit with the status; both: after a run on the C++ ops, the same test on the ctypes fallback
    (with fusion.py's pass off)."""
    global failures
    if both and sys.modules["softmax_tune"].cpp_ops:
        print("%s: %d failures on the C++ ops; again on the ctypes fallback (SOFTMAX_TUNE_NO_CPP=1)" % (name, failures),
              flush=True)
        # the fallback's run also keeps the op under torch.compile (SOFTMAX_TUNE_FUSE=0: fusion.py off)
        env = dict(os.environ, SOFTMAX_TUNE_NO_CPP="1", SOFTMAX_TUNE_FUSE="0")
        rc = subprocess.call([sys.executable] + sys.argv, env=env)
        expect(rc == 0, "%s on the ctypes fallback: exit %d" % (name, rc))
    print("%s: %d failures" % (name, failures))
    sys.exit(1 if failures else 0)
