"""vocab_parallel.py — cross-entropy with the classes split over the ranks of a torch.distributed process
group, as Megatron splits an LM head under tensor parallelism: rank r holds the logits (or the
classifier's rows) of the classes [start_r, start_r + V_r), every rank the same labels. See
docs/linear-cross-entropy.md ("Vocab-parallel").

    loss = softmax_tune.vocab_parallel_cross_entropy(logits_shard, target, group)
    loss = softmax_tune.vocab_parallel_linear_cross_entropy(hidden, weight_shard, target, group)

Each rank reads its shard once for the statistics and exchanges only per-row statistics: one
all-gather of (lse of its shard, its label logit where it owns the label, and with label smoothing
the sum of its logits), N x 2 or 3 floats a rank, from which every rank has the whole row's lse,
label logit and loss. The gradient of a shard, softmax(z) - onehot with the global lse, comes from
the library's kernel in one more pass (the logits read, the gradient written): its class weights
are given one class a row, weight_i = s A_i exp(lse_shard_i - lse_i) (A_i the row's coefficient of
softmax: its class weight, plus 2 z_loss lse_i), each row labelled with its own class, so the
kernel's softmax term comes out already on the global lse; the two elements a row where the kernel
put a label term (that class, and on the rank that owns it the row's true label) are computed
again from their logits and written over. With label smoothing (the kernel takes no class weights
with it) the kernel runs with the shard's own lse and a second elementwise pass rescales its rows.
No extra pass over the logits otherwise: the statistics' pass reads them, the gradient's reads and
writes them, as the single-GPU op does (plus the read for the statistics).

The row math around the two kernels (the label's logit, the lse over the shards, the row losses, the
class weights, the two elements written over, label smoothing's rescale) is the library's too: the
row steps of st_vocab_parallel_step (templates/ce_vocab.cu), a launch each, in float64 where a
factor is formed.

The loss is in the logits' (hidden's) dtype, float32 under torch.autocast (as torch's F.cross_entropy there),
from the float64 row losses (cross_entropy's loss_dtype).

Eager only: under torch.compile these run as graph breaks (a process group is no op argument)."""

import importlib

import torch
from torch import distributed as dist

from . import _lib
from .ops import DTYPES, _stream, device_of

# the modules (the package's names cross_entropy and linear_cross_entropy are the functions)
_ce = importlib.import_module(__package__ + ".cross_entropy")
_lce = importlib.import_module(__package__ + ".linear_cross_entropy")

_LOCAL_IGNORE = -1   # the kernel's ignore_index here: every label it sees is one we made


class Shard:
    """This rank's classes: [start, start + size) of total; rank and world of the group."""

    def __init__(self, group, size, vocab_start, vocab_size, name):
        self.group = group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.size = int(size)
        self.start = self.rank * self.size if vocab_start is None else int(vocab_start)
        self.total = self.world * self.size if vocab_size is None else int(vocab_size)
        if not (0 <= self.start and self.start + self.size <= self.total):
            raise ValueError("softmax_tune.%s: the shard [%d, %d) is not within the %d classes"
                             % (name, self.start, self.start + self.size, self.total))


class Options:
    def __init__(self, ignore_index, reduction, label_smoothing, z_loss, softcap, class_weight):
        self.ignore_index, self.reduction = ignore_index, reduction
        self.eps, self.zl, self.cap = float(label_smoothing), float(z_loss), softcap
        self.cw = class_weight


def _nccl(group):
    return "nccl" in str(dist.get_backend(group)).lower()


def exchange(stats, group):
    """stats [n, k] (float32) of this rank -> [world, n, k], every rank's in rank order: one all-gather."""
    world = dist.get_world_size(group)
    if world == 1:
        return stats[None]
    stats = stats.contiguous()
    if _nccl(group):
        out = stats.new_empty((world * stats.shape[0], stats.shape[1]))
        dist.all_gather_into_tensor(out, stats, group=group)
        return out.view(world, *stats.shape)
    host = stats.cpu()   # other backends (gloo): through host memory
    parts = [torch.empty_like(host) for _ in range(world)]
    dist.all_gather(parts, host, group=group)
    return torch.stack(parts).to(stats.device)


