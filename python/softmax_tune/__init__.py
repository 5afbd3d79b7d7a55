"""softmax_tune — PyTorch binding of the softmax-tune runtime library: drop-ins for torch.softmax
and torch.log_softmax, differentiable, traceable by torch.compile, capturable by CUDA graphs.

    import torch, softmax_tune
    y = softmax_tune.softmax(x)               # torch.softmax(x, -1)
    y = softmax_tune.softmax(x, dim=1)        # any dim, negative dims too
    y = softmax_tune.log_softmax(x, dim=-1)   # = softmax_tune.softmax(x, log=True)
    m = softmax_tune.nn.Softmax(dim=-1)       # and nn.LogSoftmax
    loss = softmax_tune.cross_entropy(logits, labels)   # F.cross_entropy, loss and gradient in one kernel
    p = softmax_tune.attention_softmax(scores, scale=0.125, causal=True)   # attention scores, masked and scaled

CUDA tensors of float32, float16 and bfloat16 run the kernel softmax-tune tuned for this GPU
and shape (`softmax-tune --shape ROWSxCOLS --dtype bf16`), or, for shapes nobody tuned, the
config of the nearest tuned problem (the cache's, or the default table's built in for the GPU's
arch) adapted to the shape and compiled on the first call (`softmax-tune explain --shape RxC`
shows it; SOFTMAX_TUNE_MISS=tune tunes them on first use, =error refuses), on x's device
(a library context per device) and torch's current stream there. Their gradient runs the
library's backward kernel (st_softmax_backward). Another dim than the last is moved last (a
copy) and the result is returned as a view with it moved back; non-contiguous inputs are
copied. Anything else (a CPU tensor, float64, an empty or 0-d tensor) is torch's own softmax.
Under torch.compile the call goes through the custom op softmax_tune::softmax
(softmax_tune/ops.py); eager calls go straight to the library (with requires_grad, through an
autograd.Function whose backward runs the same backward kernel). Where the C++ ops
(softmax_tune._C, built by `pip install --no-build-isolation ./python`) load, they are those ops,
with their autograd in C++, and an eager call is one C++ call (cpp_ops is then True); else the
ops are Python's and the library is called through ctypes (SOFTMAX_TUNE_NO_CPP=1 forces that).
Under torch.compile with Inductor, a softmax whose every use is elementwise (softmax(x) * 2) is
handed back to torch.softmax so that Inductor fuses it with those uses (softmax_tune/fusion.py,
set at the first trace of the op, not at import; compile_fusion says whether that pass is wanted;
SOFTMAX_TUNE_FUSE=0 turns it off).
Shapes nobody tuned are recorded: softmax_tune.untuned() lists them, write_untuned("shapes.txt")
writes them for `softmax-tune --shapes shapes.txt`, and one warning at exit says how many
(SOFTMAX_TUNE_WARN=each: also one per problem as it comes; =none: none).
See docs/python.md; the library is found as softmax_tune/_lib.py says.
"""

import torch

from . import _lib, _native, fusion, nn, ops
from .cross_entropy import check_labels, cross_entropy   # docs/cross-entropy.md
from .attention import attention_softmax   # docs/attention-softmax.md
from .linear_cross_entropy import linear_cross_entropy   # docs/linear-cross-entropy.md

__all__ = ["softmax", "log_softmax", "config", "untuned", "write_untuned", "stats", "wait", "UntunedWarning", "library_path", "nn",
           "cpp_ops", "compile_fusion", "cross_entropy", "check_labels", "attention_softmax"]
__all__ += ["linear_cross_entropy", "vocab_parallel_cross_entropy", "vocab_parallel_linear_cross_entropy"]
library_path = _lib.library_path


def __getattr__(name):
    """The vocab-parallel ops, imported at their first use: their module's torch.compiler.disable imports
    torch._dynamo, which cost `import softmax_tune` 3.4-3.9 s after torch (H200 host, 2026-11-29)."""
    if name in ("vocab_parallel_cross_entropy", "vocab_parallel_linear_cross_entropy"):
        from . import vocab_parallel
        return getattr(vocab_parallel, name)
    raise AttributeError("module 'softmax_tune' has no attribute %r" % name)
