"""cross_entropy.py — softmax_tune.cross_entropy: F.cross_entropy over class-index targets with the
loss and its gradient in one kernel (st_cross_entropy: the logits read once, the gradient written
once), plus the options LLM training uses (z-loss, logit softcap). See docs/cross-entropy.md.

    loss = softmax_tune.cross_entropy(logits, labels)            # [N, V] or [B, T, V]; [N] or [B, T]
    loss = softmax_tune.cross_entropy(logits, labels, z_loss=1e-4, softcap=30.0, inplace=True)

The forward computes the gradient of the reduced loss and keeps it; backward scales it by
grad_output in place (a device-side test skips the pass when grad_output is 1: _scale_). An eager
call goes first to the C++ ops' cross_entropy_call where built (_fast: the checks, the rows and the
library call in one C++ call, loss-only or with its autograd in C++); what it leaves comes to the
Python path below. There eager calls with a gradient run the C++ ops' cross_entropy_train where they
are built (its autograd in C++, the backward the library's st_cross_entropy_scale: _train), else an
autograd.Function (_Eager); under torch.compile the custom ops softmax_tune::cross_entropy and
softmax_tune::ce_scale_ (fake impls, register_autograd) run. All reach the library through one C++
call (softmax_tune._C) where the C++ ops are built, else ctypes (_lib.cross_entropy); the custom ops
and the bad-label flag's check stay in Python (_flagged). Under torch.autocast a float16 or bfloat16
call returns a float32 loss, as torch's F.cross_entropy (on autocast's float32 list) does, from the
kernel's float32 row losses (the logits not upcast; the gradient in their dtype; autocast_f32); C++
ops built before they took f32_loss are not used (ctypes then).
Other forms go to torch's F.cross_entropy with one warning (_fallback)."""

import ctypes
import math
import warnings
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from . import _lib, _native
from .ops import DTYPES, _stream, device_of

REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}   # st_reduction
_LABELS = {torch.int32: 0, torch.int64: 1}      # st_index
_warned = []
_flags = {}   # device -> _Flag
_cppok = getattr(_native.C, "ce_grad_scale", False)   # C++ ops whose cross-entropy calls take f32_loss and grad_scale
_cpp = getattr(_native.C, "cross_entropy_forward", None) if _cppok else None   # the C++ call (csrc/ops.cpp), or None: ctypes
_cpp_train = getattr(_native.C, "cross_entropy_train", None) if _cppok else None   # its training call with C++ autograd
_cpp_call = getattr(_native.C, "cross_entropy_call", None) if _cppok else None   # the whole eager call in C++ (_fast)


def _warn_once(why):
    if not _warned:
        _warned.append(why)
        warnings.warn("softmax_tune.cross_entropy: %s: torch's F.cross_entropy runs it (said once per process)" % why,
                      stacklevel=3)


def autocast_f32(x):
    """Whether the loss of 16-bit logits x is float32: under torch.autocast on x's device, as
    F.cross_entropy's (on autocast's float32 list)."""
    return x.dtype in (torch.float16, torch.bfloat16) and torch.is_autocast_enabled(x.device.type)


def loss_dtype(x):
    """The dtype of the loss of logits x: float32 under autocast (autocast_f32), else x's."""
    return torch.float32 if autocast_f32(x) else x.dtype


# ---- the bad-label flag: set by the kernel, read without a host sync ----

class _Flag:
    """An int in pinned host memory that the kernel sets to 1 on a label outside [0, V) (mapped:
    pinned memory is addressable from every GPU at its host address), read at the next eager call
    (no copy, no wait). tensor: it, for the C++ call; value: it, read and written by the host."""

    def __init__(self, device):
        with torch.cuda.device(device):
            self.tensor = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        self.value = ctypes.c_int.from_address(self.tensor.data_ptr())


def _capturing():
    return torch.cuda.is_current_stream_capturing()


def _flag(device):
    f = _flags.get(device)
    if f is None:
        f = _flags[device] = _Flag(device)
    return f


def _bad_label_error(device):
    return ValueError("softmax_tune.cross_entropy: a label outside [0, V) that is not ignore_index, on cuda:%d (that "
                      "row's loss is NaN and its gradient 0)" % device)