def all_reduce(t, group):
    """t summed over the group, in place (over backends other than NCCL, gloo, through a float32 copy in host
    memory)."""
    if dist.get_world_size(group) == 1:
        return t
    if _nccl(group):
        dist.all_reduce(t, group=group)
        return t
    t32 = t.float().cpu()
    dist.all_reduce(t32, group=group)
    return t.copy_(t32)


class Steps:
    """The row steps (st_vocab_parallel_step, templates/ce_vocab.cu) of logits x [c, size] (this shard's,
    contiguous) and their labels t [c] (global classes): one st_vocab_args, each step's buffers set on it."""

    def __init__(self, x, t, sh, o, flag, device):
        self.x, self.t, self.o, self.flag, self.device = x, t, o, flag, device   # x and t: args holds their addresses
        self.args = _lib.VocabArgs(rows=x.shape[0], cols=x.shape[1], start=sh.start, total=sh.total, world=sh.world,
                                   ignore_index=o.ignore_index, label_smoothing=o.eps, z_loss=o.zl,
                                   softcap=o.cap or 0.0, label_type=_lce._LABELS[t.dtype],
                                   weight=o.cw.data_ptr() if o.cw is not None else None,
                                   bad_label=flag.tensor.data_ptr(), logits=x.data_ptr(), labels=t.data_ptr())

    def run(self, step, **bufs):
        for name, b in bufs.items():
            setattr(self.args, name, b.data_ptr() if isinstance(b, torch.Tensor) else b)
        _lib.vocab_parallel_step(self.device, DTYPES[self.x.dtype], step, self.args, _stream(self.device))

    def kernel(self, rows, labels, grad, smoothing, weight=None):
        """The library's cross-entropy kernel on rows of x (reduction sum: each row's own gradient)."""
        c = rows.stop - rows.start
        scratch = torch.empty(2, c, dtype=torch.float32, device=self.x.device)
        _lce._kernel(self.device, self.x[rows], labels, grad[rows] if grad is not None else None, scratch[0],
                     scratch[1], _LOCAL_IGNORE, smoothing, 0.0, self.o.cap, weight, self.flag)
        return scratch


class Stats:
    """A block of rows' statistics: lse of this shard (float32), and over all shards lse and the row's loss
    (float64: (1 - eps) w (lse - z_y) + eps (lse - mean z) + z_loss lse^2; 0 where ignored, NaN for a label
    outside [0, V))."""

    def __init__(self, lse_local, lse, loss):
        self.lse_local, self.lse, self.loss = lse_local, lse, loss


def statistics(x, t, sh, o, flag, device, lse=None, loss=None):
    """The statistics of logits x [c, size] (this shard's) for labels t: the loss-only kernel (the logits read
    once; with label smoothing, eps 1: its loss is lse - mean(z), hence the shard's sum of z), the label's logit
    where this shard owns it (step stats), one all-gather, the rows' lse and loss (step loss; into lse and loss
    when given)."""
    c = x.shape[0]
    f32 = dict(dtype=torch.float32, device=x.device)
    s = Steps(x, t, sh, o, flag, device)
    own = s.kernel(slice(0, c), _zeros(c, x.device), None, 1.0 if o.eps > 0 else 0.0)   # [loss, lse] of the shard
    stats = torch.empty(c, 3 if o.eps > 0 else 2, **f32)
    s.run("stats", lse_local=own[1], loss_local=own[0], stats=stats)
    got = exchange(stats, sh.group)
    lse = torch.empty(c, dtype=torch.float64, device=x.device) if lse is None else lse
    loss = torch.empty(c, dtype=torch.float64, device=x.device) if loss is None else loss
    s.run("loss", stats=got, lse=lse, loss=loss)
    return Stats(own[1], lse, loss)


