"""ops.py — the torch.library custom ops behind softmax_tune.softmax, over the last dimension
(the C++ ops of softmax_tune._C where it loads, _native.py; else these, defined in Python):

    torch.ops.softmax_tune.softmax(Tensor x, bool log) -> Tensor
    torch.ops.softmax_tune.softmax_backward(Tensor y, Tensor dy, bool log) -> Tensor

each with a fake (meta) implementation, so torch.compile(fullgraph=True) traces them as single
nodes (no graph break), and the forward's autograd registered as the backward op (dx from the
output y: softmax dx = y*(dy - sum(dy*y)), log_softmax dx = dy - exp(y)*sum(dy)). Both run the
library on the current stream of the tensor's device, so CUDA graphs capture them. Outputs are
new contiguous tensors; non-contiguous inputs are copied first. CUDA float32/float16/bfloat16
run the library; anything else (a CPU tensor, float64) runs torch's own kernels. No double
backward (the backward op has no autograd of its own).
"""

import torch

from . import _lib, _native, fusion

DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}   # torch dtype -> st_dtype


def supported(x):
    """Whether the library computes softmax of x (else torch does)."""
    return x.is_cuda and x.dtype in DTYPES


# The current stream's handle as an int; the raw getter (what Inductor's generated code calls)
# skips building a torch.cuda.Stream object, a few microseconds of every call.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(device):
    return _raw_stream(device) if _raw_stream else torch.cuda.current_stream(device).cuda_stream


def device_of(x):
    """The ordinal of CUDA tensor x's device (cuda without an index: the current one)."""
    return x.device.index if x.device.index is not None else torch.cuda.current_device()


def _args(x):
    """(device ordinal, st_dtype, rows, cols, stream) of a contiguous CUDA tensor x."""
    device = device_of(x)
    cols = x.shape[-1]
    return device, DTYPES[x.dtype], x.numel() // cols, cols, _stream(device)


def run_forward(x, out, log):
    """out = softmax (log_softmax) of contiguous CUDA x over its last dim, into contiguous out."""
    device, dtype, rows, cols, stream = _args(x)
    _lib.forward(device, dtype, int(log), x.data_ptr(), out.data_ptr(), rows, cols, stream)
    return out


def run_backward(y, dy, log):
    """dx from the forward's output y and its gradient dy (any strides): the library, or torch's."""
    y = y.contiguous()
    if not supported(y) or y.numel() == 0:
        bw = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        return bw(dy.contiguous(), y, -1, y.dtype)
    dyc = dy.to(y.dtype).contiguous()
    dx = dyc if dyc.data_ptr() != dy.data_ptr() else torch.empty_like(y)   # a copy of ours may be overwritten
    device, dtype, rows, cols, stream = _args(y)
    _lib.backward(device, dtype, int(log), y.data_ptr(), dyc.data_ptr(), dx.data_ptr(), rows, cols, stream)
    return dx


if _native.C is not None:   # the C++ ops (softmax_tune/_native.py) own these names
    softmax = torch.ops.softmax_tune.softmax.default
    softmax_backward = torch.ops.softmax_tune.softmax_backward.default
else:
    @torch.library.custom_op("softmax_tune::softmax", mutates_args=())
    def softmax(x: torch.Tensor, log: bool) -> torch.Tensor:
        if not supported(x) or x.numel() == 0:
            return (torch._log_softmax if log else torch._softmax)(x.contiguous(), -1, False)
        x = x.contiguous()
        return run_forward(x, torch.empty_like(x), log)

    @softmax.register_fake
    def _(x, log):
        fusion.arm()
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    @torch.library.custom_op("softmax_tune::softmax_backward", mutates_args=())
    def softmax_backward(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
        return run_backward(y, dy, log)

    @softmax_backward.register_fake
    def _(y, dy, log):
        return torch.empty(y.shape, dtype=y.dtype, device=y.device)

    def _setup_context(ctx, inputs, output):
        ctx.log = inputs[1]
        ctx.save_for_backward(output)

    def _backward(ctx, grad):
        y, = ctx.saved_tensors
        return softmax_backward(y, grad, ctx.log), None

    softmax.register_autograd(_backward, setup_context=_setup_context)


class Eager(torch.autograd.Function):
    """The same forward and backward as the custom op's, for eager calls that need a gradient:
    no dispatcher on the way (the custom op costs ~30 us of host time a call, each way). The
    custom op stays what torch.compile traces. No double backward (once_differentiable raises)."""

    @staticmethod
    def forward(ctx, x, log):
        x = x.contiguous()
        y = run_forward(x, torch.empty_like(x), log)
        ctx.log = log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return run_backward(y, grad, ctx.log), None
