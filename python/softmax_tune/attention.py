"""attention.py — softmax_tune.attention_softmax: the softmax of attention scores with their scale,
softcap, mask and ALiBi bias fused in (st_attention_softmax; its gradient st_attention_softmax_backward).
See docs/attention-softmax.md.

    p = softmax_tune.attention_softmax(q @ k.transpose(-2, -1), scale=d ** -0.5, causal=True)
    out = p @ v

Eager calls with a gradient run an autograd.Function (_Eager); under torch.compile the custom ops
softmax_tune::attention_softmax and softmax_tune::attention_softmax_backward (fake impls,
register_autograd) run. Both launch on torch's current stream with no host sync, so CUDA graphs
capture them, and both reach the library through run_forward and run_backward: one C++ call each
(softmax_tune._C's attention_forward and attention_backward) where the C++ ops are built, else
ctypes (_lib.attention); the option checks, the autograd and the custom ops stay in Python. The
forward saves its output (and the scores only under a softcap: the gradient needs them there). A
mask or bias tensor goes to the kernel as it is (float32, float16, bfloat16 or bool; _additive),
broadcast by strides (bias kind tensor); both together become one float32 additive tensor. The
gradient needs no more (y is 0 where a key is masked).
Other inputs (CPU, float64, a tensor with alibi_slopes) run reference, the same
math in torch, with one warning."""

import math
import warnings
from typing import Optional

import torch

from . import _lib, _native
from .ops import DTYPES, _stream, device_of

OFFSET_MAX = 1 << 40   # the library's bound on the causal offset and the window
_warned = []
_cpp_forward = getattr(_native.C, "attention_forward", None)     # the C++ calls (csrc/ops.cpp), or None: ctypes
_cpp_backward = getattr(_native.C, "attention_backward", None)


def _warn_once(why):
    if not _warned:
        _warned.append(why)
        warnings.warn("softmax_tune.attention_softmax: %s: a torch implementation of the same math runs it (said "
                      "once per process)" % why, stacklevel=3)


# ---- the kernels ----

BIAS_TYPES = {**DTYPES, torch.bool: _lib.BIAS_BOOL}   # torch dtype -> st_attn_options.bias_type


def _options(scale, softcap, causal, window, offset, kl, slopes, bias):
    """st_attn_options; bias: [B, H, Q, K] of a BIAS_TYPES dtype with a key stride of 1 (an expanded
    view: strides 0 broadcast)."""
    return _lib.AttnOptions(scale, softcap, int(causal), offset, window, kl.data_ptr() if kl is not None else None,
                            slopes.data_ptr() if slopes is not None else None,
                            *((bias.data_ptr(),) + bias.stride()[:3] + (BIAS_TYPES[bias.dtype],) if bias is not None
                              else (None, 0, 0, 0, 0)))


def _launch(x, y, dy, dx, kl, slopes, scale, softcap, causal, window, offset, bias=None):
    """st_attention_softmax (dy None) or its backward on contiguous CUDA tensors, current stream."""
    opts = _options(scale, softcap, causal, window, offset, kl, slopes, bias)
    device = device_of(y)
    _lib.attention(device, DTYPES[y.dtype], opts, x.data_ptr() if x is not None else None, y.data_ptr(),
                   dy.data_ptr() if dy is not None else None, dx.data_ptr() if dx is not None else None,
                   tuple(y.shape), _stream(device))


def run_forward(x, kl, slopes, scale, softcap, causal, window, offset, bias=None):
    """y [B, H, Q, K] of scores x [B, H, Q, K] (any strides: copied when not contiguous) and the
    additive tensor bias (_additive's, or None): the C++ call where softmax_tune._C has it (None: a
    library without the attention kernels, or tensors not for it), else ctypes."""
    args = (x, kl, slopes, scale, softcap, causal, window, offset, bias)
    y = _cpp_forward(*args) if _cpp_forward is not None else None
    return y if y is not None else _forward_ctypes(*args)