cpp_ops = _native.C is not None   # the C++ ops serve (else Python's custom ops and ctypes)
_cpp = _native.C
compile_fusion = fusion.install()   # Inductor: a softmax of elementwise uses only becomes torch's (fusion.py, at the first trace)
untuned = _lib.untuned
stats = _lib.stats   # what the library did: calls, width classes resolved, SQLite reads, NVRTC compiles, loads
wait = _lib.wait     # the kernels compiling in the background, in use (benchmarks: before timing)
UntunedWarning = _lib.UntunedWarning


def _last(x, dim):
    """dim as a non-negative index of x's dims, checked as torch checks it."""
    n = x.dim()
    if not -n <= dim < n:
        raise IndexError("softmax_tune: dim %d is out of range for a %d-d tensor" % (dim, n))
    return dim % n


def _into(x, log, out):
    """The out= form (no autograd, as torch's out= ops): x contiguous over its last dim."""
    if not ops.supported(x) or not x.is_contiguous() or x.numel() == 0:
        raise ValueError("softmax_tune: out= takes a non-empty contiguous CUDA float32/float16/bfloat16 x over its "
                         "last dim, got %s %s %s" % (x.device, x.dtype, "contiguous" if x.is_contiguous() else "strided"))
    if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
        raise ValueError("softmax_tune: out must be a contiguous tensor like x")
    if torch.is_grad_enabled() and x.requires_grad:
        raise RuntimeError("softmax_tune: out= does not support autograd (x requires grad)")
    return ops.run_forward(x, out, log)


def softmax(x, dim=-1, log=False, out=None, *, dtype=None):
    """torch.softmax(x, dim) (torch.log_softmax with log=True); dtype= casts x first, as torch's;
    out= (a contiguous tensor like x, last dim only, no autograd) writes the result there."""
    if dtype is not None:
        x = x.to(dtype)
    if _cpp is not None and not torch.compiler.is_compiling():   # one C++ call; None: not a case for it
        y = _cpp.softmax(x, dim, log) if out is None else _cpp.softmax_out(x, dim, log, out)
        if y is not None:
            return y
    if x.dim() > 0:
        dim = _last(x, dim)
    if out is not None:
        if x.dim() == 0 or dim != x.dim() - 1:
            raise ValueError("softmax_tune: out= only over the last dim, got dim=%d of a %d-d tensor" % (dim, x.dim()))
        return _into(x, log, out)
    if not ops.supported(x) or x.dim() == 0 or x.numel() == 0:
        return torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
    last = dim == x.dim() - 1
    xt = x if last else x.movedim(dim, -1)
    if torch.compiler.is_compiling():
        y = ops.softmax(xt, log)
    elif torch.is_grad_enabled() and x.requires_grad:   # eager training: autograd, no dispatcher
        y = ops.Eager.apply(xt, log)
    else:   # inference: no dispatcher on the way
        xt = xt.contiguous()
        y = ops.run_forward(xt, torch.empty_like(xt), log)
    return y if last else y.movedim(-1, dim)


def log_softmax(x, dim=-1, out=None, *, dtype=None):
    """torch.log_softmax(x, dim): softmax(x, dim, log=True)."""
    return softmax(x, dim, True, out, dtype=dtype)


def config(x, log=False, backward=False):
    """The config string of the kernel softmax(x, log=log) runs over x's last dim (backward=True:
    of the kernel its gradient runs)."""
    if not ops.supported(x) or x.numel() == 0:
        raise ValueError("softmax_tune: config of a non-empty CUDA float32/float16/bfloat16 tensor, got %s %s"
                         % (x.device, x.dtype))
    device, dtype, rows, cols, _ = ops._args(x)
    return _lib.config(device, dtype, int(log), rows, cols, backward)


def write_untuned(path):
    """Write untuned() to path as a shapes file ('RxC dtype op' a line, attention problems as 'BxHxQxK
    dtype op mask=M bias=B ...'; the whole file at once), for `softmax-tune --shapes path`; returns
    how many problems it holds."""
    return _lib.write_shapes(path, untuned())