def _zeros(c, device):
    """int32 zeros [c]: every row labelled 0 (the statistics' kernel; label smoothing's gradient kernel)."""
    return torch.zeros(c, dtype=torch.int32, device=device)


def gradient(x, g, t, st, sg, sh, o, flag, device):
    """The gradient of the rows' loss, times sg (float64: one factor, or one a row), with respect to this shard's
    logits x [c, size], into g [c, size] (x itself allowed but under label smoothing with a softcap)."""
    c, size = x.shape
    s = Steps(x, t, sh, o, flag, device)
    f32 = dict(dtype=torch.float32, device=x.device)
    a, w, saved = torch.empty(c, dtype=torch.float64, device=x.device), torch.empty(c, **f32), torch.empty(2, c, **f32)
    # without label smoothing, lab: a class a row (the kernel's labels); with it, delta: its term a row
    own = ({"lab": torch.empty(c, dtype=torch.int32, device=x.device)} if o.eps == 0
           else {"delta": torch.empty(c, **f32)})
    s.run("weights", lse_local=st.lse_local, lse=st.lse, sg=sg, sg_rows=sg.numel() > 1, a=a, w=w, saved=saved, **own)
    if o.eps == 0:   # weighted a: blocks of at most size rows
        for b0 in range(0, c, size):
            b1 = min(c, b0 + size)
            s.kernel(slice(b0, b1), own["lab"][b0:b1], g, 0.0, w[b0:])
    else:   # the kernel's p_shard - 1/size, rescaled to the global lse's gradient
        s.kernel(slice(0, c), _zeros(c, x.device), g, 1.0)
        s.run("rescale", grad=g)
    s.run("fix", grad=g)   # with the buffers "weights" set: a, saved, sg, lse_local


def _divisor(t, sh, o):
    """The mean's divisor (float64 [], the weights of the rows that count: not ignored, within [0, V)), or None."""
    if o.reduction != "mean":
        return None
    good = (t != o.ignore_index) & (t >= 0) & (t < sh.total)
    if o.cw is None:
        return good.sum(dtype=torch.float64)
    return torch.where(good, o.cw[t.clamp(0, sh.total - 1)].double(), 0.0).sum()


def _factor(divisor, device):
    """sg of a mean (1 / divisor; 0 when nothing counts) or of a sum (1), float64 [1]."""
    if divisor is None:
        return torch.ones(1, dtype=torch.float64, device=device)
    return torch.where(divisor > 0, 1.0 / divisor, torch.zeros_like(divisor)).reshape(1)


def _check(x, t, o, name, shard_dim=True):
    if x.device.type != "cuda" or x.dtype not in DTYPES:
        raise ValueError("softmax_tune.%s: CUDA float32, float16 or bfloat16 tensors only, got %s on %s"
                         % (name, x.dtype, x.device))
    if o.cw is not None and (o.cw.dim() != 1 or o.cw.device != x.device):
        raise ValueError("softmax_tune.%s: class_weight must be [V] (every class) on %s" % (name, x.device))


# ---- cross-entropy of sharded logits ----

class _CE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, x2, t1, sh, o, inplace):
        device = device_of(x2)
        flag = _flag(device)
        st = statistics(x2, t1, sh, o, flag, device)
        divisor = _divisor(t1, sh, o)
        loss = _lce.reduce(st.loss, o.reduction, divisor, _ce.loss_dtype(x2))
        ctx.sh, ctx.o, ctx.shape = sh, o, logits.shape
        if o.reduction == "none":
            ctx.save_for_backward(x2, t1)
            ctx.st = st
            return loss
        g = x2 if inplace and not (o.eps > 0 and o.cap) else torch.empty_like(x2)
        if g is x2:
            torch.autograd.graph.increment_version(logits)
        gradient(x2, g, t1, st, _factor(divisor, x2.device), sh, o, flag, device)
        ctx.g = g
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        if ctx.o.reduction == "none":
            x2, t1 = ctx.saved_tensors
            g = torch.empty_like(x2)
            device = device_of(x2)
            gradient(x2, g, t1, ctx.st, go.reshape(-1).double().contiguous(), ctx.sh, ctx.o, _ce._flag(device),
                     device)
        else:
            g = ctx.g
            if g is None:
                raise RuntimeError("softmax_tune.vocab_parallel_cross_entropy: backward through it a second time "
                                   "(retain_graph): the gradient it kept was consumed by the first")
            ctx.g = None
            _ce.scale_(g, go)
        return g.view(ctx.shape), None, None, None, None, None