def run_backward(x, y, dy, kl, scale, softcap, causal, window, offset):
    """dx from the forward's output y, its gradient dy and, under a softcap, the scores x: the C++
    call where softmax_tune._C has it, else ctypes (as run_forward)."""
    dx = _cpp_backward(x, y, dy, kl, scale, softcap, causal, window, offset) if _cpp_backward is not None else None
    return dx if dx is not None else _backward_ctypes(x, y, dy, kl, scale, softcap, causal, window, offset)


def _forward_ctypes(x, kl, slopes, scale, softcap, causal, window, offset, bias=None):
    """run_forward through ctypes."""
    x = x.contiguous()
    y = torch.empty_like(x)
    if bias is not None and bias.stride(3) != 1:   # the kernel reads it with a key stride of 1
        bias = bias.contiguous()
    _launch(x, y, None, None, kl, slopes, scale, softcap, causal, window, offset, bias)
    return y


def _backward_ctypes(x, y, dy, kl, scale, softcap, causal, window, offset):
    """run_backward through ctypes."""
    y = y.contiguous()
    dyc = dy.to(y.dtype).contiguous()
    dx = dyc if dyc.data_ptr() != dy.data_ptr() else torch.empty_like(y)   # a copy of ours may be overwritten
    x = x.contiguous() if softcap > 0 else None
    _launch(x, y, dyc, dx, kl, None, scale, softcap, causal, window, offset)
    return dx


def _save(ctx, x, y, kl, args):
    """What the gradient needs: y, the key lengths, the options and, under a softcap, the scores."""
    ctx.args = args
    ctx.save_for_backward(x if args[1] > 0 else None, y, kl)


def _grad(ctx, grad, backward):
    """dx, and no gradient for the other inputs (the bias tensor's is refused up front)."""
    x, y, kl = ctx.saved_tensors
    return (backward(x, y, grad, kl, *ctx.args),) + (None,) * 8


# ---- the custom ops (torch.compile) ----

@torch.library.custom_op("softmax_tune::attention_softmax", mutates_args=())
def attn_op(x: torch.Tensor, key_lengths: Optional[torch.Tensor], alibi_slopes: Optional[torch.Tensor], scale: float,
            softcap: float, causal: bool, window: int, offset: int, bias: Optional[torch.Tensor]) -> torch.Tensor:
    return run_forward(x, key_lengths, alibi_slopes, scale, softcap, causal, window, offset, bias)


@attn_op.register_fake
def _(x, key_lengths, alibi_slopes, scale, softcap, causal, window, offset, bias):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.custom_op("softmax_tune::attention_softmax_backward", mutates_args=())
def attn_bw_op(x: Optional[torch.Tensor], y: torch.Tensor, dy: torch.Tensor, key_lengths: Optional[torch.Tensor],
               scale: float, softcap: float, causal: bool, window: int, offset: int) -> torch.Tensor:
    return run_backward(x, y, dy, key_lengths, scale, softcap, causal, window, offset)


@attn_bw_op.register_fake
def _(x, y, dy, key_lengths, scale, softcap, causal, window, offset):
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


def _setup(ctx, inputs, output):
    _save(ctx, inputs[0], output, inputs[1], tuple(inputs[3:8]))


attn_op.register_autograd(lambda ctx, grad: _grad(ctx, grad, attn_bw_op), setup_context=_setup)


class _Eager(torch.autograd.Function):
    """Eager calls with a gradient: the custom op's forward and backward without the dispatcher.
    No double backward (once_differentiable raises)."""

    @staticmethod
    def forward(ctx, x, kl, slopes, scale, softcap, causal, window, offset, bias):
        y = run_forward(x, kl, slopes, scale, softcap, causal, window, offset, bias)
        _save(ctx, x, y, kl, (scale, softcap, causal, window, offset))
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        return _grad(ctx, grad, run_backward)


# ---- the same math in torch: other inputs, and the tests' reference ----