def _check_lazily(f, device):
    """Raise for a bad label that an earlier call's kernel has already flagged (no sync)."""
    if f.value.value:
        f.value.value = 0
        raise _bad_label_error(device)


def check_labels(device=None):
    """Wait for the GPU and raise ValueError if any call on device (default: all used) met a label
    outside [0, V) other than ignore_index since the last check; the flag is then cleared."""
    want = None if device is None else torch.device(device).index
    if device is not None and want is None:
        want = torch.cuda.current_device()
    for d, f in list(_flags.items()):
        if want is None or d == want:
            torch.cuda.synchronize(d)
            if f.value.value:
                f.value.value = 0
                raise _bad_label_error(d)


# ---- the kernel ----

def _rows(x):
    """x [.., V] as [N, V] with unit column stride (a row stride allowed), a view when it can be."""
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(1) != 1 or x2.stride(0) < x2.shape[1]:
        x2 = x2.contiguous()
    return x2


def _flagged(x2, call):
    """call(f, device) after the bad-label flag's check: an earlier call's bad label raised here (no
    sync; not under a CUDA graph capture)."""
    device = device_of(x2)
    f = _flag(device)
    if not _capturing():
        _check_lazily(f, device)
    return call(f, device)


def run(x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, want_grad, inplace=False,
        f32=False):
    """(loss in x2's dtype (f32: float32), reduced as asked, and the gradient [N, V] or None) of logits
    x2 [N, V] (unit column stride) and labels t1 [N]; inplace: the gradient written into x2 (contiguous).
    Through the C++ call where softmax_tune._C has it and the library has st_cross_entropy, else ctypes."""
    t1 = t1.contiguous()

    def call(f, device):
        # the C++ call (one host call; None: a library without st_cross_entropy, or not for it), else ctypes
        out = _cpp(x2, t1, weight, ignore_index, REDUCTIONS[reduction], label_smoothing, z_loss, softcap or 0.0,
                   want_grad, inplace, f.tensor, f32) if _cpp is not None else None
        if out is not None and out[0] is not None:
            return out[0], out[1]
        return _run_ctypes(x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, want_grad,
                           inplace, device, f, f32)
    return _flagged(x2, call)


def _train(x, x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, f32):
    """The loss of logits x (f32: float32) with its gradient function from the C++ ops (csrc/ops.cpp
    cross_entropy_train: the backward without Python), or None where they lack it or the call is
    not for them (_Eager then)."""
    if _cpp_train is None:
        return None
    t1 = t1.contiguous()
    return _flagged(x2, lambda f, device: _cpp_train(x, x2, t1, weight, ignore_index, REDUCTIONS[reduction],
                                                     label_smoothing, z_loss, softcap or 0.0, f.tensor, f32))


def _run_ctypes(x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, want_grad, inplace,
                device, f, f32=False):
    """run()'s library call through ctypes (_lib.cross_entropy): (loss in x2's dtype (f32: float32),
    gradient or None)."""
    n, v = x2.shape
    out = torch.float32 if f32 else x2.dtype
    loss = torch.empty(n, dtype=torch.float32, device=x2.device)
    lse = torch.empty(n, dtype=torch.float32, device=x2.device)
    grad = (x2 if inplace else torch.empty((n, v), dtype=x2.dtype, device=x2.device)) if want_grad else None
    reduced = None if reduction == "none" else torch.empty((), dtype=out, device=x2.device)
    opts = _lib.CeOptions(ignore_index, REDUCTIONS[reduction], label_smoothing, z_loss, softcap or 0.0,
                          weight.data_ptr() if weight is not None else None, x2.stride(0), f.tensor.data_ptr(),
                          reduced.data_ptr() if reduced is not None else None, 0 if f32 else 1)
    _lib.cross_entropy(device, DTYPES[x2.dtype], x2.data_ptr(), t1.data_ptr(), _LABELS[t1.dtype],
                       grad.data_ptr() if grad is not None else None, loss.data_ptr(), lse.data_ptr(), n, v, opts,
                       _stream(device))
    # the library reduced the loss as torch does (mean: over the rows not ignored, weighted), in out
    return (loss.to(out) if reduced is None else reduced), grad