def _flag(device):
    """The bad-label flag, after raising for a bad label an earlier call's kernel flagged (no sync)."""
    f = _ce._flag(device)
    if not _ce._capturing():
        _ce._check_lazily(f, device)
    return f


@torch.compiler.disable
def vocab_parallel_cross_entropy(logits, target, group=None, *, vocab_start=None, vocab_size=None, class_weight=None,
                                 ignore_index=-100, reduction="mean", label_smoothing=0.0, z_loss=0.0, softcap=None,
                                 inplace=False):
    """cross_entropy of logits split on the class dim over group's ranks: logits [N, V_r] or [B, T, V_r] this
    rank's classes [vocab_start, vocab_start + V_r) of vocab_size (default: rank * V_r of world * V_r, Megatron's
    split), target [N] / [B, T] the global class indices (the same on every rank), class_weight [V] (every
    class) or None. Returns the loss (the same on every rank, in logits' dtype; float32 under autocast);
    backward gives this rank's shard of the logits' gradient. inplace=True writes it into the logits (as
    cross_entropy's; not with reduction none, nor with label smoothing and a softcap together)."""
    name = "vocab_parallel_cross_entropy"
    _lce.check_options(reduction, label_smoothing, z_loss, softcap, name)
    o = Options(ignore_index, reduction, label_smoothing, z_loss, softcap,
                class_weight.float().contiguous() if class_weight is not None else None)
    if not logits.is_floating_point() or logits.dim() < 2 or tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ValueError("softmax_tune.%s: logits [..., V_r] and target of its shape but the last dim, got %s and %s"
                         % (name, tuple(logits.shape), tuple(target.shape)))
    if target.dtype not in (torch.int32, torch.int64) or target.device != logits.device:
        raise ValueError("softmax_tune.%s: target must be int32 or int64 on the logits' device" % name)
    _check(logits, target, o, name)
    vr = logits.shape[-1]
    if vr < 1 or logits.numel() == 0:
        raise ValueError("softmax_tune.%s: no rows or no classes (logits %s)" % (name, tuple(logits.shape)))
    sh = Shard(group, vr, vocab_start, vocab_size, name)
    if o.cw is not None and o.cw.shape[0] != sh.total:
        raise ValueError("softmax_tune.%s: class_weight must be [V=%d], got %s" % (name, sh.total, tuple(o.cw.shape)))
    t1 = target.reshape(-1).contiguous()
    need = torch.is_grad_enabled() and logits.requires_grad
    if need:
        if inplace and reduction != "none":
            no = _ce._refuse_inplace(logits)
            if no:
                raise RuntimeError("softmax_tune.%s: inplace=True refused: %s; pass inplace=False" % (name, no))
        x2 = logits.detach().reshape(-1, vr)
        x2 = x2 if x2.is_contiguous() else x2.contiguous()
        loss = _CE.apply(logits, x2, t1, sh, o, inplace and reduction != "none")
    else:
        x2 = logits.reshape(-1, vr).contiguous()
        device = device_of(x2)
        st = statistics(x2, t1, sh, o, _flag(device), device)
        loss = _lce.reduce(st.loss, reduction, _divisor(t1, sh, o), _ce.loss_dtype(x2))
    return loss.reshape(target.shape) if reduction == "none" else loss