def _visible(shape, device, causal, window, offset, key_lengths):
    """Which keys each query row sees, [B or 1, 1, Q, K] bool (None: all)."""
    _, _, Q, K = shape
    q = torch.arange(Q, device=device)[:, None] + offset
    k = torch.arange(K, device=device)[None, :]
    keep = None
    if causal:
        keep = k <= q
    if window is not None and window >= 0:
        keep = (k >= q - window) if keep is None else keep & (k >= q - window)
    if key_lengths is not None:
        pad = k[None] < key_lengths.to(device).long()[:, None, None]
        return (pad if keep is None else keep[None] & pad)[:, None]
    return None if keep is None else keep[None, None]


def reference(x, scale=1.0, softcap=None, causal=False, window=None, key_lengths=None, alibi_slopes=None,
              causal_offset=None, mask=None, bias=None):
    """softmax(mask(bias + softcap(scale * x))) over x [B, H, Q, K] in torch, in float64 for float64
    x, else float32, returned in that type: a row that sees nothing is zeros, a NaN or +inf seen
    makes its row NaN (the kernel's rules). mask: bool (True: seen) or added; bias: added."""
    _, H, Q, K = x.shape
    offset = K - Q if causal_offset is None else causal_offset
    z = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32) * scale
    if softcap:
        z = softcap * torch.tanh(z / softcap)
    if alibi_slopes is not None:
        dist = (torch.arange(Q, device=x.device)[:, None] + offset - torch.arange(K, device=x.device)[None, :]).abs()
        z = z - alibi_slopes.to(x.device, z.dtype).reshape(1, H, 1, 1) * dist.to(z.dtype)
    if bias is not None:
        z = z + bias.to(z.dtype)
    keep = _visible(x.shape, x.device, causal, window, offset, key_lengths)
    if mask is not None and mask.dtype == torch.bool:
        keep = mask if keep is None else keep & mask
    elif mask is not None:
        z = z + mask.to(z.dtype)
    if keep is not None:
        z = z.masked_fill(~keep, -math.inf)
    m = z.detach().amax(-1, keepdim=True)
    e = torch.exp(z - torch.where(m == -math.inf, torch.zeros_like(m), m))   # a row of -inf only: zeros
    s = e.sum(-1, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


# ---- the public function ----

def _bad(what):
    return ValueError("softmax_tune.attention_softmax: " + what)


def _check_options(scale, softcap, causal, window, causal_offset, key_lengths, shape):
    """(scale, softcap (0: none), window (-1: none), offset) checked; ValueError naming the bad one."""
    if not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise _bad("scale must be a finite number, got %r" % (scale,))
    if softcap is not None and not (isinstance(softcap, (int, float)) and math.isfinite(softcap) and softcap > 0):
        raise _bad("softcap must be None or a finite number > 0, got %r" % (softcap,))
    if window is not None and (type(window) is not int or not 0 <= window <= OFFSET_MAX):
        raise _bad("window must be None or an int in [0, 2^40] (a left width), got %r" % (window,))
    if causal_offset is not None and (not isinstance(causal_offset, int) or abs(causal_offset) > OFFSET_MAX):
        raise _bad("causal_offset must be None (K - Q) or an int within 2^40 either way, got %r" % (causal_offset,))
    _, _, Q, K = shape
    return float(scale), float(softcap or 0.0), -1 if window is None else window, K - Q if causal_offset is None \
        else causal_offset


def _key_lengths(kl, B, K, device):
    """key_lengths as int32 [B] on device: a CUDA tensor is taken as it is (values clamped to [0, K]
    by the kernel: checking them would be a host sync); a list or CPU tensor is checked here."""
    if kl is None:
        return None
    if not isinstance(kl, torch.Tensor):
        try:
            kl = torch.tensor(list(kl), dtype=torch.int64)
        except (TypeError, ValueError, RuntimeError):
            raise _bad("key_lengths must be an int tensor or a list of B=%d ints, got %r" % (B, kl)) from None
    if kl.dtype not in (torch.int32, torch.int64):
        raise _bad("key_lengths must be int32 or int64, got %s" % kl.dtype)
    if tuple(kl.shape) != (B,):
        raise _bad("key_lengths must have shape [B] = [%d], got %s" % (B, list(kl.shape)))
    if kl.device.type == "cpu" and kl.numel():
        lo, hi = int(kl.min()), int(kl.max())
        if lo < 0 or hi > K:
            raise _bad("key_lengths must lie in [0, K] = [0, %d], got %s" % (K, lo if lo < 0 else hi))
    elif kl.device != device:
        raise _bad("key_lengths is on %s, scores on %s" % (kl.device, device))
    return kl.to(device=device, dtype=torch.int32).contiguous()


def _slopes(slopes, H, device):
    if slopes is None:
        return None
    if not isinstance(slopes, torch.Tensor):
        slopes = torch.tensor(list(slopes), dtype=torch.float32)
    if tuple(slopes.shape) != (H,) or not slopes.is_floating_point():
        raise _bad("alibi_slopes must be a float tensor of H=%d slopes, got %s %s" % (H, slopes.dtype,
                                                                                    list(slopes.shape)))
    if slopes.device.type != "cpu" and slopes.device != device:
        raise _bad("alibi_slopes is on %s, scores on %s" % (slopes.device, device))
    return slopes.to(device=device, dtype=torch.float32).contiguous()


def _check_tensor(name, t, shape):
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        raise _bad("%s must be a tensor, got %s" % (name, type(t).__name__))
    # broadcasts to shape itself (not torch.broadcast_shapes: its first call imports sympy, about 2 s)
    ok = t.dim() <= len(shape) and all(a in (1, b) for a, b in zip(reversed(t.shape), reversed(shape)))
    if not ok:
        raise _bad("%s of shape %s does not broadcast to the scores' [B, H, Q, K] = %s" % (name, list(t.shape),
                                                                                          list(shape)))
    if name == "bias" and not t.is_floating_point():
        raise _bad("bias must be a float tensor, got %s" % t.dtype)
    if name == "mask" and not (t.dtype == torch.bool or t.is_floating_point()):
        raise _bad("mask must be a bool (True: seen) or float (added) tensor, got %s" % t.dtype)


def _additive(mask, bias, shape, device):
    """mask and bias as the one tensor the kernel adds (bias kind tensor), expanded to shape [B, H, Q,
    K] with a key stride of 1 (a view: stride 0 where it broadcasts, a copy only along K where it
    broadcasts over K); None without either. One of them alone goes as it is where its dtype is in
    BIAS_TYPES and the library reads those (a bool mask: True seen); else, or both, one float32
    tensor: a bool mask as 0 where seen and -inf elsewhere, a float one as it is, the bias added (one
    float32 rounding when both are float)."""
    one = bias if mask is None else mask if bias is None else None
    if one is not None and one.dtype in BIAS_TYPES and (one.dtype == torch.float32 or _lib.attn_bias_native()):
        return _expanded(one.to(device), shape)
    t = None if bias is None else bias.to(device=device, dtype=torch.float32)
    if mask is not None:
        m = mask.to(device)
        m = torch.zeros(m.shape, dtype=torch.float32, device=device).masked_fill(~m, -math.inf) \
            if m.dtype == torch.bool else m.to(torch.float32)
        t = m if t is None else t + m
    return None if t is None else _expanded(t, shape)


def _expanded(t, shape):
    """t broadcast to shape [B, H, Q, K] with a key stride of 1 (a view, a copy only along K)."""
    t = t[(None,) * (4 - t.dim())]
    if t.shape[-1] != shape[-1] or t.stride(-1) != 1:
        t = t.expand(*t.shape[:-1], shape[-1]).contiguous()
    return t.expand(shape)


def _as4d(scores):
    if not isinstance(scores, torch.Tensor) or scores.dim() not in (3, 4):
        raise _bad("scores must be a tensor [B, H, Q, K] or [H, Q, K], got %s" % (
            list(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__))
    if not scores.is_floating_point():
        raise _bad("scores must be floating point, got %s" % scores.dtype)
    return scores if scores.dim() == 4 else scores.unsqueeze(0)


def attention_softmax(scores, *, scale=1.0, softcap=None, causal=False, window=None, key_lengths=None,
                      alibi_slopes=None, causal_offset=None, mask=None, bias=None):
    """softmax over the last dim of mask(bias + softcap(scale * scores)) for scores [B, H, Q, K] (or
    [H, Q, K]), in scores' dtype. Query q's diagonal is d = q + causal_offset (default K - Q);
    causal: keys k <= d; window=W: keys k >= d - W (with causal: FlashAttention's window (W, 0));
    key_lengths (int [B]): keys k < key_lengths[b] (with causal or window too: both); alibi_slopes ([H]):
    -slope[h] * |d - k| added; softcap: softcap * tanh(z / softcap). Masked outputs are 0, and a
    row that sees no key is all zeros (torch's softmax gives NaN). mask ([B or 1, H or 1, Q or 1,
    K or 1], bool True = seen, or float added) and bias (float, added, after the softcap) run in
    the kernel as one float32 additive tensor (-inf masks), read where the other masks leave a
    key visible; no gradient for them (one that requires grad is refused). CUDA
    float32/float16/bfloat16 scores run the library; others (and a mask or bias tensor together
    with alibi_slopes) the same math in torch (a warning). With CUDA key_lengths the values are not
    checked (a host sync): the kernel clamps them to [0, K]."""
    x = _as4d(scores)
    B, H, Q, K = x.shape
    scale, softcap, window, offset = _check_options(scale, softcap, causal, window, causal_offset, key_lengths, x.shape)
    kl = _key_lengths(key_lengths, B, K, x.device)
    slopes = _slopes(alibi_slopes, H, x.device)
    _check_tensor("mask", mask, x.shape)
    _check_tensor("bias", bias, x.shape)
    if x.numel() == 0:
        return scores * 0
    tensors = mask is not None or bias is not None
    why = ("scores on the CPU" if not x.is_cuda else "scores of %s" % x.dtype if x.dtype not in DTYPES else
           "a mask or bias tensor with alibi_slopes" if tensors and slopes is not None else None)
    if why:
        _warn_once(why)
        y = reference(x, scale, softcap, causal, window if window >= 0 else None, kl, slopes, offset,
                      None if mask is None else mask.to(x.device), None if bias is None else bias.to(x.device))
        return y.to(scores.dtype).reshape(scores.shape)
    for name, t in (("mask", mask), ("bias", bias)):
        if t is not None and t.requires_grad and torch.is_grad_enabled():
            raise _bad("%s requires grad: the kernel gives no gradient for the mask and bias tensors (detach it)" % name)
    args = (kl, slopes, scale, softcap, bool(causal), window, offset, _additive(mask, bias, x.shape, x.device))
    if torch.compiler.is_compiling():
        y = attn_op(x, *args)
    elif torch.is_grad_enabled() and x.requires_grad:
        y = _Eager.apply(x, *args)
    else:
        y = run_forward(x, *args)
    return y.reshape(scores.shape)


def config(scores, backward=False, *, causal=False, window=None, key_lengths=None, alibi_slopes=None,
           causal_offset=None, softcap=None, mask=None, bias=None):
    """The config string of the kernel attention_softmax (backward=True: its gradient) runs for
    these CUDA scores and mask and bias kinds (key_lengths, alibi_slopes, mask and bias: any tensor
    of the right shape on the scores' device)."""
    x = _as4d(scores)
    if not x.is_cuda or x.dtype not in DTYPES or x.numel() == 0:
        raise _bad("config of non-empty CUDA float32/float16/bfloat16 scores, got %s %s" % (x.device, x.dtype))
    _, softcap, window, offset = _check_options(1.0, softcap, causal, window, causal_offset, key_lengths, x.shape)
    kl = _key_lengths(key_lengths, x.shape[0], x.shape[3], x.device)
    slopes = _slopes(alibi_slopes, x.shape[1], x.device)
    _check_tensor("mask", mask, x.shape)
    _check_tensor("bias", bias, x.shape)
    opts = _options(1.0, softcap, causal, window, offset, kl, slopes, _additive(mask, bias, x.shape, x.device))
    return _lib.config_attention(device_of(x), DTYPES[x.dtype], opts, tuple(x.shape), backward)