# ---- backward: the saved gradient times grad_output, in place ----

_triton = []   # [the jitted kernel] or [None] once triton is found missing or broken
_sms = {}      # device -> SM count


def _kernel():
    if not _triton:
        try:
            from ._ce_triton import scale
            _triton.append(scale)
        except Exception:   # noqa: BLE001  (no triton: torch's mul_, a pass every time)
            _triton.append(None)
    return _triton[0]


def scale_(grad, go):
    """grad [N, V] (contiguous) *= go: a scalar (a 0-d or expanded one) or one value a row."""
    g1 = go.reshape(-1)
    per_row = g1.numel() > 1 and g1.stride(0) != 0
    if per_row:
        g1 = g1.contiguous()
    k = _kernel()
    if k is not None:
        try:
            block = 4096
            nblocks = (grad.numel() + block - 1) // block
            sms = _sms.get(grad.device)
            if sms is None:
                sms = _sms[grad.device] = torch.cuda.get_device_properties(grad.device).multi_processor_count
            k[(max(1, min(nblocks, sms * 4)),)](grad, g1, grad.numel(), grad.shape[1], nblocks, PER_ROW=per_row,
                                                 BLOCK=block, num_warps=8)
            return grad
        except Exception as e:   # noqa: BLE001  (a triton that cannot build it: torch's, said once)
            _triton[0] = None
            warnings.warn("softmax_tune.cross_entropy: the gradient-scaling kernel failed (%s); torch's mul_ runs "
                          "instead (a pass even when grad_output is 1)" % e)
    return grad.mul_(g1.float()[:, None] if per_row else g1[0].float())


@torch.library.custom_op("softmax_tune::ce_scale_", mutates_args=("grad",))
def scale_op(grad: torch.Tensor, go: torch.Tensor) -> None:
    scale_(grad, go)


@scale_op.register_fake
def _(grad, go):
    return None


# ---- the custom op (torch.compile) ----

@torch.library.custom_op("softmax_tune::cross_entropy", mutates_args=())
def ce_op(logits: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor], ignore_index: int, reduction: int,
          label_smoothing: float, z_loss: float, softcap: float, need_grad: bool,
          f32_loss: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    red = ("none", "sum", "mean")[reduction]
    loss, grad = run(_rows(logits), target, weight, ignore_index, red, label_smoothing, z_loss, softcap, need_grad,
                     f32=f32_loss)
    return loss, grad if grad is not None else logits.new_empty(0)


@ce_op.register_fake
def _(logits, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, need_grad, f32_loss):
    n, v = logits.shape
    loss = logits.new_empty((n,) if reduction == 0 else (), dtype=torch.float32 if f32_loss else logits.dtype)
    return loss, logits.new_empty((n, v) if need_grad else (0,))


def _setup(ctx, inputs, output):
    ctx.set_materialize_grads(False)
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(output[1])


def _backward(ctx, go, _unused):
    grad, = ctx.saved_tensors
    scale_op(grad, go)
    return grad, None, None, None, None, None, None, None, None, None


ce_op.register_autograd(_backward, setup_context=_setup)


# ---- eager autograd ----

class _Eager(torch.autograd.Function):
    """Eager calls with a gradient: no dispatcher. The gradient is kept on ctx (not saved: it is
    consumed by the one backward allowed; a second one raises)."""

    @staticmethod
    def forward(ctx, x, x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, inplace, f32):
        loss, grad = run(x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, True, inplace, f32)
        if inplace:   # autograd then refuses any node that saved x: "modified by an inplace operation"
            torch.autograd.graph.increment_version(x)
        ctx.grad, ctx.shape = grad, x.shape
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        grad = ctx.grad
        if grad is None:
            raise RuntimeError("softmax_tune.cross_entropy: backward through it a second time (retain_graph): the "
                               "gradient it kept was consumed by the first")
        ctx.grad = None
        return scale_(grad, go).view(ctx.shape), None, None, None, None, None, None, None, None, None, None


# ---- the public function ----

