#!/usr/bin/env python3
"""vocab_parallel.py — the vocab-parallel table of issue 57: cross-entropy with the classes split over the ranks of a
tensor-parallel group (softmax_tune.vocab_parallel_cross_entropy and vocab_parallel_linear_cross_entropy), bf16,
mean over the rows not ignored, forward and backward, one rank a GPU of one host over NCCL; our op against its
shard's single-GPU time plus its collectives' time, and against Megatron-LM's and Cut Cross-Entropy's
vocab-parallel losses, every system checked against float64 on the whole problem before it is timed.

    python3 bench/vocab_parallel.py [--ops cross_entropy,linear_cross_entropy] [--models llama3,qwen2.5,gemma2]
        [--ranks 2] [--rounds 30] [--warmup 3] [--megatron DIR] [--cce DIR] [--out F]
    (on a GPU machine: bash bench/vocab_parallel_run.sh bench, with .carry/ and .carry_vp/ carried)

It starts its ranks itself (torch.multiprocessing.spawn, rank r on cuda:r, NCCL over localhost). Rank 0 writes
bench/results/vocab-parallel-<R>x<gpu>-<date>.tsv (or --out) after each problem and prints each row when measured:
op, N, V, dtype, ranks, system, ms, frac, ms_max_rank, note.
  Problems: cross_entropy: logits [N, V] split on V, [N, V/R] a rank (Megatron's split), logits ~ N(0, 2^2):
    Llama-3 (N 8192, V 128256), Qwen2.5 (N 8192, V 152064), Gemma-2 (N 4096, V 256000, logit softcap 30).
    linear_cross_entropy: hidden [N, D] on every rank, the classifier split on V, weight [V/R, D] a rank,
    hidden ~ N(0, 1), weight ~ N(0, (2/sqrt(D))^2): Llama-3 (N 4096, D 4096, V 128256), Gemma-2 (N 4096, D 3584,
    V 256000, softcap 30). Labels uniform over V, 5% of them -100 (ignored), int64, the same on every rank.
    Every rank builds the same seeded inputs; rank 0's are broadcast so they are the same bits.
  Systems (each forward + backward: torch.autograd.grad of the loss w.r.t. the shard, and hidden for the linear op):
    softmax_tune  our vocab-parallel op.
    shard_alone   our single-GPU op on the rank's shard alone (softmax_tune.cross_entropy of the [N, V/R] logits,
                  softmax_tune.linear_cross_entropy of the weight shard), labels mapped into the shard (t mod V/R,
                  the same rows ignored); no collectives.
    collectives   the collectives our op issued in its checked call (recorded by wrapping torch.distributed's
                  functions during it: for cross_entropy one all_gather_into_tensor of [N, 2] float32 a rank; for
                  the linear op one such all-gather of [rows, 2] a chunk and the all_reduce of grad_hidden [N, D]
                  bf16), replayed alone on buffers of the same sizes and dtypes.
    bound         not timed: shard_alone + collectives (ms).
    megatron      Megatron-LM's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py, from
                  --megatron DIR; stand-in modules give it our process group), per-token losses masked and
                  averaged in torch as Megatron's loss mask does; under a softcap, cap * tanh(x / cap) in torch
                  (bf16) first. cross_entropy only.
    cce           Cut Cross-Entropy's linear_cross_entropy with VocabParallelOptions (its default impl, cce;
                  grad_hidden all-reduced by it), from --cce DIR. linear_cross_entropy only.
  frac: bound / ms (softmax_tune's target: at least 1/1.1 = 0.909; for a peer's row the same ratio).
  Check: the loss against float64 (relative error at most 2^-6) and the gradients' error norm against the
    reference's (at most 0.05 for the logits' shard, room for Megatron's softcap rounded three times in bf16; 0.1
    for grad_hidden and the weight shard's: bf16 logits' rounding alone costs a few percent there), on every
    rank, float64 in chunks of rows; shard_alone against the shard's own problem. A system wrong on any rank is
    WRONG in its note (timed, not counted); one that raises on any rank is a row with ms '-' and the reason.
Timing: the rule of benchlib.interleaved_ms on each rank (median of --rounds rounds, every system once a round in
rotating order, L2 cleared before each call, then a GPU-side hold of benchlib.HOLD cycles), with a fixed number of
warm-up rounds (so every rank issues the same collectives) and a barrier before the first timed round. ms: rank
0's median; ms_max_rank: the largest median over the ranks.
"""

