"""_lib.py — the runtime library (libsoftmax_tune.so) through ctypes: where it is found, one
st_ctx per CUDA device (opened on first use, thread-safe), the calls the binding makes
(st_softmax, st_softmax_backward, st_config[_backward], st_cross_entropy,
st_attention_softmax[_backward]) on raw device pointers, and the list of problems run without a
tuned kernel (st_untuned, st_untuned_attention) with its one warning. No torch here.

The library is found at $SOFTMAX_TUNE_LIB, next to this package, in the install prefix
(<prefix>/lib when this package is <prefix>/share/softmax-tune/python/softmax_tune), in the
source tree's build/ (python/../build), else by the dynamic loader (LD_LIBRARY_PATH, ldconfig:
after `cmake --install build --prefix /usr/local`, for a `pip install`ed package).
"""

import atexit
import ctypes
import os
import threading
import warnings

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
        if hasattr(lib, "st_untuned"):   # absent from libraries built before it
            lib.st_untuned.argtypes = [_PTR, ctypes.POINTER(_Problem), _INT]
        if hasattr(lib, "st_untuned_attention"):   # likewise
            lib.st_untuned_attention.argtypes = [_PTR, ctypes.POINTER(_AttnProblem), _INT]
        if hasattr(lib, "st_softmax_backward"):   # absent from libraries built before it
            lib.st_softmax_backward.argtypes = [_PTR, _INT, _INT, _PTR, _PTR, _PTR, _I64, _I64, _PTR]
            lib.st_config_backward.argtypes = lib.st_config.argtypes
        if hasattr(lib, "st_cross_entropy"):   # absent from libraries built before it
            lib.st_cross_entropy.argtypes = [_PTR, _INT, _PTR, _PTR, _INT, _PTR, _PTR, _PTR, _I64, _I64,
                                             ctypes.POINTER(CeOptions), _PTR]
            lib.st_config_cross_entropy.argtypes = [_PTR, _INT, _INT, _I64, _I64, ctypes.c_char_p, _INT]
        if hasattr(lib, "st_vocab_parallel_step"):   # likewise
            lib.st_vocab_parallel_step.argtypes = [_PTR, _INT, _INT, ctypes.POINTER(VocabArgs), _PTR]
        if hasattr(lib, "st_attention_softmax_backward"):   # absent from libraries built before it
            opts = ctypes.POINTER(AttnOptions)
            lib.st_attention_softmax.argtypes = [_PTR, _INT, opts, _PTR, _PTR, _I64, _I64, _I64, _I64, _PTR]
            lib.st_attention_softmax_backward.argtypes = [_PTR, _INT, opts, _PTR, _PTR, _PTR, _PTR, _I64, _I64, _I64,
                                                          _I64, _PTR]
            lib.st_config_attention.argtypes = [_PTR, _INT, opts, _I64, _I64, _I64, _I64, ctypes.c_char_p, _INT]
            lib.st_config_attention_backward.argtypes = lib.st_config_attention.argtypes
        _lib = lib
    return _lib


class UntunedWarning(UserWarning):
    """The one warning a process gets, at exit, when it ran problems without a tuned kernel."""


class _Problem(ctypes.Structure):   # st_problem
    _fields_ = [("rows", _I64), ("cols", _I64), ("dtype", _INT), ("op", _INT), ("backward", _INT), ("kind", _INT)]


class _AttnProblem(ctypes.Structure):   # st_attn_problem
    _fields_ = [(name, _I64) for name in ("B", "H", "Q", "K", "causal_offset", "window")] + [
        ("scale", ctypes.c_float), ("softcap", ctypes.c_float), ("dtype", _INT), ("backward", _INT), ("mask", _INT),
        ("bias", _INT)]


DTYPE_NAMES = ("f32", "f16", "bf16")        # st_dtype -> the --shapes word
OP_NAMES = ("softmax", "log_softmax")       # st_op; the backward's with "_backward"
KIND_NAMES = (None, "cross_entropy", "cross_entropy_loss")   # st_kind: the cross-entropy ops
MASK_NAMES = ("none", "causal", "window", "causal_window", "padding", "padding_causal", "padding_window",
              "padding_causal_window")      # st_attn_problem.mask (causal 1, window 2, padding 4) -> mask=
BIAS_NAMES = ("none", "alibi", "tensor")    # st_attn_problem.bias -> bias=
_PER_SHAPE = ("softmax-tune: no tuned kernel for ", " uses the kernel tuned for ")


def _per_shape(text):
    """What a per-problem message (an untuned shape, or a kernel of other rows) still says
    without SOFTMAX_TUNE_WARN=each: the note after an untuned one (a stale table), else None."""
    if not any(k in text for k in _PER_SHAPE):
        return text
    if os.environ.get("SOFTMAX_TUNE_WARN") == "each":
        return text
    note = text.partition("(tune with: ")[2].partition("); ")[2]
    return "softmax-tune: " + note if note else None


