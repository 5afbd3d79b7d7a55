#!/usr/bin/env python3
"""cross_entropy.py — the cross-entropy table of issue 36: an LLM head's loss (mean over the rows,
class-index labels, a few ignored) on one GPU, every system in one run, each checked first.

    python3 bench/cross_entropy.py [--dtypes bfloat16,float32] [--shapes 4096x128256,...]
        [--modes fwd_bwd,loss_only] [--no-autotune] [--compile-budget S] [--liger DIR] [--out F]

Writes bench/results/cross-entropy-<gpu>-<date>.tsv (or --out): dtype, shape, mode, system, ms,
frac_of_floor (the floor's ms / the system's), extra_mem_gb (peak memory of one call over what was
allocated before it: the logits, labels and, for fwd_bwd, nothing else).
  mode fwd_bwd: loss = f(logits, labels); torch.autograd.grad(loss, logits). Floor: a copy of the
    logits (dst.copy_(logits): read once, write once, what a fused loss and gradient need).
  mode loss_only: the loss under torch.no_grad(). Floor: logits.amax(dim=1) (read once, write N
    values; torch's reduction, close to but not quite a pure read).
Systems: softmax_tune (softmax_tune.cross_entropy, its default gradient buffer), softmax_tune_inplace
(fwd_bwd: st_cross_entropy writing the gradient into the logits, timed through the library
without autograd, since autograd cannot run it twice on one tensor; its memory through
autograd on a fresh non-leaf), softmax_tune_go2 (fwd_bwd with grad_output 2: the backward's
multiply, a pass over the gradient, which grad_output 1 skips; not checked), torch
(F.cross_entropy), inductor (torch.compile), inductor_max
(torch.compile mode="max-autotune-no-cudagraphs": CUDA graphs would hide launch time the others
pay; the timing loop hides launch time anyway), liger (liger_kernel.ops.cross_entropy, from
--liger DIR, default .peers/liger, its COMMIT file in the header). Liger writes the gradient into
the logits (its extra memory is near 0 for that reason, and its inputs here are its own copy) and
reads the ignored count with a host sync (.item()) each call. max-autotune compiles have a budget
(--compile-budget, default 150 s over the run); past it, its rows are skipped (a comment line).
Timing: benchlib.interleaved_ms (median of --rounds interleaved rounds, L2 cleared, GPU-side hold).
"""

import argparse
import datetime
import gc
import importlib
import os
import sys
import time

import torch
import torch.nn.functional as F

from benchlib import DTYPES, header, interleaved_ms, load_liger, run_table, table_rows

import softmax_tune  # noqa: E402  (benchlib put python/ on the path)

ce = importlib.import_module("softmax_tune.cross_entropy")
SHAPES = ["4096x128256", "8192x50257", "16384x32000", "2048x151936", "1024x256000"]
HERE = os.path.dirname(os.path.abspath(__file__))
UNCHECKED = ("floor", "softmax_tune_inplace", "softmax_tune_go2")   # the last two: softmax_tune's kernels


def gpu_name():
    name = torch.cuda.get_device_name(0).lower()
    for k in ("h200", "h100", "a100", "l40s", "b200", "gh200"):
        if k in name:
            return k
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def reference(x, t):
    """float32 loss (mean over rows not ignored) and gradient, closed form on x upcast."""
    z = x.float()
    valid = t != -100
    lse = torch.logsumexp(z, 1)
    zy = z.gather(1, t.clamp(min=0)[:, None])[:, 0]
    count = valid.sum()
    loss = (torch.where(valid, lse - zy, torch.zeros_like(lse))).sum() / count
    g = torch.exp(z - lse[:, None])
    g.scatter_add_(1, t.clamp(min=0)[:, None], -torch.ones_like(g[:, :1]))
    g *= (valid.float() / count)[:, None]
    return loss, g