# ---- linear cross-entropy with the classifier's rows sharded ----

def _lce_loop(h2, w, t1, bias, sh, o, chunk, need, sg_rows=None, saved=None):
    """The chunks of the sharded linear cross-entropy: logits [c, V_r] = h @ w.T (+ bias), their statistics
    (one all-gather a chunk) and, where need says, the gradient into the logits' buffer and its matmuls.
    sg_rows: the backward of reduction none (grad_output a row; saved: the forward's (lse_local, lse) of every
    row, no statistics then). Returns (rows' loss float64 [N] or None, grad_hidden (this shard's part),
    grad_weight, grad_bias [1, V_r], (lse_local, lse) of every row)."""
    n, d = h2.shape
    size = w.shape[0]
    dtype = h2.dtype
    device = device_of(h2)
    flag = _flag(device) if sg_rows is None else _ce._flag(device)   # a backward: the forward's flag is not ours
    two = o.eps > 0 and bool(o.cap)   # label smoothing under a softcap: the gradient beside the logits
    chunk = chunk if chunk and chunk > 0 else _lce.chunk_rows(n, size, dtype, device,
                                                              _lce._budget(device) // (2 if two else 1))
    chunk = min(chunk, n)
    grads = any(need)
    divisor = _divisor(t1, sh, o) if sg_rows is None else None
    sg = sg_rows if sg_rows is not None else _factor(divisor, h2.device)
    loss = None if sg_rows is not None else torch.empty(n, dtype=torch.float64, device=h2.device)
    keep = None
    if saved is None and not grads:   # the forward of reduction none: its backward's statistics
        keep = (torch.empty(n, dtype=torch.float32, device=h2.device), torch.empty(n, dtype=torch.float64,
                                                                                   device=h2.device))
    gh = torch.empty_like(h2) if need[0] else None
    gw = torch.empty_like(w) if need[1] else None
    gb32 = torch.zeros(size, dtype=torch.float32, device=h2.device) if need[2] else None
    buf = torch.empty(chunk * size, dtype=dtype, device=h2.device)
    gbuf = torch.empty(chunk * size, dtype=dtype, device=h2.device) if two and grads else None
    wt = w.t()
    for k, r0 in enumerate(range(0, n, chunk)):
        r1 = min(n, r0 + chunk)
        c = r1 - r0
        x = buf[:c * size].view(c, size)
        if bias is None:
            torch.mm(h2[r0:r1], wt, out=x)
        else:
            torch.addmm(bias, h2[r0:r1], wt, out=x)
        tb = t1[r0:r1]
        if saved is None:
            st = statistics(x, tb, sh, o, flag, device, keep[1][r0:r1] if keep is not None else None, loss[r0:r1])
            if keep is not None:
                keep[0][r0:r1] = st.lse_local
        else:
            st = Stats(saved[0][r0:r1], saved[1][r0:r1], None)
        if not grads:
            continue
        g = gbuf[:c * size].view(c, size) if gbuf is not None else x
        gradient(x, g, tb, st, sg if sg.numel() == 1 else sg[r0:r1], sh, o, flag, device)
        if need[0]:
            torch.mm(g, w, out=gh[r0:r1])
        if need[1]:
            if k == 0:
                torch.mm(g.t(), h2[r0:r1], out=gw)
            else:
                gw.addmm_(g.t(), h2[r0:r1])
        if need[2]:
            gb32 += g.sum(0, dtype=torch.float32)
    return loss, divisor, gh, gw, gb32.to(dtype).view(1, size) if gb32 is not None else None, keep


class _LCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, h2, w2, t1, b2, sh, o, chunk, need, sum_hidden):
        fwd_need = need if o.reduction != "none" else (False, False, False)
        loss, divisor, gh, gw, gb, keep = _lce_loop(h2, w2, t1, b2, sh, o, chunk, fwd_need)
        if gh is not None and sum_hidden:
            all_reduce(gh, sh.group)
        ctx.sh, ctx.o, ctx.chunk, ctx.need, ctx.sum_hidden = sh, o, chunk, need, sum_hidden
        ctx.shapes = (hidden.shape, weight.shape)
        if o.reduction == "none":
            ctx.save_for_backward(h2, w2, t1, b2, *keep)
        else:
            ctx.grads = (gh, gw, gb)
        return _lce.reduce(loss, o.reduction, divisor, _ce.loss_dtype(h2))

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        if ctx.o.reduction == "none":
            h2, w2, t1, b2, lse_local, lse = ctx.saved_tensors
            _, _, gh, gw, gb, _ = _lce_loop(h2, w2, t1, b2, ctx.sh, ctx.o, ctx.chunk, ctx.need,
                                            go.reshape(-1).double().contiguous(), (lse_local, lse))
            if gh is not None and ctx.sum_hidden:
                all_reduce(gh, ctx.sh.group)
        else:
            gh, gw, gb = _lce.kept_grads(ctx, go, "vocab_parallel_linear_cross_entropy")
        return _lce.shaped(ctx, gh, gw, gb) + (None,) * 9