@_LOG
def _log(_ud, message):
    text = _per_shape(message.decode(errors="replace"))
    if text:
        warnings.warn(text, stacklevel=3)


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
            if len(_contexts) == 1:
                atexit.register(_at_exit)
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


def _needs(symbol, kernels, then):
    """The library, which must have symbol (absent from those built before kernels)."""
    lib = _load()
    if not hasattr(lib, symbol):
        raise RuntimeError(missing(symbol, kernels, then))
    return lib


def missing(symbol, kernels, then):
    """The error for a library without symbol (built before kernels)."""
    return "softmax_tune: the library at %s has no %s (built before %s): %s" % (library_path(), symbol, kernels, then)


def no_backward():
    """The error a gradient gives with a library that lacks st_softmax_backward."""
    return missing("st_softmax_backward", "the backward kernels", "rebuild it to take gradients through softmax_tune")


def _backward_lib():
    return _needs("st_softmax_backward", "the backward kernels", "rebuild it to take gradients through softmax_tune")


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


class CeOptions(ctypes.Structure):   # st_ce_options
    _fields_ = [("ignore_index", _I64), ("reduction", _INT), ("label_smoothing", ctypes.c_float),
                ("z_loss", ctypes.c_float), ("softcap", ctypes.c_float), ("weight", _PTR), ("row_stride", _I64),
                ("bad_label", _PTR), ("reduced", _PTR), ("reduced_in_dtype", _INT), ("grad_scale", _PTR)]


def _at_least(lib, version):
    """Whether lib's st_version (major, minor) is version or later."""
    lib.st_version.restype = ctypes.c_char_p
    return tuple(int(v) for v in lib.st_version().decode().split(".")[:2]) >= version


def ce_current(lib):
    """Whether lib's st_cross_entropy is this package's: 0.3.0 and up (st_ce_options.reduced_in_dtype,
    the bad-label flag in host memory; grad_scale and st_cross_entropy_scale's with it)."""
    return hasattr(lib, "st_cross_entropy") and _at_least(lib, (0, 3))


_ce_checked = []   # [lib] once _ce_lib found it current


def _ce_lib():
    lib = _needs("st_cross_entropy", "the cross-entropy kernels", "rebuild it")
    if _ce_checked:
        return lib
    if not ce_current(lib):
        raise RuntimeError("softmax_tune: the library at %s is older than this package's cross-entropy (0.3.0): "
                           "rebuild it" % library_path())
    _ce_checked.append(lib)
    return lib


def cross_entropy(device, dtype, logits, labels, label_type, grad, loss, lse, rows, cols, options, stream):
    """st_cross_entropy: per-row loss and lse (float32) and, grad not None, the gradient into grad."""
    lib = _ce_lib()
    ctx = context(device)
    _check(lib.st_cross_entropy(ctx, dtype, logits, labels, label_type, grad, loss, lse, rows, cols,
                                ctypes.byref(options), stream), ctx)


class VocabArgs(ctypes.Structure):   # st_vocab_args
    _fields_ = ([(n, _I64) for n in ("rows", "cols", "start", "total", "world", "ignore_index")]
                + [(n, ctypes.c_float) for n in ("label_smoothing", "z_loss", "softcap")] + [("label_type", _INT)]
                + [(n, _PTR) for n in ("weight", "bad_label", "logits", "labels", "grad", "lse_local", "loss_local",
                                       "stats", "lse", "loss", "sg")]
                + [("sg_rows", _I64)] + [(n, _PTR) for n in ("w", "delta", "a", "saved", "lab")])


VOCAB_STEPS = {"stats": 0, "loss": 1, "weights": 2, "rescale": 3, "fix": 4}   # st_vocab_step


def vocab_parallel_step(device, dtype, step, args, stream):
    """st_vocab_parallel_step: one row step of vocab-parallel cross-entropy (VOCAB_STEPS) on args (VocabArgs)."""
    lib = _needs("st_vocab_parallel_step", "vocab-parallel's row steps", "rebuild it")
    ctx = context(device)
    _check(lib.st_vocab_parallel_step(ctx, dtype, VOCAB_STEPS[step], ctypes.byref(args), stream), ctx)


def config_cross_entropy(device, dtype, grad, rows, cols):
    """The config string of the kernel st_cross_entropy uses (grad: with the gradient)."""
    lib = _ce_lib()
    ctx = context(device)
    buf = ctypes.create_string_buffer(256)
    _check(lib.st_config_cross_entropy(ctx, dtype, int(grad), rows, cols, buf, 256), ctx)
    return buf.value.decode()