def checker(ref_loss, ref_grad, dtype):
    rel = 1e-4 if dtype == torch.float32 else 2.0 ** -6

    def check(out):
        loss, grad = out if isinstance(out, tuple) else (out, None)
        lerr = abs(float(loss) - float(ref_loss)) / abs(float(ref_loss))
        if lerr > rel:
            return False, lerr, "loss %.6g, want %.6g" % (float(loss), float(ref_loss))
        if grad is not None:
            bound = rel * ref_grad.abs() + 1e-3 * float(ref_grad.abs().max())
            err = ((grad.float() - ref_grad).abs() - bound).max().item()
            if err > 0:
                return False, err, "gradient off by %.3g over the bound" % err
        return True, lerr, ""
    return check


def fwd_bwd(f, x, t):
    def run():
        loss = f(x, t)
        return loss, torch.autograd.grad(loss, x)[0]
    return run


def loss_only(f, x, t):
    def run():
        with torch.no_grad():
            return f(x, t)
    return run


def liger_fn(liger):
    def f(x, t):
        return liger.LigerCrossEntropyFunction.apply(x, t, None, -100, 0.0, 0.0, "mean", None, False, False, False)[0]
    return f


def extra_gb(fn):
    """Peak memory of one call over what was allocated before it, GB."""
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak / 1e9


def inplace_direct(x, t):
    """st_cross_entropy with the gradient into x itself: the kernel the inplace path runs."""
    def run():
        return ce.run(x, t, None, -100, "mean", 0.0, 0.0, None, True, inplace=True)[0]
    return run


def inplace_memory(x, t):
    """Extra memory of softmax_tune.cross_entropy(inplace=True) forward and backward on a fresh
    non-leaf copy of x (the copy made before the measurement)."""
    leaf = x.detach().clone().requires_grad_()
    logits = leaf * 1.0

    def run():
        loss = softmax_tune.cross_entropy(logits, t, inplace=True)
        return loss, torch.autograd.grad(loss, logits)[0]
    gb = extra_gb(run)
    del leaf, logits
    return gb


class Budget:
    def __init__(self, seconds):
        self.left = seconds

    def take(self, fn):
        """Run fn (a first call that compiles) unless the budget is spent; the time it took is taken."""
        if self.left <= 0:
            raise RuntimeError("compile budget spent (--compile-budget)")
        t0 = time.time()
        try:
            return fn()
        finally:
            self.left -= time.time() - t0


def systems(mode, x, t, args, liger, budget):
    """(name, fn, first-call-compiles) of every system for this problem; x requires grad for fwd_bwd."""
    wrap = fwd_bwd if mode == "fwd_bwd" else loss_only
    dst = torch.empty_like(x)
    xd = x.detach()
    floor = (lambda: dst.copy_(xd)) if mode == "fwd_bwd" else (lambda: xd.amax(dim=1))
    out = [("floor", floor, False), ("softmax_tune", wrap(lambda a, b: softmax_tune.cross_entropy(a, b), x, t), False)]
    if mode == "fwd_bwd":
        xi = x.detach().clone()
        out.append(("softmax_tune_inplace", inplace_direct(xi, t), False))
        two = torch.tensor(2.0, device="cuda", dtype=x.dtype)

        def go2():   # grad_output 2: the backward's pass over the gradient that grad_output 1 skips
            loss = softmax_tune.cross_entropy(x, t)
            return loss, torch.autograd.grad(loss, x, two)[0]
        out.append(("softmax_tune_go2", go2, False))
    out.append(("torch", wrap(lambda a, b: F.cross_entropy(a, b), x, t), False))
    if not args.no_inductor:
        out.append(("inductor", wrap(torch.compile(lambda a, b: F.cross_entropy(a, b), dynamic=False), x, t), False))
        if not args.no_autotune:
            cf = torch.compile(lambda a, b: F.cross_entropy(a, b), dynamic=False, mode="max-autotune-no-cudagraphs")
            out.append(("inductor_max", wrap(cf, x, t), True))
    if liger is not None:
        xl = x.detach().clone().requires_grad_(mode == "fwd_bwd")   # liger overwrites it with the gradient
        out.append(("liger", wrap(liger_fn(liger), xl, t), False))
    return out