import argparse
import datetime
import gc
import importlib
import math
import os
import socket
import sys
import time
import types

import torch
import torch.distributed as dist

from benchlib import HOLD, peer_commit, timed_rounds, write

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
IGNORE = -100
CE_MODELS = {"llama3": ("Llama-3", 8192, 128256, None), "qwen2.5": ("Qwen2.5", 8192, 152064, None),
             "gemma2": ("Gemma-2", 4096, 256000, 30.0)}
LCE_MODELS = {"llama3": ("Llama-3", 4096, 4096, 128256, None), "gemma2": ("Gemma-2", 4096, 3584, 256000, 30.0)}
OPS = ("cross_entropy", "linear_cross_entropy")
COLUMNS = "op\tN\tV\tdtype\tranks\tsystem\tms\tfrac\tms_max_rank\tnote"
TARGET = 1 / 1.1
LOSS_TOL, CE_GRAD_TOL, LCE_GRAD_TOL = 2.0 ** -6, 0.05, 0.1


class Ctx:
    """This rank: rank, world, group, args, peers {name: (module or None, commit or why)}."""

    def __init__(self, rank, world, args):
        self.rank, self.world, self.args = rank, world, args
        self.group = dist.group.WORLD
        self.peers = {}

    def say(self, text):
        if self.rank == 0:
            print(text, flush=True)


def first_line(e):
    return ("%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0]))[:240]


# ---- the peers ----

def _module(name, path=None, **attrs):
    """A module registered in sys.modules: a package over path, or a stand-in holding attrs whose other names are
    functions that raise when called (so an import of a name we did not stand in for still loads the file)."""
    m = types.ModuleType(name)
    if path is not None:
        m.__path__ = [path]
    for k, v in attrs.items():
        setattr(m, k, v)
    if path is None:
        def missing(attr):
            if attr.startswith("__"):
                raise AttributeError(attr)

            def fail(*a, **k):
                raise NotImplementedError("the bench's stand-in %s has no %s" % (name, attr))
            return fail
        m.__getattr__ = missing
    sys.modules[name] = m
    parent, _, leaf = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], leaf, m)
    return m


def load_megatron(root):
    """megatron.core.tensor_parallel.cross_entropy from a copy of that file and its utils.py under root, the package
    __init__s not run: megatron.core.parallel_state and megatron.core.utils are our stand-ins (the default group).
    (module, commit) or (None, why)."""
    root = os.path.abspath(root)
    tp = os.path.join(root, "megatron", "core", "tensor_parallel")
    if not os.path.isfile(os.path.join(tp, "cross_entropy.py")):
        return None, "no megatron/core/tensor_parallel/cross_entropy.py under %s" % root
    world = lambda *a, **k: dist.group.WORLD  # noqa: E731
    rank_of = lambda group=None, *a, **k: dist.get_rank(group)  # noqa: E731
    size_of = lambda group=None, *a, **k: dist.get_world_size(group)  # noqa: E731
    _module("megatron", os.path.join(root, "megatron"))
    _module("megatron.core", os.path.join(root, "megatron", "core"))
    _module("megatron.core.parallel_state", get_tensor_model_parallel_group=world,
            get_tensor_model_parallel_rank=lambda: dist.get_rank(), get_tensor_model_parallel_world_size=lambda:
            dist.get_world_size())
    _module("megatron.core.utils", get_pg_rank=rank_of, get_pg_size=size_of, divide=lambda a, b: a // b,
            get_tensor_model_parallel_group_if_none=lambda g=None, *a, **k: g if g is not None else dist.group.WORLD,
            is_torch_min_version=lambda *a, **k: True)
    _module("megatron.core.tensor_parallel", tp)
    try:
        mod = importlib.import_module("megatron.core.tensor_parallel.cross_entropy")
        mod.vocab_parallel_cross_entropy  # noqa: B018  (the function this bench calls)
    except Exception as e:  # noqa: BLE001
        return None, "import megatron.core.tensor_parallel.cross_entropy: %s" % first_line(e)
    return mod, peer_commit(root)


