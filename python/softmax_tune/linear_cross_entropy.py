"""linear_cross_entropy.py — softmax_tune.linear_cross_entropy: the loss of an LM head,
cross_entropy(hidden @ weight.T + bias, target), and the gradients of hidden, weight and bias, with the
[N, V] logits never whole in memory. See docs/linear-cross-entropy.md.

    loss = softmax_tune.linear_cross_entropy(hidden, weight, target)            # hidden [N, D] or [B, T, D]
    loss = softmax_tune.linear_cross_entropy(hidden, weight, target, bias, z_loss=1e-4, softcap=30.0)
    crit = softmax_tune.nn.LinearCrossEntropyLoss(ignore_index=-100)             # crit(hidden, weight, target)

The rows go through in chunks: a chunk's logits by cuBLAS (torch.mm / torch.addmm into one buffer
reused by every chunk), the library's cross-entropy kernel (st_cross_entropy) on them writing the
logits' gradient into the same buffer (the logits read once, their gradient written once), then
the gradient matmuls from that buffer: grad_hidden[chunk] = dlogits @ weight, grad_weight +=
dlogits.T @ hidden[chunk], grad_bias += the column sums. The kernel runs with reduction "sum" (each
row's own gradient); the mean's factor (1 / the rows not ignored, weighted, computed on the device:
no host sync) multiplies the chunk's hidden rows before the grad_weight matmul and the chunk's
grad_hidden rows after theirs. With reduction "mean" or "sum" the forward computes the gradients
(as cross_entropy does) and the backward multiplies them by grad_output in place (nothing to do
when it is 1); with reduction "none" the forward computes the losses only (the loss-only kernel) and
the backward computes the chunks again with grad_output's value of each row folded in.

The loss is in hidden's dtype; under torch.autocast a float16 or bfloat16 call returns it in float32, as
torch's F.cross_entropy does there, reduced from the kernel's float32 row losses (never rounded to 16 bits).

Eager calls with a gradient run an autograd.Function (_Eager: no dispatcher); under torch.compile
the custom ops softmax_tune::linear_cross_entropy and softmax_tune::linear_cross_entropy_backward
(fake impls, register_autograd) run. Other forms (CPU tensors, float64, class weights together with
label smoothing) go to torch (F.linear, then cross_entropy's torch path) with one warning."""

import importlib
import math
import os
import warnings
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from . import _lib
from .ops import DTYPES, _stream, device_of

_ce = importlib.import_module(__package__ + ".cross_entropy")   # the module (the package's name is the function)

REDUCTIONS = _ce.REDUCTIONS
_LABELS = {torch.int32: 0, torch.int64: 1}
CHUNK_BYTES = 384 << 20   # the logits buffer of a chunk, at most (SOFTMAX_TUNE_LCE_CHUNK_MB: another size)
_warned = []


def _warn_once(why):
    if not _warned:
        _warned.append(why)
        warnings.warn("softmax_tune.linear_cross_entropy: %s: torch (F.linear and F.cross_entropy) runs it (said once "
                      "per process)" % why, stacklevel=3)


# ---- the chunk size ----