def problem(dname, dtype, shape, mode, args, liger, budget):
    rows, cols = map(int, shape.split("x"))
    g = torch.Generator(device="cuda").manual_seed(rows + cols)
    x = (torch.randn(rows, cols, device="cuda", generator=g) * 2).to(dtype)
    t = torch.randint(0, cols, (rows,), device="cuda", generator=g)
    t[torch.rand(rows, device="cuda", generator=g) < 0.05] = -100
    ref_loss, ref_grad = reference(x, t)
    if mode == "loss_only":
        ref_grad = None
    check = checker(ref_loss, ref_grad, dtype)
    x.requires_grad_(mode == "fwd_bwd")
    try:
        print("# %s %s %s: softmax_tune kernel %s" % (dname, shape, mode, ce.config(x, grad=mode == "fwd_bwd")))
    except Exception as e:  # noqa: BLE001  (SOFTMAX_TUNE_MISS=error and not tuned: its row says so)
        print("# %s %s %s: softmax_tune config: %s" % (dname, shape, mode, e))
    ran = []
    for name, fn, compiles in systems(mode, x, t, args, liger, budget):
        try:
            first = budget.take(fn) if compiles else fn()
            ok, err, why = (True, 0.0, "") if name in UNCHECKED else check(first)
            del first
            mem = inplace_memory(x, t) if name == "softmax_tune_inplace" else extra_gb(fn)
        except Exception as e:  # noqa: BLE001  (a system that cannot run this problem is a comment)
            print("# %s %s %s %s: %s" % (dname, shape, mode, name, (str(e).splitlines() or [""])[0][:200]), flush=True)
            continue
        if not ok:
            print("# %s %s %s %s WRONG: %s" % (dname, shape, mode, name, why), flush=True)
        ran.append((name, fn, ok, err, mem))
    del ref_grad
    times = interleaved_ms([fn for _, fn, _, _, _ in ran], rounds=args.rounds)
    return table_rows([dname, shape, mode], [(name, ok, err) for name, _, ok, err, _ in ran], times,
                      lambda i, ms: ["%.3f" % (times[0] / ms), "%.3f" % ran[i][4]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="fwd_bwd,loss_only")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--no-autotune", action="store_true", help="skip torch.compile max-autotune")
    ap.add_argument("--no-inductor", action="store_true", help="skip torch.compile altogether")
    ap.add_argument("--compile-budget", type=float, default=150.0, help="seconds of max-autotune compiles, all told")
    ap.add_argument("--liger", default=os.environ.get("LIGER_PATH", os.path.join(HERE, "..", ".peers", "liger")))
    ap.add_argument("--out")
    args = ap.parse_args()
    for k in ("cache_size_limit", "recompile_limit"):   # a compile per problem, all on one function
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 256)
    liger, commit = load_liger(args.liger, "cross_entropy")
    out = args.out or os.path.join(HERE, "results", "cross-entropy-%s-%s.tsv" % (gpu_name(),
                                                                                  datetime.date.today().isoformat()))
    lines = header("Loss: mean over the rows not ignored (5% of labels -100), labels int64; checked against float32 "
                   "closed forms first (WRONG marks a miss).",
                   "fwd_bwd floor: a copy of the logits; loss_only floor: logits.amax(dim=1).",
                   "Liger Kernel: %s (%s)." % ("liger_kernel.ops.cross_entropy" if liger else "not run", commit),
                   "softmax_tune %s; SOFTMAX_TUNE_MISS=%s." % (os.path.basename(softmax_tune.library_path()),
                                                               os.environ.get("SOFTMAX_TUNE_MISS", "(default)")),
                   "dtype\tshape\tmode\tsystem\tms\tfrac_of_floor\textra_mem_gb",
                   timing="Median of %d interleaved rounds (benchlib.interleaved_ms: L2 cleared before each call, "
                          "a GPU-side hold so launch time is not counted)." % args.rounds)
    budget = Budget(args.compile_budget)
    run_table(out, lines, (lambda d=dname, s=shape, m=mode: problem(d, DTYPES[d], s, m, args, liger, budget)
                           for dname in args.dtypes.split(",") for shape in args.shapes.split(",")
                           for mode in args.modes.split(",")))


if __name__ == "__main__":
    main()
