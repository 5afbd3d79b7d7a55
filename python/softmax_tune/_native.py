"""_native.py — the C++ ops, softmax_tune._C (csrc/ops.cpp; built by `pip install --no-build-isolation
./python` where torch, its headers and a C++ compiler are; see python/setup.py): C is that module,
or None where it is not built, does not load, or SOFTMAX_TUNE_NO_CPP=1; then ops.py defines the
same ops in Python and the calls go through ctypes (_lib.py), as before the C++ ops.

Loading it registers torch.ops.softmax_tune.softmax, .softmax_backward and .softmax_out (with
their CUDA kernels and autograd); their fake kernels, for torch.compile, are registered here. The
C++ side opens no library itself: on its first call on a device it asks _open (below) for _lib's
context there and the entry points of the library _lib loaded, so both paths share one library,
one context per device, one list of untuned problems and one log callback.
"""

import ctypes
import importlib
import os
import warnings

import torch

from . import _lib, fusion


def _load():
    if os.environ.get("SOFTMAX_TUNE_NO_CPP") == "1":
        return None
    name = __package__ + "._C"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        return None                # not built: the ctypes path, silently
    except ImportError as e:      # built, but not for this torch (an undefined symbol, say)
        warnings.warn("softmax_tune: the C++ ops did not load (%s); the ctypes path serves (rebuild: pip install "
                      "--no-build-isolation ./python)" % e)
        return None


C = _load()


def _entry(lib, name):
    """The address of the library's function `name`, 0 where the library lacks it."""
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value if hasattr(lib, name) else 0


def _open(device):
    """For the C++ ops' first call on a CUDA device: (st_ctx, st_softmax, st_softmax_backward, st_error,
    the error a gradient gives without st_softmax_backward, st_cross_entropy, st_attention_softmax,
    st_attention_softmax_backward, st_cross_entropy_scale), addresses as ints (0: the library lacks it;
    without st_cross_entropy, or with one older than this package's, cross_entropy.py keeps its
    ctypes path, whose error says so; without the attention pair attention.py: the ctypes path then
    gives its error; without st_cross_entropy_scale, cross-entropy's autograd stays Python's)."""
    ctx = _lib.context(device)
    lib = _lib._load()
    attn = hasattr(lib, "st_attention_softmax_backward")   # as _lib: the backward marks the attention kernels
    return (ctx, _entry(lib, "st_softmax"), _entry(lib, "st_softmax_backward"), _entry(lib, "st_error"),
            _lib.no_backward(), _entry(lib, "st_cross_entropy") if _lib.ce_current(lib) else 0,
            _entry(lib, "st_attention_softmax") if attn else 0,
            _entry(lib, "st_attention_softmax_backward"),
            _entry(lib, "st_cross_entropy_scale") if _lib.ce_current(lib) else 0)


if C is not None:
    C._set_opener(_open)

    @torch.library.register_fake("softmax_tune::softmax")
    def _(x, log):
        fusion.arm()   # Inductor's pre-grad pass, set at the first trace (fusion.py)
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    @torch.library.register_fake("softmax_tune::softmax_backward")
    def _(y, dy, log):
        return torch.empty(y.shape, dtype=y.dtype, device=y.device)

    @torch.library.register_fake("softmax_tune::softmax_out")
    def _(x, log, out):
        return None