class AttnOptions(ctypes.Structure):   # st_attn_options
    _fields_ = [("scale", ctypes.c_float), ("softcap", ctypes.c_float), ("causal", _INT), ("causal_offset", _I64),
                ("window", _I64), ("key_lengths", _PTR), ("alibi_slopes", _PTR), ("bias", _PTR),
                ("bias_stride_b", _I64), ("bias_stride_h", _I64), ("bias_stride_q", _I64), ("bias_type", _INT)]


BIAS_BOOL = 3   # AttnOptions.bias_type of a bool tensor (ST_ATTN_BIAS_BOOL); float ones take their st_dtype


def bias_native(lib):
    """Whether lib reads a bias tensor in float16, bfloat16 or bool (bias_type, 0.4.0 and up); before,
    float32 only (the field past the end of its st_attn_options)."""
    return _at_least(lib, (0, 4))


def _attn_lib():
    return _needs("st_attention_softmax_backward", "the attention kernels", "rebuild it")


_bias_native = []   # [whether the attention library reads bias types], once asked


def attn_bias_native():
    """bias_native of the attention kernels' library, asked once."""
    if not _bias_native:
        _bias_native.append(bias_native(_attn_lib()))
    return _bias_native[0]


def attention(device, dtype, options, x, y, dy, dx, shape, stream):
    """st_attention_softmax (dy None: y from the scores x) or st_attention_softmax_backward (dx
    from y, dy and, under a softcap, x); shape (B, H, Q, K)."""
    lib = _attn_lib()
    ctx = context(device)
    if dy is None:
        rc = lib.st_attention_softmax(ctx, dtype, ctypes.byref(options), x, y, *shape, stream)
    else:
        rc = lib.st_attention_softmax_backward(ctx, dtype, ctypes.byref(options), x, y, dy, dx, *shape, stream)
    _check(rc, ctx)


def config_attention(device, dtype, options, shape, backward=False):
    """The config string of the kernel st_attention_softmax (its backward) uses for this problem."""
    lib = _attn_lib()
    fn = lib.st_config_attention_backward if backward else lib.st_config_attention
    ctx = context(device)
    buf = ctypes.create_string_buffer(256)
    _check(fn(ctx, dtype, ctypes.byref(options), *shape, buf, 256), ctx)
    return buf.value.decode()


def _listed(fn, kind, ctx):
    """fn (st_untuned or st_untuned_attention, of structs kind) of one context, whole (it may grow
    between the count and the copy)."""
    n = 0
    while True:
        buf = (kind * n)()
        got = fn(ctx, buf, n)
        if got < 0:
            _check(1, ctx)
        if got <= n:
            return buf[:got]
        n = got


def problem_entry(p):
    """An st_problem as untuned() lists it: (rows, cols, dtype, op)."""
    op = KIND_NAMES[p.kind] if 0 < p.kind < len(KIND_NAMES) else OP_NAMES[p.op] + ("_backward" if p.backward else "")
    return (p.rows, p.cols, DTYPE_NAMES[p.dtype], op)


def attn_entry(p):
    """An st_attn_problem as untuned() lists it: (B, H, Q, K, dtype, op, "mask=M", "bias=B") and the
    launch options not at their defaults ("window=W", "offset=D", "scale=S", "softcap=C"), the words
    of its --shapes line."""
    words = ["mask=" + MASK_NAMES[p.mask], "bias=" + BIAS_NAMES[p.bias]]
    if p.window >= 0:
        words.append("window=%d" % p.window)
    if p.causal_offset != p.K - p.Q:
        words.append("offset=%d" % p.causal_offset)
    if p.scale != 1.0:
        words.append("scale=%.9g" % p.scale)   # 9 digits: the float32 read back as it was
    if p.softcap > 0.0:
        words.append("softcap=%.9g" % p.softcap)
    op = "attention_softmax" + ("_backward" if p.backward else "")
    return (p.B, p.H, p.Q, p.K, DTYPE_NAMES[p.dtype], op) + tuple(words)


def untuned():
    """The problems run without a tuned kernel on any device so far, each once, in the order first
    met (device by device; on a device, the attention ones after the others), one a width class:
    (rows, cols, dtype, op) with dtype f32/f16/bf16 and op softmax, log_softmax, softmax_backward,
    log_softmax_backward, cross_entropy or cross_entropy_loss; and (B, H, Q, K, dtype, op, words...)
    for attention_softmax and attention_softmax_backward (attn_entry). [] when the library lacks
    st_untuned."""
    with _lock:   # a context opened meanwhile in another thread: next time
        contexts = sorted(_contexts.items())
    if not contexts or not hasattr(_load(), "st_untuned"):   # nothing ran yet, or an older library
        return []
    lib = _load()
    attn = getattr(lib, "st_untuned_attention", None)   # absent from libraries built before it
    seen = {}
    for _device, ctx in contexts:
        for p in _listed(lib.st_untuned, _Problem, ctx):
            seen.setdefault(problem_entry(p), None)
        for p in _listed(attn, _AttnProblem, ctx) if attn else ():
            seen.setdefault(attn_entry(p), None)
    return list(seen)