def load_cce(root):
    """cut_cross_entropy from a copy of its sources under root: (module, commit) or (None, why)."""
    root = os.path.abspath(root)
    if not os.path.isdir(os.path.join(root, "cut_cross_entropy")):
        return None, "no cut_cross_entropy under %s" % root
    sys.path.insert(0, root)
    try:
        mod = importlib.import_module("cut_cross_entropy")
        mod.VocabParallelOptions, mod.linear_cross_entropy  # noqa: B018
    except Exception as e:  # noqa: BLE001
        return None, "import cut_cross_entropy: %s" % first_line(e)
    return mod, peer_commit(root)


# ---- inputs, the same on every rank ----

def seeded(ctx, shape, seed, scale, dtype):
    dev = torch.device("cuda", torch.cuda.current_device())
    g = torch.Generator(device=dev).manual_seed(seed)
    x = torch.randn(shape, generator=g, device=dev).mul_(scale).to(dtype)
    dist.broadcast(x, 0, group=ctx.group)
    return x


def labels(ctx, n, v, seed):
    dev = torch.device("cuda", torch.cuda.current_device())
    g = torch.Generator(device=dev).manual_seed(seed)
    t = torch.randint(0, v, (n,), generator=g, device=dev)
    t[torch.rand(n, generator=g, device=dev) < 0.05] = IGNORE
    dist.broadcast(t, 0, group=ctx.group)
    return t


def local_labels(t, size):
    """Labels of a shard's own problem: the same rows ignored, the others t mod size."""
    return torch.where(t == IGNORE, t, t % size)


# ---- float64 references, in chunks of rows ----

def _cap64(z, cap):
    """(cap * tanh(z / cap), its derivative) of float64 z (consumed), or (z, None) without a cap."""
    if not cap:
        return z, None
    th = torch.tanh(z.div_(cap))
    del z
    d = torch.mul(th, th).neg_().add_(1.0)
    return th.mul_(cap), d


def ce_reference(x, t, cap, rows=512):
    """float64 (mean loss, lse [N], count of rows not ignored) of logits x [N, V] and labels t."""
    n = x.shape[0]
    valid = t != IGNORE
    count = valid.sum().double()
    lse = torch.empty(n, dtype=torch.float64, device=x.device)
    total = torch.zeros((), dtype=torch.float64, device=x.device)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        z, _ = _cap64(x[r0:r1].double(), cap)
        lse[r0:r1] = torch.logsumexp(z, 1)
        zy = z.gather(1, t[r0:r1].clamp(min=0)[:, None])[:, 0]
        total += torch.where(valid[r0:r1], lse[r0:r1] - zy, torch.zeros_like(zy)).sum()
        del z
    return total / count, lse, count


def ce_grad_err(x, t, cap, ref, g, start, rows=512):
    """||g - dloss/dx[:, start:start + size]|| / ||the reference's||, float64, g [N, size] a shard's gradient."""
    _, lse, count = ref
    n, size = g.shape
    valid = t != IGNORE
    loc = t - start
    owned = valid & (loc >= 0) & (loc < size)
    num = torch.zeros((), dtype=torch.float64, device=x.device)
    den = torch.zeros_like(num)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        z, d = _cap64(x[r0:r1, start:start + size].double(), cap)
        p = z.sub_(lse[r0:r1, None]).exp_()
        p.scatter_add_(1, loc[r0:r1].clamp(0, size - 1)[:, None], -owned[r0:r1].double()[:, None])
        p.mul_((valid[r0:r1].double() / count)[:, None])
        if d is not None:
            p.mul_(d)
            del d
        den += p.square().sum()
        num += p.sub_(g[r0:r1].double()).square_().sum()
        del p
    return float((num / den.clamp_min(1e-300)).sqrt())


def rel(got, want, rows=8192):
    """||got - want|| / ||want|| (float64, in blocks of rows)."""
    num = 0.0
    for r0 in range(0, want.shape[0], rows):
        num += float((got[r0:r0 + rows].double() - want[r0:r0 + rows]).square().sum())
    return math.sqrt(num) / max(float(want.norm()), 1e-300)


def loss_err(loss, want):
    return abs(float(loss.detach().double()) - float(want)) / abs(float(want))