def _budget(device):
    """Bytes a chunk's logits may take: CHUNK_BYTES (or $SOFTMAX_TUNE_LCE_CHUNK_MB), and at most a quarter of
    what is free on the device (the driver's free memory plus what torch's allocator holds unused)."""
    env = os.environ.get("SOFTMAX_TUNE_LCE_CHUNK_MB")
    budget = int(float(env) * (1 << 20)) if env else CHUNK_BYTES
    if device is not None and not torch.cuda.is_current_stream_capturing():
        free, _total = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        budget = min(budget, max(free // 4, 1 << 20))
    return budget


def chunk_rows(n, v, dtype, device=None, budget=None):
    """The rows of a chunk for n rows of v classes in dtype: a logits buffer [rows, v] within budget bytes
    (default _budget(device)), the chunks as even as that allows and a multiple of 64 rows where it can."""
    elt = torch.empty((), dtype=dtype).element_size()
    if budget is None:
        budget = _budget(device)
    most = max(1, int(budget) // (v * elt))
    if most >= n:
        return n
    k = -(-n // most)
    c = -(-n // k)
    c64 = -(-c // 64) * 64
    if c64 <= most:
        return c64
    return most // 64 * 64 if most >= 64 else most


# ---- the loop ----

def _kernel(device, x, t, grad, loss, lse, ignore_index, label_smoothing, z_loss, softcap, weight, flag):
    """st_cross_entropy of logits x [c, v] (contiguous) and labels t [c] with reduction sum (each row's own
    gradient): per-row loss and lse (float32) into loss and lse, the gradient into grad (x itself, or None:
    the loss-only kernel). weight: float32 [v] class weights or None."""
    c, v = x.shape
    opts = _lib.CeOptions(ignore_index, REDUCTIONS["sum"], label_smoothing, z_loss, softcap or 0.0,
                          weight.data_ptr() if weight is not None else None, v, flag.tensor.data_ptr(), None, 0)
    _lib.cross_entropy(device, DTYPES[x.dtype], x.data_ptr(), t.data_ptr(), _LABELS[t.dtype],
                       grad.data_ptr() if grad is not None else None, loss.data_ptr(), lse.data_ptr(), c, v, opts,
                       _stream(device))


def mean_divisor(t1, class_weight, ignore_index, v):
    """The mean's divisor, float64 on the device: the rows not ignored, weighted by their label's class weight."""
    valid = t1 != ignore_index
    if class_weight is None:
        return valid.sum(dtype=torch.float64)
    return (class_weight[t1.clamp(0, v - 1).long()].double() * valid).sum()


def factor(divisor):
    """The gradient's factor of a mean, float32 [1]: 1 / divisor, 0 when nothing counts (every row ignored: the
    gradients are 0 and the loss NaN, as torch's)."""
    return torch.where(divisor > 0, 1.0 / divisor, torch.zeros_like(divisor)).float().reshape(1)


def run(h2, w, t1, bias, class_weight, ignore_index, label_smoothing, z_loss, softcap, chunk=0,
        need=(False, False, False), rs=None, check=True):
    """The chunked loop over hidden rows h2 [N, D] (contiguous), weight w [V, D] (contiguous), labels t1 [N]
    (contiguous int32/int64), bias [V] or None, class_weight float32 [V] or None. need: which gradients
    (hidden, weight, bias); none: the loss-only kernel. rs: the gradient's factor, None (1), float32 [1] (one
    for every row: the mean's) or float32 [N] (one a row: grad_output of reduction none).
    Returns (loss float32 [N], lse float32 [N], grad_hidden, grad_weight, grad_bias), a gradient None where not
    needed; grad_bias is [1, V]. check: raise first for a bad label an earlier call's kernel flagged (not in a
    backward, whose forward's own bad label is for the next call to report)."""
    n, d = h2.shape
    v = w.shape[0]
    dtype = h2.dtype
    device = device_of(h2)
    f = _ce._flag(device)
    if check and not _ce._capturing():
        _ce._check_lazily(f, device)
    chunk = chunk if chunk and chunk > 0 else chunk_rows(n, v, dtype, device)
    chunk = min(chunk, n)
    grads = any(need)
    loss = torch.empty(n, dtype=torch.float32, device=h2.device)
    lse = torch.empty(n, dtype=torch.float32, device=h2.device)
    gh = torch.empty_like(h2) if need[0] else None
    gw = torch.empty_like(w) if need[1] else None
    gb32 = torch.zeros(v, dtype=torch.float32, device=h2.device) if need[2] else None
    buf = torch.empty(chunk * v, dtype=dtype, device=h2.device)
    per_row = rs is not None and rs.numel() > 1
    hbuf = torch.empty(chunk * d, dtype=dtype, device=h2.device) if rs is not None and need[1] else None
    wt = w.t()
    for k, r0 in enumerate(range(0, n, chunk)):
        r1 = min(n, r0 + chunk)
        c = r1 - r0
        x = buf[:c * v].view(c, v)
        hc = h2[r0:r1]
        if bias is None:
            torch.mm(hc, wt, out=x)
        else:
            torch.addmm(bias, hc, wt, out=x)
        _kernel(device, x, t1[r0:r1], x if grads else None, loss[r0:r1], lse[r0:r1], ignore_index, label_smoothing,
                z_loss, softcap, class_weight, f)
        if not grads:
            continue
        sc = None if rs is None else rs[r0:r1, None] if per_row else rs
        if need[0]:
            out = gh[r0:r1]
            torch.mm(x, w, out=out)
            if sc is not None:
                out.mul_(sc)   # float32 math, rounded once to the dtype
        if need[1]:
            hs = hc if sc is None else torch.mul(hc, sc, out=hbuf[:c * d].view(c, d))
            if k == 0:
                torch.mm(x.t(), hs, out=gw)
            else:
                gw.addmm_(x.t(), hs)
        if need[2]:
            if per_row:
                gb32 += torch.mv(x.t(), rs[r0:r1].to(dtype)).float()
            else:
                gb32 += x.sum(0, dtype=torch.float32)
    gb = None
    if need[2]:
        if rs is not None and not per_row:
            gb32 *= rs
        gb = gb32.to(dtype).view(1, v)
    del buf, hbuf
    return loss, lse, gh, gw, gb


def reduce(loss, reduction, divisor, dtype):
    """The rows' losses (float32 [N]) reduced as torch does, in dtype: summed in float64 (a fixed order)."""
    if reduction == "none":
        return loss.to(dtype)
    total = loss.sum(dtype=torch.float64)
    return (total if reduction == "sum" else total / divisor).to(dtype)


def forward(h2, w, t1, bias, class_weight, ignore_index, reduction, label_smoothing, z_loss, softcap, chunk, need,
            f32=False):
    """(loss reduced as asked in h2's dtype (f32: float32), grad_hidden, grad_weight, grad_bias [1, V]) of one call;
    the gradients of the reduced loss where need says (never with reduction none: its backward computes them)."""
    v = w.shape[0]
    if reduction == "none":
        need = (False, False, False)
    divisor = mean_divisor(t1, class_weight, ignore_index, v) if reduction == "mean" else None
    rs = factor(divisor) if reduction == "mean" and any(need) else None
    loss, _lse, gh, gw, gb = run(h2, w, t1, bias, class_weight, ignore_index, label_smoothing, z_loss, softcap, chunk,
                                 need, rs)
    return reduce(loss, reduction, divisor, torch.float32 if f32 else h2.dtype), gh, gw, gb


def backward_none(go, h2, w, t1, bias, class_weight, ignore_index, label_smoothing, z_loss, softcap, chunk, need):
    """The gradients of reduction none's losses under grad_output go (one value a row): the chunks computed again."""
    rs = go.reshape(-1).float().contiguous()
    _loss, _lse, gh, gw, gb = run(h2, w, t1, bias, class_weight, ignore_index, label_smoothing, z_loss, softcap, chunk,
                                  need, rs, check=False)
    return gh, gw, gb


# ---- the custom ops (torch.compile) ----

@torch.library.custom_op("softmax_tune::linear_cross_entropy", mutates_args=())
def lce_op(hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, bias: Optional[torch.Tensor],
           class_weight: Optional[torch.Tensor], ignore_index: int, reduction: int, label_smoothing: float,
           z_loss: float, softcap: float, chunk: int, need_hidden: bool, need_weight: bool, need_bias: bool,
           f32_loss: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    red = ("none", "sum", "mean")[reduction]
    loss, gh, gw, gb = forward(hidden.contiguous(), weight.contiguous(), target.contiguous(), bias, class_weight,
                               ignore_index, red, label_smoothing, z_loss, softcap, chunk,
                               (need_hidden, need_weight, need_bias), f32_loss)
    empty = hidden.new_empty(0)
    return loss, gh if gh is not None else empty, gw if gw is not None else empty.clone(), \
        gb if gb is not None else empty.clone()


@lce_op.register_fake
def _(hidden, weight, target, bias, class_weight, ignore_index, reduction, label_smoothing, z_loss, softcap, chunk,
      need_hidden, need_weight, need_bias, f32_loss):
    n, v = hidden.shape[0], weight.shape[0]
    grads = reduction != 0
    return (hidden.new_empty((n,) if reduction == 0 else (), dtype=torch.float32 if f32_loss else hidden.dtype),
            hidden.new_empty(tuple(hidden.shape) if grads and need_hidden else (0,)),
            hidden.new_empty(tuple(weight.shape) if grads and need_weight else (0,)),
            hidden.new_empty((1, v) if grads and need_bias else (0,)))


@torch.library.custom_op("softmax_tune::linear_cross_entropy_backward", mutates_args=())
def lce_backward_op(go: torch.Tensor, hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                    bias: Optional[torch.Tensor], class_weight: Optional[torch.Tensor], ignore_index: int,
                    label_smoothing: float, z_loss: float, softcap: float, chunk: int, need_hidden: bool,
                    need_weight: bool, need_bias: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gh, gw, gb = backward_none(go, hidden.contiguous(), weight.contiguous(), target.contiguous(), bias, class_weight,
                               ignore_index, label_smoothing, z_loss, softcap, chunk,
                               (need_hidden, need_weight, need_bias))
    empty = hidden.new_empty(0)
    return gh if gh is not None else empty, gw if gw is not None else empty.clone(), \
        gb if gb is not None else empty.clone()


@lce_backward_op.register_fake
def _(go, hidden, weight, target, bias, class_weight, ignore_index, label_smoothing, z_loss, softcap, chunk,
      need_hidden, need_weight, need_bias):
    return (hidden.new_empty(tuple(hidden.shape) if need_hidden else (0,)),
            hidden.new_empty(tuple(weight.shape) if need_weight else (0,)),
            hidden.new_empty((1, weight.shape[0]) if need_bias else (0,)))


def _setup(ctx, inputs, output):
    hidden, weight, target, bias, class_weight, ignore_index, reduction, ls, zl, cap, chunk = inputs[:11]
    ctx.set_materialize_grads(False)
    ctx.mark_non_differentiable(*output[1:])
    ctx.reduction = reduction
    ctx.args = (ignore_index, ls, zl, cap, chunk)
    ctx.has_bias = bias is not None
    if reduction == 0:
        ctx.save_for_backward(hidden, weight, target, bias, class_weight)
    else:
        ctx.save_for_backward(*output[1:])


def _backward(ctx, go, _gh, _gw, _gb):
    if ctx.reduction == 0:
        hidden, weight, target, bias, class_weight = ctx.saved_tensors
        need = (ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.has_bias and ctx.needs_input_grad[3])
        gh, gw, gb = lce_backward_op(go, hidden, weight, target, bias, class_weight, *ctx.args, *need)
    else:
        gh, gw, gb = ctx.saved_tensors
        for g in (gh, gw, gb):
            if g.numel():
                _ce.scale_op(g, go)
    return (gh if gh.numel() else None, gw if gw.numel() else None, None, gb.view(-1) if gb.numel() else None,
            None, None, None, None, None, None, None, None, None, None, None)


lce_op.register_autograd(_backward, setup_context=_setup)


# ---- eager autograd ----

def kept_grads(ctx, go, name):
    """The gradients an eager forward kept (ctx.grads: hidden's, weight's, bias's), times grad_output
    go in place, handed out once."""
    if ctx.grads is None:
        raise RuntimeError("softmax_tune.%s: backward through it a second time (retain_graph): the gradients it "
                           "kept were consumed by the first" % name)
    gh, gw, gb = ctx.grads
    ctx.grads = None
    for g in (gh, gw, gb):
        if g is not None:
            _ce.scale_(g, go)
    return gh, gw, gb


def shaped(ctx, gh, gw, gb):
    """The gradients in the shapes of hidden and weight (ctx.shapes) and bias (flat)."""
    hs, ws = ctx.shapes
    return (gh.view(hs) if gh is not None else None, gw.view(ws) if gw is not None else None,
            gb.view(-1) if gb is not None else None)


class _Eager(torch.autograd.Function):
    """Eager calls with a gradient: no dispatcher. Mean and sum keep the gradients on ctx (consumed by the one
    backward allowed; a second raises); none saves the inputs and computes the gradients in backward."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, h2, w2, t1, b2, class_weight, ignore_index, reduction, label_smoothing,
                z_loss, softcap, chunk, need, f32):
        loss, gh, gw, gb = forward(h2, w2, t1, b2, class_weight, ignore_index, reduction, label_smoothing, z_loss,
                                   softcap, chunk, need, f32)
        ctx.reduction, ctx.need, ctx.shapes = reduction, need, (hidden.shape, weight.shape)
        if reduction == "none":
            ctx.args = (ignore_index, label_smoothing, z_loss, softcap, chunk)
            ctx.save_for_backward(h2, w2, t1, b2, class_weight)
        else:
            ctx.grads = (gh, gw, gb)
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        if ctx.reduction == "none":
            h2, w2, t1, b2, class_weight = ctx.saved_tensors
            gh, gw, gb = backward_none(go, h2, w2, t1, b2, class_weight, *ctx.args, ctx.need)
        else:
            gh, gw, gb = kept_grads(ctx, go, "linear_cross_entropy")
        return shaped(ctx, gh, gw, gb) + (None,) * 13


# ---- the public function ----

def _bad(why):
    return ValueError("softmax_tune.linear_cross_entropy: " + why)


def check_options(reduction, label_smoothing, z_loss, softcap, name="linear_cross_entropy"):
    def bad(why):
        return ValueError("softmax_tune.%s: %s" % (name, why))
    if reduction not in REDUCTIONS:
        raise bad("reduction must be 'none', 'mean' or 'sum', got %r" % (reduction,))
    if not 0.0 <= label_smoothing <= 1.0:
        raise bad("label_smoothing must be in [0, 1], got %r" % (label_smoothing,))
    if not (z_loss >= 0.0 and math.isfinite(z_loss)):
        raise bad("z_loss must be finite and >= 0, got %r" % (z_loss,))
    if softcap is not None and not (softcap > 0.0 and math.isfinite(softcap)):
        raise bad("softcap must be None or finite and > 0, got %r" % (softcap,))


def validate(hidden, weight, target, bias, class_weight, name="linear_cross_entropy"):
    """Shapes, dtypes and devices of one call, one ValueError naming the value."""
    def bad(why):
        return ValueError("softmax_tune.%s: %s" % (name, why))
    if not (hidden.is_floating_point() and weight.is_floating_point()):
        raise bad("hidden and weight must be floating point, got %s and %s" % (hidden.dtype, weight.dtype))
    if hidden.dim() < 2 or weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise bad("hidden must be [..., D] and weight [V, D], got %s and %s"
                  % (tuple(hidden.shape), tuple(weight.shape)))
    if weight.dtype != hidden.dtype or weight.device != hidden.device:
        raise bad("weight is %s on %s, hidden %s on %s" % (weight.dtype, weight.device, hidden.dtype, hidden.device))
    n, v = hidden.numel() // max(1, hidden.shape[-1]), weight.shape[0]
    if n == 0 or hidden.shape[-1] == 0:
        raise bad("no rows (hidden shape %s)" % (tuple(hidden.shape),))
    if v < 2:
        raise bad("needs at least 2 classes, got V=%d" % v)
    if tuple(target.shape) != tuple(hidden.shape[:-1]):
        raise bad("target shape %s does not match hidden shape %s (expected %s)"
                  % (tuple(target.shape), tuple(hidden.shape), tuple(hidden.shape[:-1])))
    if target.dtype not in _LABELS:
        raise bad("target must be int32 or int64, got %s" % target.dtype)
    if target.device != hidden.device:
        raise bad("target is on %s, hidden on %s" % (target.device, hidden.device))
    if bias is not None and (tuple(bias.shape) != (v,) or bias.dtype != hidden.dtype or bias.device != hidden.device):
        raise bad("bias must be [V=%d] of hidden's dtype and device, got %s %s on %s"
                  % (v, bias.dtype, tuple(bias.shape), bias.device))
    if class_weight is not None and (tuple(class_weight.shape) != (v,) or not class_weight.is_floating_point()
                                     or class_weight.device != hidden.device):
        raise bad("class_weight must be a float tensor of V=%d classes on hidden's device, got %s %s on %s"
                  % (v, class_weight.dtype, tuple(class_weight.shape), class_weight.device))


def _fallback(hidden, weight, target, bias, class_weight, ignore_index, reduction, label_smoothing, z_loss, softcap):
    logits = F.linear(hidden, weight, bias)
    return _ce._fallback(logits, target, class_weight, ignore_index, reduction, label_smoothing, z_loss, softcap, True)


def linear_cross_entropy(hidden, weight, target, bias=None, class_weight=None, ignore_index=-100, reduction="mean",
                         label_smoothing=0.0, *, z_loss=0.0, softcap=None, chunk_rows=None):
    """cross_entropy(hidden @ weight.T + bias, target, class_weight, ignore_index=, reduction=, label_smoothing=,
    z_loss=, softcap=) with hidden [N, D] or [B, T, D], weight [V, D] (nn.Linear's), bias [V] or None, target
    [N] / [B, T] class indices (int32 or int64), without the [N, V] logits whole in memory: chunks of chunk_rows
    rows (default: from V and the memory free, chunk_rows()). Gradients of hidden, weight and bias (those that
    require grad). The loss is in hidden's dtype, float32 under torch.autocast. See docs/linear-cross-entropy.md."""
    check_options(reduction, label_smoothing, z_loss, softcap)
    validate(hidden, weight, target, bias, class_weight)
    why = ("hidden on the CPU" if not hidden.is_cuda else
           "hidden of %s" % hidden.dtype if hidden.dtype not in DTYPES else
           "class_weight together with label_smoothing" if class_weight is not None and label_smoothing > 0 else None)
    if why:
        _warn_once(why)
        return _fallback(hidden, weight, target, bias, class_weight, ignore_index, reduction, label_smoothing, z_loss,
                         softcap)
    if chunk_rows is not None and int(chunk_rows) < 1:
        raise _bad("chunk_rows must be >= 1, got %r" % (chunk_rows,))
    chunk = int(chunk_rows or 0)
    cw = class_weight.float().contiguous() if class_weight is not None else None
    d = hidden.shape[-1]
    t1 = target.reshape(-1)
    grad_on = torch.is_grad_enabled()
    need = (grad_on and hidden.requires_grad, grad_on and weight.requires_grad,
            grad_on and bias is not None and bias.requires_grad)
    f32 = _ce.autocast_f32(hidden)
    if torch.compiler.is_compiling():   # the custom op: autograd flows through the reshape into hidden
        nh, nw, nb = need if reduction != "none" else (False, False, False)
        loss, _, _, _ = lce_op(hidden.reshape(-1, d), weight, t1, bias, cw, ignore_index, REDUCTIONS[reduction],
                               label_smoothing, z_loss, softcap or 0.0, chunk, nh, nw, nb, f32)
    else:
        h2 = hidden.detach().reshape(-1, d).contiguous()
        w2 = weight.detach().contiguous()
        t1 = t1.contiguous()
        b2 = bias.detach().contiguous() if bias is not None else None
        if any(need):
            loss = _Eager.apply(hidden, weight, bias, h2, w2, t1, b2, cw, ignore_index, reduction, label_smoothing,
                                z_loss, softcap, chunk, need, f32)
        else:   # no gradient wanted: the loss-only kernel, one matmul a chunk
            loss, _, _, _ = forward(h2, w2, t1, b2, cw, ignore_index, reduction, label_smoothing, z_loss, softcap,
                                    chunk, need, f32)
    return loss.reshape(target.shape) if reduction == "none" else loss


class LinearCrossEntropyLoss(torch.nn.Module):
    """The loss of an LM head: forward(hidden, weight, target, bias=None) is
    linear_cross_entropy(hidden, weight, target, bias, ...) with this module's options."""

    def __init__(self, class_weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, *, z_loss=0.0,
                 softcap=None, chunk_rows=None):
        super().__init__()
        check_options(reduction, label_smoothing, z_loss, softcap)
        self.register_buffer("class_weight", class_weight)
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing
        self.z_loss, self.softcap, self.chunk_rows = z_loss, softcap, chunk_rows

    def forward(self, hidden, weight, target, bias=None):
        return linear_cross_entropy(hidden, weight, target, bias, self.class_weight, self.ignore_index, self.reduction,
                                    self.label_smoothing, z_loss=self.z_loss, softcap=self.softcap,
                                    chunk_rows=self.chunk_rows)

    def extra_repr(self):
        return "ignore_index=%s, reduction=%s, label_smoothing=%s, z_loss=%s, softcap=%s, chunk_rows=%s" % (
            self.ignore_index, self.reduction, self.label_smoothing, self.z_loss, self.softcap, self.chunk_rows)