def _check_options(reduction, label_smoothing, z_loss, softcap):
    if reduction not in REDUCTIONS:
        raise ValueError("softmax_tune.cross_entropy: reduction must be 'none', 'mean' or 'sum', got %r" % (reduction,))
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("softmax_tune.cross_entropy: label_smoothing must be in [0, 1], got %r" % (label_smoothing,))
    if not (z_loss >= 0.0 and math.isfinite(z_loss)):
        raise ValueError("softmax_tune.cross_entropy: z_loss must be finite and >= 0, got %r" % (z_loss,))
    if softcap is not None and not (softcap > 0.0 and math.isfinite(softcap)):
        raise ValueError("softmax_tune.cross_entropy: softcap must be None or finite and > 0, got %r" % (softcap,))


def _ours(input, target):
    """Whether (input, target) is [.., V] logits with class-index targets [..] (else torch's forms:
    class probabilities, [N, C, d1, ..]); mismatched shapes are refused here."""
    if target.is_floating_point() or input.dim() not in (2, 3) or target.dim() != input.dim() - 1:
        return False
    if tuple(target.shape) == tuple(input.shape[:-1]):
        return True
    if input.dim() == 3 and tuple(target.shape) == (input.shape[0], input.shape[2]):
        return False   # torch's [N, C, d1] with [N, d1]
    raise ValueError("softmax_tune.cross_entropy: target shape %s does not match input shape %s (expected %s)"
                     % (tuple(target.shape), tuple(input.shape), tuple(input.shape[:-1])))


def _validate(input, target, weight):
    n, v = input.numel() // max(1, input.shape[-1]), input.shape[-1]
    if n == 0:
        raise ValueError("softmax_tune.cross_entropy: no rows (input shape %s)" % (tuple(input.shape),))
    if v < 2:
        raise ValueError("softmax_tune.cross_entropy: needs at least 2 classes, got V=%d" % v)
    if target.dtype not in _LABELS:
        raise ValueError("softmax_tune.cross_entropy: target must be int32 or int64, got %s" % target.dtype)
    if target.device != input.device:
        raise ValueError("softmax_tune.cross_entropy: target is on %s, input on %s" % (target.device, input.device))
    if weight is not None:
        if weight.device != input.device:
            raise ValueError("softmax_tune.cross_entropy: weight is on %s, input on %s" % (weight.device, input.device))
        if tuple(weight.shape) != (v,) or not weight.is_floating_point():
            raise ValueError("softmax_tune.cross_entropy: weight must be a float tensor of V=%d classes, got %s %s"
                             % (v, weight.dtype, tuple(weight.shape)))


def _refuse_inplace(x):
    """Why inplace=True may not write into x, or None."""
    if x.is_leaf and x.requires_grad:
        return "input is a leaf that requires grad (its values would be lost)"
    base = x._base if x._is_view() else None   # a whole view is fine: it shares its base's version counter
    if base is not None and (base.numel() != x.numel() or (base.is_leaf and base.requires_grad)):
        return "input is a view of part of another tensor, or of a leaf that requires grad"
    if not x.is_contiguous():
        return "input is not contiguous (the gradient would go to a copy)"
    return None


def _fallback(input, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, ours):
    """torch's F.cross_entropy, with softcap and z-loss in torch; ours: [.., V] layout flattened."""
    x, t = (input.reshape(-1, input.shape[-1]), target.reshape(-1)) if ours else (input, target)
    t = t if t.is_floating_point() else t.long()
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    loss = F.cross_entropy(x, t, weight, ignore_index=ignore_index, reduction=reduction,
                           label_smoothing=label_smoothing)
    if z_loss:
        z = z_loss * torch.logsumexp(x.float(), dim=1 if x.dim() > 1 else 0) ** 2
        if not t.is_floating_point():
            valid = t != ignore_index
            z = torch.where(valid, z, torch.zeros_like(z))
            w = (weight.float()[t.clamp(0, x.shape[1 if x.dim() > 1 else 0] - 1)] if weight is not None
                 else torch.ones_like(z)) * valid
        else:
            w = torch.ones_like(z)
        z = z if reduction == "none" else z.sum() if reduction == "sum" else z.sum() / w.sum()
        loss = loss + z.to(loss.dtype)
    return loss.reshape(target.shape) if ours and reduction == "none" else loss