def ce_check(full, xkey, rkey, t, cap, start):
    """check((loss, g)) -> (ok, what) against ce_reference's full[rkey] of logits full[xkey], g the shard at start
    (looked up when called: full is cleared before the timing)."""
    def check(out):
        ref = full[rkey]
        el, eg = loss_err(out[0], ref[0]), ce_grad_err(full[xkey], t, cap, ref, out[1], start)
        return el <= LOSS_TOL and eg <= CE_GRAD_TOL, "loss %.2e, grad %.2e" % (el, eg)
    return check


def lce_check(full, rkey):
    """check((loss, gh, gw)) -> (ok, what) against linear_cross_entropy.reference's full[rkey]."""
    def check(out):
        ref = full[rkey]
        el, eh, ew = loss_err(out[0], ref[0]), rel(out[1], ref[1]), rel(out[2], ref[2])
        ok = el <= LOSS_TOL and eh <= LCE_GRAD_TOL and ew <= LCE_GRAD_TOL
        return ok, "loss %.2e, grad_hidden %.2e, grad_weight %.2e" % (el, eh, ew)
    return check


# ---- the collectives our op issues, recorded and replayed ----

RECORDED = ("all_reduce", "all_gather_into_tensor", "all_gather", "reduce_scatter_tensor", "broadcast",
            "all_to_all_single", "_all_gather_base", "_reduce_scatter_base")


def _spec(v):
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(v.shape), v.dtype)
    if isinstance(v, (list, tuple)) and v and all(isinstance(u, torch.Tensor) for u in v):
        return ("tensors", [_spec(u) for u in v])
    return ("value", v)


def recorded(fn, calls):
    """fn(), with each call of torch.distributed's collectives (RECORDED) appended to calls as (name, arg specs,
    kwarg specs)."""
    saved = {}
    for name in RECORDED:
        f = getattr(dist, name, None)
        if f is None:
            continue
        saved[name] = f

        def wrap(*a, _f=f, _name=name, **k):
            calls.append((_name, [_spec(v) for v in a], {key: _spec(v) for key, v in k.items()}))
            return _f(*a, **k)
        setattr(dist, name, wrap)
    try:
        return fn()
    finally:
        for name, f in saved.items():
            setattr(dist, name, f)


def _make(spec):
    if spec[0] == "tensor":
        return torch.zeros(spec[1], dtype=spec[2], device="cuda")
    if spec[0] == "tensors":
        return [_make(s) for s in spec[1]]
    return spec[1]


def replay(calls):
    """A function issuing calls again, on zeroed buffers of the same shapes and dtypes made once."""
    made = [(name, [_make(s) for s in a], {k: _make(s) for k, s in kw.items()}) for name, a, kw in calls]

    def run():
        for name, a, kw in made:
            work = getattr(dist, name)(*a, **kw)
            if work is not None and hasattr(work, "wait"):
                work.wait()
    return run


def describe(calls):
    """'name [shape] dtype <- ... x count; ...' of recorded calls."""
    def one(name, a):
        parts = []
        for s in a:
            if s[0] == "tensor":
                parts.append("[%s] %s" % (", ".join(map(str, s[1])), str(s[2]).replace("torch.", "")))
            elif s[0] == "tensors":
                parts.append("%d x [%s]" % (len(s[1]), ", ".join(map(str, s[1][0][1]))))
        return "%s(%s)" % (name, ", ".join(parts))
    seen = []
    for name, a, _ in calls:
        d = one(name, a)
        if seen and seen[-1][0] == d:
            seen[-1][1] += 1
        else:
            seen.append([d, 1])
    return "; ".join(d + (" x%d" % k if k > 1 else "") for d, k in seen) or "none"


# ---- timing ----

def barrier(ctx):
    one = torch.ones(1, device="cuda")
    dist.all_reduce(one, group=ctx.group)
    torch.cuda.synchronize()


def interleaved(ctx, fns, rounds, warmup):
    """Median ms of each of fns on this rank: benchlib.interleaved_ms's rule with a fixed number of warm-up rounds
    (the same on every rank, so every rank issues the same collectives) and a barrier before the timed rounds."""
    for _ in range(warmup):
        for f in fns:
            f()
    torch.cuda.synchronize()
    barrier(ctx)
    return timed_rounds(fns, rounds)


def gathered(ctx, obj):
    out = [None] * ctx.world
    dist.all_gather_object(out, obj, group=ctx.group)
    return out