@torch.compiler.disable
def vocab_parallel_linear_cross_entropy(hidden, weight, target, group=None, *, bias=None, vocab_start=None,
                                        vocab_size=None, class_weight=None, ignore_index=-100, reduction="mean",
                                        label_smoothing=0.0, z_loss=0.0, softcap=None, chunk_rows=None,
                                        sum_hidden_grad=True):
    """linear_cross_entropy with the classifier's rows split over group's ranks: hidden [N, D] or [B, T, D] (the
    same on every rank), weight [V_r, D] and bias [V_r] this rank's classes [vocab_start, vocab_start + V_r) of
    vocab_size (default: Megatron's split, as vocab_parallel_cross_entropy's), target the global class indices.
    Returns the loss (the same on every rank; float32 under autocast); backward gives the gradients of this
    rank's weight and bias shard and of hidden: summed over the ranks (an all-reduce) unless
    sum_hidden_grad=False (then this rank's part, for a caller whose own op sums it, as Megatron's copy to the
    tensor-parallel region does)."""
    name = "vocab_parallel_linear_cross_entropy"
    _lce.check_options(reduction, label_smoothing, z_loss, softcap, name)
    if chunk_rows is not None and int(chunk_rows) < 1:
        raise ValueError("softmax_tune.%s: chunk_rows must be >= 1, got %r" % (name, chunk_rows))
    o = Options(ignore_index, reduction, label_smoothing, z_loss, softcap,
                class_weight.float().contiguous() if class_weight is not None else None)
    _lce.validate(hidden, weight, target, bias, None, name)
    _check(hidden, target, o, name)
    sh = Shard(group, weight.shape[0], vocab_start, vocab_size, name)
    if o.cw is not None and o.cw.shape[0] != sh.total:
        raise ValueError("softmax_tune.%s: class_weight must be [V=%d], got %s" % (name, sh.total, tuple(o.cw.shape)))
    d = hidden.shape[-1]
    h2 = hidden.detach().reshape(-1, d).contiguous()
    w2 = weight.detach().contiguous()
    t1 = target.reshape(-1).contiguous()
    b2 = bias.detach().contiguous() if bias is not None else None
    grad_on = torch.is_grad_enabled()
    need = (grad_on and hidden.requires_grad, grad_on and weight.requires_grad,
            grad_on and bias is not None and bias.requires_grad)
    chunk = int(chunk_rows or 0)
    if any(need):
        loss = _LCE.apply(hidden, weight, bias, h2, w2, t1, b2, sh, o, chunk, need, sum_hidden_grad)
    else:
        rl, divisor, _, _, _, _ = _lce_loop(h2, w2, t1, b2, sh, o, chunk, need)
        loss = _lce.reduce(rl, reduction, divisor, _ce.loss_dtype(h2))
    return loss.reshape(target.shape) if reduction == "none" else loss