def _fast(input, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, inplace):
    """The loss from the C++ ops' whole call (csrc/ops.cpp cross_entropy_call: the checks, the rows and
    the library call, loss-only or with its autograd in C++), or None: not built, a tensor subclass,
    under torch.compile, the device's first call (its bad-label flag made here), or a call the C++
    path leaves to cross_entropy's Python (it then checks, warns, raises a flagged bad label)."""
    if _cpp_call is None or type(input) is not torch.Tensor or torch.compiler.is_compiling():
        return None
    f = _flags.get(input.get_device())
    if f is None:
        return None
    try:
        return _cpp_call(input, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, inplace,
                         f.tensor)
    except TypeError:   # an argument pybind cannot convert: Python's path says what is wrong
        return None


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, *,
                  z_loss=0.0, softcap=None, inplace=False):
    """F.cross_entropy(input, target, weight, ignore_index=, reduction=, label_smoothing=) over the
    last dim of input [N, V] or [B, T, V] with class indices target [N] / [B, T] (int32 or int64),
    plus z_loss (z_loss * logsumexp^2 added to each row's loss) and softcap (logits softcap *
    tanh(x / softcap) first). inplace=True writes the gradient into input (saves its size in
    memory); refused where another autograd node could need input's values. The loss is in
    input's dtype, float32 under torch.autocast (as torch's); the gradient in input's dtype. See
    docs/cross-entropy.md."""
    loss = _fast(input, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, inplace)
    if loss is not None:
        return loss
    _check_options(reduction, label_smoothing, z_loss, softcap)
    if not input.is_floating_point():
        raise ValueError("softmax_tune.cross_entropy: input must be floating point, got %s" % input.dtype)
    ours = _ours(input, target)
    if ours:
        _validate(input, target, weight)
    why = ("not [N, V] or [B, T, V] logits with class indices" if not ours else
           "input on the CPU" if not input.is_cuda else
           "input of %s" % input.dtype if input.dtype not in DTYPES else
           "weight together with label_smoothing" if weight is not None and label_smoothing > 0 else None)
    if why:
        _warn_once(why)
        return _fallback(input, target, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, ours)
    if weight is not None:
        weight = weight.float().contiguous()
    need_grad = torch.is_grad_enabled() and input.requires_grad
    f32 = autocast_f32(input)
    t1 = target.reshape(-1)
    if torch.compiler.is_compiling():   # the custom op (inplace does not apply: Inductor owns memory)
        loss, _ = ce_op(input.reshape(-1, input.shape[-1]), t1, weight, ignore_index, REDUCTIONS[reduction],
                        label_smoothing, z_loss, softcap or 0.0, need_grad, f32)
    elif need_grad:
        if inplace:
            no = _refuse_inplace(input)
            if no:
                raise RuntimeError("softmax_tune.cross_entropy: inplace=True refused: %s; pass inplace=False" % no)
        x2 = _rows(input.detach())
        loss = None if inplace else _train(input, x2, t1, weight, ignore_index, reduction, label_smoothing,
                                           z_loss, softcap, f32)
        if loss is None:
            loss = _Eager.apply(input, x2, t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap,
                                inplace, f32)
    else:   # no gradient wanted: the loss-only kernel, input untouched
        loss, _ = run(_rows(input), t1, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, False,
                      f32=f32)
    return loss.reshape(target.shape) if reduction == "none" else loss


def config(input, grad=True):
    """The config string of the kernel cross_entropy runs for input's [N, V] (grad=False: the
    loss-only kernel)."""
    if not input.is_cuda or input.dtype not in DTYPES or input.dim() < 1 or input.numel() == 0:
        raise ValueError("softmax_tune.cross_entropy config: a non-empty CUDA float32/float16/bfloat16 tensor, got "
                         "%s %s" % (input.device, input.dtype))
    device = device_of(input)
    v = input.shape[-1]
    return _lib.config_cross_entropy(device, DTYPES[input.dtype], grad, input.numel() // v, v)