# ---- one problem: check every system, time those that ran on every rank, rank 0's rows ----

def fresh():
    gc.collect()
    torch.cuda.empty_cache()


def check_all(ctx, label, systems):
    """Each system (name, fn, check) called once and checked: [(ran, ok, what)] of this rank, and the collectives
    the first (softmax_tune) issued."""
    status, calls = [], []
    for i, (name, fn, check) in enumerate(systems):
        t0 = time.time()
        try:
            out = recorded(fn, calls) if i == 0 else fn()
            ok, what = check(out)
            del out
            status.append((True, ok, what))
        except Exception as e:  # noqa: BLE001  (a system that cannot run is a row with '-')
            status.append((False, False, first_line(e)))
        ctx.say("# %s %s: %s (rank 0: %s; first call and check %.1f s)" % (
            label, name, "ok" if status[-1][1] else "WRONG" if status[-1][0] else "failed", status[-1][2],
            time.time() - t0))
        fresh()
    return status, calls


def merged(statuses):
    """Over the ranks' statuses of one system: (ran on all, ok on all, what: the first failing rank's, else rank
    0's)."""
    ran = all(s[0] for s in statuses)
    ok = ran and all(s[1] for s in statuses)
    for r, s in enumerate(statuses):
        if not s[0] or not s[1]:
            return ran, ok, "rank %d: %s" % (r, s[2])
    return ran, ok, statuses[0][2]


def fmt(ms):
    return "-" if ms is None else "%.4f" % ms


def table_rows(key, note, names, result, per, peers_missing):
    """The TSV rows of one problem (rank 0), printed: result {name: (ms rank 0, max over ranks, ok, what) or
    (None, None, False, why)}, per {name: [ms of each rank]} of those timed; bound = shard_alone + collectives
    (rank 0's, and the largest sum over the ranks); frac = bound / ms."""
    bound = None
    if "shard_alone" in per and "collectives" in per:
        sums = [a + b for a, b in zip(per["shard_alone"], per["collectives"])]
        bound = (sums[0], max(sums))
    rows = []

    def row(name, ms, frac, mx, what):
        line = "\t".join(key + [name, fmt(ms), "-" if frac is None else "%.3f" % frac, fmt(mx), what])
        print(line, flush=True)
        rows.append(line)
    for name in names:
        ms, mx, ok, what = result[name]
        frac = bound[0] / ms if bound and ms and name not in ("shard_alone", "collectives") else None
        if ms is None:
            what = "not run: " + what
        elif not ok:
            what = "WRONG: " + what
        elif what:
            what = "checked (rank 0): " + what
        row(name, ms, frac, mx, note + ("; " + what if what else ""))
        if name == "collectives":
            row("bound", bound[0] if bound else None, None, bound[1] if bound else None,
                "%s; shard_alone + collectives" % note)
    for name, why in peers_missing:
        row(name, None, None, None, "%s; not run: %s" % (note, why))
    return rows, bound


def verdict_line(label, result, bound):
    """The targets: softmax_tune's frac at least 0.909; faster than each peer that ran and passed."""
    ours = result.get("softmax_tune")
    if not ours or ours[0] is None or not ours[2]:
        return "# %s: softmax_tune not timed or WRONG: no verdict" % label
    parts = []
    if bound:
        parts.append("softmax_tune frac %.3f (target >= %.3f: %s)" % (bound[0] / ours[0], TARGET,
                                                                       "met" if bound[0] / ours[0] >= TARGET else
                                                                       "MISSED"))
    for name in ("megatron", "cce"):
        p = result.get(name)
        if p and p[0] is not None and p[2]:
            faster = "faster" if ours[0] < p[0] else "SLOWER"
            parts.append("%s %.2fx softmax_tune's time (softmax_tune %s)" % (name, p[0] / ours[0], faster))
    return "# %s: %s" % (label, "; ".join(parts))