class _Stats(ctypes.Structure):
    _fields_ = [(name, _I64) for name in ("calls", "classes", "cache_reads", "compiles", "loads", "tunes")]


def stats():
    """What the library did so far, summed over the devices' contexts (st_get_stats): calls (launches
    asked for), classes (width classes resolved: calls that went past the in-memory table),
    cache_reads (SQLite look-ups), compiles (NVRTC), loads (cubins loaded), tunes (tuning runs).
    All 0 before the first call; {} with a library that lacks st_get_stats."""
    lib = _load()
    if not hasattr(lib, "st_get_stats"):
        return {}
    lib.st_get_stats.argtypes = [_PTR, ctypes.POINTER(_Stats)]
    with _lock:
        contexts = sorted(_contexts.items())
    total = dict.fromkeys((f[0] for f in _Stats._fields_), 0)
    for _device, ctx in contexts:
        s = _Stats()
        _check(lib.st_get_stats(ctx, ctypes.byref(s)), ctx)
        for name in total:
            total[name] += getattr(s, name)
    return total


def wait():
    """Wait for the kernels compiling in the background (st_wait) and put them in use: an attention
    kind the kernel set holds no classes of (ALiBi, a bias tensor, a softcap) runs the set's stand-in
    on its first calls while its own kernel compiles. Benchmarks call this before timing."""
    lib = _load()
    if not hasattr(lib, "st_wait"):   # a library built before it: everything compiled on the call path
        return
    lib.st_wait.argtypes = [_PTR]
    with _lock:
        contexts = sorted(_contexts.items())
    for _device, ctx in contexts:
        _check(lib.st_wait(ctx), ctx)


def shapes_line(problem):
    """One problem of untuned() as a --shapes line: its sizes joined by 'x', then its words
    ('RxC dtype op', or 'BxHxQxK dtype op mask=M bias=B ...')."""
    sizes = [str(v) for v in problem if isinstance(v, int)]
    return " ".join(["x".join(sizes)] + [v for v in problem if not isinstance(v, int)])


def write_shapes(path, problems, merge=False):
    """problems as a shapes file for `softmax-tune --shapes`: a shapes_line each, written whole
    (a temporary file renamed over path). merge: the lines path has already are kept, first."""
    lines = [shapes_line(p) + "\n" for p in problems]
    if merge and os.path.exists(path):
        with open(path) as f:
            old = [line if line.endswith("\n") else line + "\n" for line in f]
        lines = old + [line for line in lines if line not in old]
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.writelines(lines)
    os.replace(tmp, path)
    return len(lines)


def _at_exit():
    """Python's exit, before the C runtime's: the background compiles finished first (exit() while a
    thread is inside NVRTC crashed the process: NVRTC's teardown runs under the compile; a script that
    ended while a stand-in's kernel compiled died of SIGSEGV or abort), then the untuned problems said."""
    try:
        wait()
    except Exception:   # noqa: BLE001  (at exit: the GPU's context may be gone; nothing to wait for then)
        pass
    _warn_untuned()


def _warn_untuned():
    """At exit: how many problems ran untuned, written to $SOFTMAX_TUNE_UNTUNED if set, and how
    to tune them; nothing with SOFTMAX_TUNE_WARN=none."""
    path = os.environ.get("SOFTMAX_TUNE_UNTUNED")
    try:
        found = untuned()
        if path and found:
            write_shapes(path, found, merge=True)
    except Exception as e:   # noqa: BLE001  (at exit, one line beats a traceback)
        warnings.warn("softmax_tune: listing the untuned problems: %s" % e, UntunedWarning)
        return
    if not found or os.environ.get("SOFTMAX_TUNE_WARN") == "none":
        return
    n, file = len(found), path or "shapes.txt"
    how = ("written to %s" % path if path else
           "softmax_tune.write_untuned(\"shapes.txt\") (or SOFTMAX_TUNE_UNTUNED=shapes.txt) writes them")
    warnings.warn("softmax_tune: %d problem%s ran without a tuned kernel: %s; `softmax-tune --shapes %s` tunes them "
                  "(SOFTMAX_TUNE_WARN=each: a warning per problem too; =none: no warning)"
                  % (n, "" if n == 1 else "s", how, file), UntunedWarning)
