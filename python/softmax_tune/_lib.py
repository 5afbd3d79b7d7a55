"""_lib.py — the runtime library (libsoftmax_tune.so) through ctypes: where it is found, one
st_ctx per CUDA device (opened on first use, thread-safe), and the three calls the binding
makes (st_softmax, st_softmax_backward, st_config[_backward]) on raw device pointers. No torch here.

The library is found at $SOFTMAX_TUNE_LIB, next to this package, in the install prefix
(<prefix>/lib when this package is <prefix>/share/softmax-tune/python/softmax_tune), in the
source tree's build/ (python/../build), else by the dynamic loader (LD_LIBRARY_PATH, ldconfig:
after `cmake --install build --prefix /usr/local`, for a `pip install`ed package).
"""

import ctypes
import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "libsoftmax_tune.so"
_lock = threading.Lock()
_lib = None
_contexts = {}               # device index -> st_ctx*
_LOG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_I64, _PTR, _INT = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int


def library_path():
    """Where the shared library is loaded from (a bare name: the dynamic loader's search)."""
    env = os.environ.get("SOFTMAX_TUNE_LIB")
    if env:
        return env
    prefix = os.path.join(_HERE, "..", "..", "..", "..")
    candidates = [os.path.normpath(p) for p in (
        os.path.join(_HERE, _NAME),
        os.path.join(prefix, "lib", _NAME),
        os.path.join(prefix, "lib64", _NAME),
        os.path.join(_HERE, "..", "..", "build", _NAME))]
    for path in candidates:
        if os.path.exists(path):
            return path
    return _NAME + ".0"


def _load():
    global _lib
    if _lib is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError("softmax_tune: cannot load %s (%s); set SOFTMAX_TUNE_LIB to libsoftmax_tune.so" % (path, e))
        lib.st_open_ex.argtypes = [ctypes.POINTER(_PTR), _INT, ctypes.c_char_p, _PTR]
        lib.st_softmax.argtypes = [_PTR, _INT, _INT, _PTR, _PTR, _I64, _I64, _PTR]
        lib.st_config.argtypes = [_PTR, _INT, _INT, _I64, _I64, ctypes.c_char_p, _INT]
        lib.st_error.argtypes = [_PTR]
        lib.st_error.restype = ctypes.c_char_p
        if hasattr(lib, "st_softmax_backward"):   # absent from libraries built before it
            lib.st_softmax_backward.argtypes = [_PTR, _INT, _INT, _PTR, _PTR, _PTR, _I64, _I64, _PTR]
            lib.st_config_backward.argtypes = lib.st_config.argtypes
        _lib = lib
    return _lib


@_LOG
def _log(_ud, message):
    import warnings
    warnings.warn(message.decode(errors="replace"), stacklevel=3)


class _Options(ctypes.Structure):
    _fields_ = [("miss", _INT), ("log", _LOG), ("log_ud", _PTR)]


def context(device):
    """The st_ctx* of CUDA device `device` (an ordinal), opened on first use."""
    ctx = _contexts.get(device)   # opened ones need no lock: an entry is set once, whole
    if ctx is not None:
        return ctx
    with _lock:
        ctx = _contexts.get(device)
        if ctx is None:
            lib = _load()
            handle = _PTR()
            opts = _Options(0, _log, None)
            if lib.st_open_ex(ctypes.byref(handle), device, None, ctypes.byref(opts)) != 0:
                raise RuntimeError("softmax_tune: " + lib.st_error(None).decode(errors="replace"))
            ctx = _contexts[device] = handle.value
        return ctx


def _check(rc, ctx):
    if rc != 0:
        raise RuntimeError("softmax_tune: " + _load().st_error(ctx).decode(errors="replace"))


def has_backward():
    """Whether the loaded library has st_softmax_backward."""
    return hasattr(_load(), "st_softmax_backward")


def forward(device, dtype, op, src, dst, rows, cols, stream):
    """st_softmax: dst = softmax (op 0) or log_softmax (op 1) of src, rows x cols, on stream."""
    ctx = context(device)
    _check(_load().st_softmax(ctx, dtype, op, src, dst, rows, cols, stream), ctx)


def _backward_lib():
    lib = _load()
    if not hasattr(lib, "st_softmax_backward"):
        raise RuntimeError("softmax_tune: the library at %s has no st_softmax_backward (built before the backward "
                           "kernels): rebuild it to take gradients through softmax_tune" % library_path())
    return lib


def backward(device, dtype, op, y, dy, dx, rows, cols, stream):
    """st_softmax_backward: dx from the forward's output y and its gradient dy (dx may be dy)."""
    lib = _backward_lib()
    ctx = context(device)
    _check(lib.st_softmax_backward(ctx, dtype, op, y, dy, dx, rows, cols, stream), ctx)


def config(device, dtype, op, rows, cols, backward=False):
    """The config string of the kernel st_softmax (st_softmax_backward) uses for this problem."""
    fn = _backward_lib().st_config_backward if backward else _load().st_config
    ctx = context(device)
    buf = ctypes.create_string_buffer(256)
    _check(fn(ctx, dtype, op, rows, cols, buf, 256), ctx)
    return buf.value.decode()