def run_problem(ctx, key, note, label, systems, peers_missing, full):
    """systems: (name, fn, check), softmax_tune first then shard_alone; full: the references and whole inputs,
    cleared after the checks. Returns rank 0's rows."""
    status, calls = check_all(ctx, label, systems)
    full.clear()
    fresh()
    said = describe(calls)
    everyone = gathered(ctx, (status, said))   # picklable: the calls hold the process group
    merge = [merged([e[0][i] for e in everyone]) for i in range(len(systems))]
    result, per, names, fns = {}, {}, [], []
    for (name, fn, _), (ran, ok, what) in zip(systems, merge):
        names.append(name)
        result[name] = (None, None, False, what)
        if ran:
            fns.append((name, fn, ok, what))
        if name == "shard_alone":
            names.append("collectives")
            same = all(e[1] == said for e in everyone)
            if calls and same:
                fns.append(("collectives", replay(calls), True, ""))
            result["collectives"] = (None, None, False, "none recorded" if not calls else
                                     "the ranks recorded different collectives" if not same else "")
    ctx.say("# %s: the collectives of softmax_tune (rank 0, one forward + backward): %s" % (label, said))
    rows = ["# %s: the collectives of softmax_tune (rank 0, one forward + backward): %s" % (label, said)]
    if fns:
        ms = interleaved(ctx, [f for _, f, _, _ in fns], ctx.args.rounds, ctx.args.warmup)
        every = gathered(ctx, ms)
        for i, (name, _, ok, what) in enumerate(fns):
            per[name] = [e[i] for e in every]
            result[name] = (per[name][0], max(per[name]), ok, what)
    if ctx.rank != 0:
        return []
    got, bound = table_rows(key, note, names, result, per, peers_missing)
    line = verdict_line(label, result, bound)
    print(line, flush=True)
    return rows + got + [line]


def grads(loss, wrt):
    return (loss,) + tuple(torch.autograd.grad(loss, wrt))


def ce_problem(ctx, mkey):
    import softmax_tune
    name, n, v, cap = CE_MODELS[mkey]
    size = v // ctx.world
    start = ctx.rank * size
    label = "cross_entropy %s N %d V %d" % (name, n, v)
    t0 = time.time()
    x = seeded(ctx, (n, v), n + v, 2.0, torch.bfloat16)
    t = labels(ctx, n, v, n + v + 1)
    xs = x[:, start:start + size].contiguous().requires_grad_()
    tl = local_labels(t, size)
    full = {"x": x, "xs": xs.detach(), "ref": ce_reference(x, t, cap), "local": ce_reference(xs.detach(), tl, cap)}
    del x
    ctx.say("# %s: inputs and float64 references in %.1f s" % (label, time.time() - t0))
    g = ctx.group
    systems = [("softmax_tune", lambda: grads(softmax_tune.vocab_parallel_cross_entropy(xs, t, g, softcap=cap), [xs]),
                ce_check(full, "x", "ref", t, cap, start)),
               ("shard_alone", lambda: grads(softmax_tune.cross_entropy(xs, tl, softcap=cap), [xs]),
                ce_check(full, "xs", "local", tl, cap, 0))]
    missing = []
    mod, why = ctx.peers.get("megatron", (None, "not asked for"))
    if mod is not None:
        mask = (t != IGNORE).float()
        count = mask.sum()

        def megatron():
            z = torch.tanh(xs / cap) * cap if cap else xs
            loss = (mod.vocab_parallel_cross_entropy(z, t) * mask).sum() / count
            return grads(loss, [xs])
        systems.append(("megatron", megatron, ce_check(full, "x", "ref", t, cap, start)))
    else:
        missing.append(("megatron", why))
    key = ["cross_entropy", str(n), str(v), "bf16", str(ctx.world)]
    note = name + (", softcap %g" % cap if cap else "")
    return run_problem(ctx, key, note, label, systems, missing, full)


