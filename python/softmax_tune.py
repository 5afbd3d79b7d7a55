"""softmax_tune — PyTorch binding of the softmax-tune runtime library, through ctypes.

    import torch, softmax_tune
    y = softmax_tune.softmax(x)            # x: a CUDA tensor, float32/float16/bfloat16
    y = softmax_tune.softmax(x, log=True)  # log_softmax

Softmax runs over the last dimension, on x's device (any CUDA device: a library context per
device, opened on first use, thread-safe) and torch's current stream there, with the kernel softmax-tune
tuned for this GPU and shape (`softmax-tune --shape ROWSxCOLS --dtype bf16`), or, for shapes
nobody tuned, the config of the nearest tuned problem (the cache's, or the default table's built
in for the GPU's arch) adapted to the shape and compiled on the first call, said once as a
warning (`softmax-tune explain --shape RxC` shows the choice; set SOFTMAX_TUNE_MISS=tune to tune
them on first use, or =error to refuse). Only the last dimension, contiguous tensors on a CUDA device and those
three dtypes are accepted; anything else raises ValueError (move the dim last with
x.transpose(dim, -1).contiguous() first).

The library is found at $SOFTMAX_TUNE_LIB, next to this file, in the install prefix
(<prefix>/lib when this file is in <prefix>/share/softmax-tune/python), or in ../build.
"""

import ctypes
import os
import threading

__all__ = ["softmax", "config", "library_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "libsoftmax_tune.so"
_DTYPES = {}                 # torch dtype -> st_dtype, filled on first use
_lock = threading.Lock()
_lib = None
_contexts = {}               # device index -> st_ctx*
_LOG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


def library_path():
    """Where the shared library is loaded from."""
    env = os.environ.get("SOFTMAX_TUNE_LIB")
    if env:
        return env
    candidates = [
        os.path.join(_HERE, _NAME),
        os.path.normpath(os.path.join(_HERE, "..", "..", "..", "lib", _NAME)),
        os.path.normpath(os.path.join(_HERE, "..", "..", "..", "lib64", _NAME)),
        os.path.normpath(os.path.join(_HERE, "..", "build", _NAME)),
    ]
    for path in candidates:
        if os.path.exists(path):
            return path
    raise OSError("softmax_tune: cannot find %s (looked at %s); set SOFTMAX_TUNE_LIB" % (_NAME, ", ".join(candidates)))


@_LOG
def _log(_ud, message):
    import warnings
    warnings.warn(message.decode(errors="replace"), stacklevel=3)


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())
        lib.st_open.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p]
        lib.st_open_ex.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
        lib.st_softmax.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        lib.st_config.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                  ctypes.c_char_p, ctypes.c_int]
        lib.st_error.argtypes = [ctypes.c_void_p]
        lib.st_error.restype = ctypes.c_char_p
        _lib = lib
    return _lib


class _Options(ctypes.Structure):
    _fields_ = [("miss", ctypes.c_int), ("log", _LOG), ("log_ud", ctypes.c_void_p)]


def _context(device):
    with _lock:
        ctx = _contexts.get(device)
        if ctx is None:
            lib = _load()
            handle = ctypes.c_void_p()
            opts = _Options(0, _log, None)
            rc = lib.st_open_ex(ctypes.byref(handle), device, None, ctypes.byref(opts))
            if rc != 0:
                raise RuntimeError("softmax_tune: " + lib.st_error(None).decode(errors="replace"))
            ctx = _contexts[device] = handle.value
        return ctx


def _device(x):
    """x's CUDA device ordinal."""
    import torch
    return x.device.index if x.device.index is not None else torch.cuda.current_device()


def _problem(x, dim):
    import torch
    if not _DTYPES:
        _DTYPES.update({torch.float32: 0, torch.float16: 1, torch.bfloat16: 2})
    if not isinstance(x, torch.Tensor) or not x.is_cuda:
        raise ValueError("softmax_tune: x must be a CUDA tensor, got %s" % (type(x).__name__ if not isinstance(x, torch.Tensor) else x.device))
    if x.dtype not in _DTYPES:
        raise ValueError("softmax_tune: dtype %s is not float32, float16 or bfloat16" % x.dtype)
    if x.dim() == 0 or dim not in (-1, x.dim() - 1):
        raise ValueError("softmax_tune: only the last dimension (dim=-1), got dim=%d of a %d-d tensor" % (dim, x.dim()))
    if not x.is_contiguous():
        raise ValueError("softmax_tune: x must be contiguous (call x.contiguous() first)")
    if x.numel() == 0:
        raise ValueError("softmax_tune: x is empty, shape %s" % (tuple(x.shape),))
    cols = x.shape[-1]
    return x.numel() // cols, cols, _DTYPES[x.dtype]


def softmax(x, dim=-1, log=False, out=None):
    """softmax (log_softmax with log=True) of a CUDA tensor over its last dimension."""
    import torch
    rows, cols, dtype = _problem(x, dim)
    if out is None:
        out = torch.empty_like(x)
    elif out.shape != x.shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
        raise ValueError("softmax_tune: out must be a contiguous tensor like x")
    ctx = _context(_device(x))
    stream = torch.cuda.current_stream(x.device).cuda_stream
    lib = _load()
    rc = lib.st_softmax(ctx, dtype, 1 if log else 0, x.data_ptr(), out.data_ptr(), rows, cols, stream)
    if rc != 0:
        raise RuntimeError("softmax_tune: " + lib.st_error(ctx).decode(errors="replace"))
    return out


def config(x, log=False):
    """The config string of the kernel softmax(x, log=log) uses."""
    rows, cols, dtype = _problem(x, -1)
    ctx = _context(_device(x))
    buf = ctypes.create_string_buffer(256)
    lib = _load()
    if lib.st_config(ctx, dtype, 1 if log else 0, rows, cols, buf, 256) != 0:
        raise RuntimeError("softmax_tune: " + lib.st_error(ctx).decode(errors="replace"))
    return buf.value.decode()
