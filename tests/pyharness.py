"""pyharness.py — what the Python tests share: skip (exit 77) without torch or a CUDA GPU, the
binding and the verification rule on the path, expect() and the exit status."""

import os
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


def finish(name):
    print("%s: %d failures" % (name, failures))
    sys.exit(1 if failures else 0)