def lce_problem(ctx, mkey):
    import softmax_tune
    from linear_cross_entropy import reference as lce_reference   # after softmax_tune: it imports the package
    name, n, d, v, cap = LCE_MODELS[mkey]
    size = v // ctx.world
    start = ctx.rank * size
    label = "linear_cross_entropy %s N %d D %d V %d" % (name, n, d, v)
    t0 = time.time()
    h = seeded(ctx, (n, d), n + d, 1.0, torch.bfloat16).requires_grad_()
    w = seeded(ctx, (v, d), v + d, 2.0 / d ** 0.5, torch.bfloat16)
    t = labels(ctx, n, v, n + v + 2)
    ws = w[start:start + size].clone().requires_grad_()
    tl = local_labels(t, size)
    full = {"ref": lce_reference(h.detach(), w, t, cap, 512, start, size)}
    del w
    fresh()
    full["local"] = lce_reference(h.detach(), ws.detach(), tl, cap, 512, 0, size)
    ctx.say("# %s: inputs and float64 references in %.1f s" % (label, time.time() - t0))
    g = ctx.group
    vp = softmax_tune.vocab_parallel_linear_cross_entropy
    systems = [("softmax_tune", lambda: grads(vp(h, ws, t, g, softcap=cap), [h, ws]), lce_check(full, "ref")),
               ("shard_alone", lambda: grads(softmax_tune.linear_cross_entropy(h, ws, tl, softcap=cap), [h, ws]),
                lce_check(full, "local"))]
    missing = []
    mod, why = ctx.peers.get("cce", (None, "not asked for"))
    if mod is not None:
        opts = mod.VocabParallelOptions(start, start + size, g)
        systems.append(("cce", lambda: grads(mod.linear_cross_entropy(h, ws, t, softcap=cap, ignore_index=IGNORE,
                                                                      vocab_parallel_options=opts), [h, ws]),
                        lce_check(full, "ref")))
    else:
        missing.append(("cce", why))
    key = ["linear_cross_entropy", str(n), str(v), "bf16", str(ctx.world)]
    note = "%s, D %d%s" % (name, d, ", softcap %g" % cap if cap else "")
    return run_problem(ctx, key, note, label, systems, missing, full)


# ---- the table ----

def tree():
    for env in ("ST_TREE", "SOFTMAX_TUNE_TREE"):
        if os.environ.get(env):
            return os.environ[env]
    try:
        with open(os.path.join(ROOT, ".carry", "TREE")) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def header(ctx):
    import softmax_tune
    import triton
    dev = torch.cuda.get_device_properties(0)
    try:
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001
        nccl = "?"
    try:
        lib = softmax_tune.library_path()
        cpp = "the C++ ops" if getattr(softmax_tune._native, "C", None) is not None else "the ctypes path"
    except Exception as e:  # noqa: BLE001
        lib, cpp = "?", first_line(e)
    peers = "; ".join("%s: %s" % (k, why if mod else "not run (%s)" % why) for k, (mod, why) in ctx.peers.items())
    a = ctx.args
    return [
        "# %d x %s (%d SMs), torch %s, triton %s, NCCL %s, %s, tree %s." % (
            ctx.world, dev.name, dev.multi_processor_count, torch.__version__, triton.__version__, nccl,
            datetime.date.today().isoformat(), tree()),
        "# bench/vocab_parallel.py: %d ranks (torch.multiprocessing.spawn, rank r on cuda:r, NCCL); softmax_tune %s "
        "through %s; SOFTMAX_TUNE_TABLE=%s." % (ctx.world, lib, cpp,
                                                os.environ.get("SOFTMAX_TUNE_TABLE", "(built in)")),
        "# Timing: on each rank the rule of benchlib.interleaved_ms: median of %d rounds, every system once a round in "
        "rotating order (the same on every rank), L2 cleared before each call, then a GPU-side hold of %d cycles; %d "
        "warm-up rounds, then a barrier. ms: rank 0's median; ms_max_rank: the largest median over the ranks." % (
            a.rounds, HOLD, a.warmup),
        "# Loss: bf16, mean over the rows not ignored (5%% of labels -100, int64), forward and backward (the gradient "
        "of the logits' shard; for the linear op of hidden, summed over the ranks, and of the weight shard), "
        "Megatron's split (rank r: classes [r V/R, (r+1) V/R)).",
        "# Systems: softmax_tune = softmax_tune.vocab_parallel_cross_entropy / vocab_parallel_linear_cross_entropy; "
        "shard_alone = softmax_tune.cross_entropy / linear_cross_entropy on the rank's shard alone (labels t mod V/R), "
        "no collectives; collectives = the torch.distributed calls softmax_tune issued in one forward + backward "
        "(recorded, each problem's comment line lists them), replayed alone on buffers of their sizes; bound = "
        "shard_alone + collectives (not timed); megatron = Megatron-LM's vocab_parallel_cross_entropy (stand-in "
        "parallel_state/utils modules give it this process group; per-token losses masked and averaged in torch; "
        "Gemma-2's softcap as cap * tanh(x / cap) in bf16 torch before it); cce = Cut Cross-Entropy's "
        "linear_cross_entropy with VocabParallelOptions (impl cce, its default).",
        "# frac = bound / ms (softmax_tune's target: >= 1/1.1 = %.3f; the peers' rows: the same ratio). Check first, "
        "on every rank, against float64 on the whole problem: loss within %.3g relative, gradient error norms within "
        "%.2g (logits) and %.2g (hidden, weight) of the reference's; WRONG: a miss on any rank (timed, not counted); "
        "ms '-': not run (the reason)." % (TARGET, LOSS_TOL, CE_GRAD_TOL, LCE_GRAD_TOL),
        "# Peers: %s." % (peers or "none asked for"),
        COLUMNS]


def default_megatron():
    return os.environ.get("MEGATRON_PATH") or os.path.join(ROOT, ".carry_vp", "peers", "megatron")


def default_cce():
    if os.environ.get("CCE_PATH"):
        return os.environ["CCE_PATH"]
    for c in (".carry_vp", ".carry_lce"):
        p = os.path.join(ROOT, c, "peers", "cce")
        if os.path.isdir(p):
            return p
    return os.path.join(ROOT, ".carry_vp", "peers", "cce")


def init(rank, args, port):
    torch.cuda.set_device(rank)
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = str(port)
    kw = dict(backend="nccl", rank=rank, world_size=args.ranks,
              timeout=datetime.timedelta(seconds=args.collective_timeout))
    try:
        dist.init_process_group(device_id=torch.device("cuda", rank), **kw)
    except TypeError:   # a torch without device_id
        dist.init_process_group(**kw)


def worker(rank, args, port):
    init(rank, args, port)
    ctx = Ctx(rank, args.ranks, args)
    ops = [o for o in args.ops.split(",") if o]
    if "cross_entropy" in ops:
        ctx.peers["megatron"] = load_megatron(args.megatron)
    if "linear_cross_entropy" in ops:
        ctx.peers["cce"] = load_cce(args.cce)
    from cross_entropy import gpu_name   # in the rank: it imports softmax_tune
    out = args.out or os.path.join(HERE, "results", "vocab-parallel-%dx%s-%s.tsv" % (
        ctx.world, gpu_name(), datetime.date.today().isoformat()))
    lines = header(ctx) if rank == 0 else []
    ctx.say("\n".join(lines))
    if rank == 0:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        write(out, lines)
    t0 = time.time()
    for op in ops:
        models, problem = (CE_MODELS, ce_problem) if op == "cross_entropy" else (LCE_MODELS, lce_problem)
        for mkey in [m for m in args.models.split(",") if m in models]:
            try:
                lines += problem(ctx, mkey)
            except Exception as e:  # noqa: BLE001  (the other problems still run)
                print("# [rank %d] %s %s: %s" % (rank, op, mkey, first_line(e)), flush=True)
                if rank == 0:
                    lines.append("# %s %s: not measured: %s" % (op, mkey, first_line(e)))
            fresh()
            if rank == 0:
                write(out, lines)
    ctx.say("# %.0f s; written %s" % (time.time() - t0, out))
    barrier(ctx)
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default=",".join(OPS), help="cross_entropy, linear_cross_entropy")
    ap.add_argument("--models", default="llama3,qwen2.5,gemma2", help="those of each op that it has")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3, help="untimed rounds before the timed ones")
    ap.add_argument("--megatron", default=default_megatron(), help="Megatron-LM's sources (megatron/core/...)")
    ap.add_argument("--cce", default=default_cce(), help="Cut Cross-Entropy's sources (cut_cross_entropy/)")
    ap.add_argument("--collective-timeout", type=int, default=300, help="seconds before a stuck collective fails")
    ap.add_argument("--out")
    args = ap.parse_args()
    bad = [o for o in args.ops.split(",") if o and o not in OPS]
    bad += [m for m in args.models.split(",") if m and m not in CE_MODELS and m not in LCE_MODELS]
    if bad:
        ap.error("unknown ops or models %s (ops %s; models %s)" % (bad, ", ".join(OPS), ", ".join(CE_MODELS)))
    seen = torch.cuda.device_count()
    if seen < args.ranks:
        print("vocab_parallel.py: %d ranks need %d GPUs, %d visible" % (args.ranks, args.ranks, seen), flush=True)
        sys.exit(2)
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
