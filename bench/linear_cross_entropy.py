#!/usr/bin/env python3
"""linear_cross_entropy.py — the LM-head table of issue 57: loss = cross_entropy(hidden @ weight.T, labels),
mean over the rows not ignored, forward and backward (the gradients of hidden and weight), bf16, on one GPU,
every system in one run, each checked against float64 before it is timed.

    python3 bench/linear_cross_entropy.py [--models llama3-8b,qwen2.5-7b,gemma2-9b] [--n 4096,16384]
        [--systems ours,liger,cce,torch,compile] [--rounds 10] [--chunks R1,R2] [--peers DIR] [--out F]
        [--breakdown R1,R2]   (--systems "": the breakdown alone)

Writes bench/results/linear-cross-entropy-<gpu>-<date>.tsv (or --out): model, N, D, V, dtype, options, system,
ms, peak_extra_gb, floor_ms.
  Heads: Llama-3-8B (D 4096, V 128256), Qwen2.5-7B (D 3584, V 152064), Gemma-2-9B (D 3584, V 256000, logit
    softcap 30). hidden ~ N(0, 1), weight ~ N(0, (2/sqrt(D))^2) (logits of spread about 2), labels uniform,
    5% of them ignore_index -100.
  Systems: ours (softmax_tune.linear_cross_entropy, its default chunks; ours@R: chunks of R rows, --chunks),
    liger (Liger Kernel's LigerFusedLinearCrossEntropyFunction), cce (Cut Cross-Entropy's linear_cross_entropy,
    its defaults: impl cce, gradient filtering on), torch (hidden @ weight.T, the softcap, F.cross_entropy, in
    bf16), compile (torch.compile of the same function, dynamic=True: one compile for every shape; dynamo's
    recompile limit lifted). The peers come from --peers DIR (liger/ and cce/, each with a COMMIT file).
  Check: each system's loss and gradients against a float64 computation on the same bf16 inputs (the rows in
    chunks); WRONG marks a loss off by more than 2^-6 of itself or a gradient whose error's norm is more than
    0.1 of the reference's (the logits' bf16 rounding alone costs a few percent in grad_hidden; see
    tests/test_python_lce.py for the element-wise rule). The relative errors are printed.
  peak_extra_gb: the peak memory of one call (forward and backward) above what was allocated before it (the
    inputs) and the gradients it returns.
  floor_ms: cuBLAS's time for the three GEMMs alone (logits = hidden @ weight.T, grad_hidden = dlogits @ weight,
    grad_weight = dlogits.T @ hidden, whole, into buffers made before) plus a copy of the [N, V] logits (what
    a cross-entropy at the copy floor costs); their own rows are cublas_3gemm and copy_logits.
Timing: benchlib.interleaved_ms (median of --rounds interleaved rounds, L2 cleared before each call, a GPU-side
hold so launch time is not counted); the floor's two rows are timed in their own interleaved run first (their
[N, V] buffers freed before the systems run).
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

from benchlib import header, interleaved_ms, load_liger, peer_commit, write

if os.environ.get("SOFTMAX_TUNE_PY"):   # the package to measure, ahead of the one benchlib put on the path
    sys.path.insert(0, os.environ["SOFTMAX_TUNE_PY"])
import softmax_tune  # noqa: E402
from cross_entropy import gpu_name  # noqa: E402  (after softmax_tune: it imports the package too)

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {"llama3-8b": ("Llama-3-8B", 4096, 128256, None), "qwen2.5-7b": ("Qwen2.5-7B", 3584, 152064, None),
          "gemma2-9b": ("Gemma-2-9B", 3584, 256000, 30.0)}
IGNORE = -100


def load_cce(root):
    if not os.path.isdir(os.path.join(root, "cut_cross_entropy")):
        return None, "no cut_cross_entropy under %s" % root
    sys.path.insert(0, root)
    try:
        mod = importlib.import_module("cut_cross_entropy")
    except Exception as e:  # noqa: BLE001
        return None, "import cut_cross_entropy: %s" % e
    return mod, peer_commit(root)


# ---- the systems: each a function of (h, w, t) returning (loss, grad_hidden, grad_weight) ----

def _grads(loss, h, w):
    gh, gw = torch.autograd.grad(loss, [h, w])
    return loss, gh, gw


def ours(cap, chunk=None):
    return lambda h, w, t: _grads(softmax_tune.linear_cross_entropy(h, w, t, softcap=cap, chunk_rows=chunk), h, w)


def liger(mod, cap):
    f = mod.LigerFusedLinearCrossEntropyFunction
    return lambda h, w, t: _grads(f.apply(h, w, t, None, None, IGNORE, 0.0, 0.0, "mean", cap, False, None, False,
                                          False, False)[0], h, w)


def cce(mod, cap):
    return lambda h, w, t: _grads(mod.linear_cross_entropy(h, w, t, softcap=cap, ignore_index=IGNORE), h, w)


def torch_loss(h, w, t, cap):
    logits = h @ w.t()
    if cap:
        logits = cap * torch.tanh(logits / cap)
    return F.cross_entropy(logits, t, ignore_index=IGNORE)


_compiled = {}


def compiled(cap):
    if cap not in _compiled:
        _compiled[cap] = torch.compile(lambda h, w, t: torch_loss(h, w, t, cap), dynamic=True)
    f = _compiled[cap]
    return lambda h, w, t: _grads(f(h, w, t), h, w)


def eager(cap):
    return lambda h, w, t: _grads(torch_loss(h, w, t, cap), h, w)


# ---- the reference and the check ----

def reference(h, w, t, cap, rows=1024, start=0, size=None):
    """float64 loss (mean over the rows not ignored) and gradients of hidden and of weight's rows [start, start +
    size) (size None: all of them), the rows in chunks."""
    n, d = h.shape
    size = w.shape[0] - start if size is None else size
    wd = w.double()
    valid = t != IGNORE
    count = valid.sum().double()
    gw = torch.zeros((size, d), dtype=torch.float64, device=h.device)
    gh = torch.empty(h.shape, dtype=torch.float64, device=h.device)
    total = torch.zeros((), dtype=torch.float64, device=h.device)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        hd = h[r0:r1].double()
        z = hd @ wd.t()
        cd = None
        if cap:
            z = torch.tanh(z.div_(cap))
            cd = 1.0 - z * z
            z.mul_(cap)
        lse = torch.logsumexp(z, 1)
        tc, vc = t[r0:r1].clamp(min=0), valid[r0:r1]
        total += torch.where(vc, lse - z.gather(1, tc[:, None])[:, 0], torch.zeros_like(lse)).sum()
        p = z.sub_(lse[:, None]).exp_()
        p.scatter_add_(1, tc[:, None], -torch.ones_like(lse)[:, None])
        p.mul_((vc.double() / count)[:, None])
        if cd is not None:
            p.mul_(cd)
            del cd
        gh[r0:r1] = p @ wd
        gw.addmm_(p[:, start:start + size].t(), hd)
        del z, p
    return total / count, gh, gw


def rel(got, want):
    return float((got.double() - want).norm() / max(float(want.norm()), 1e-300))


def verdict(out, ref):
    """(ok, 'loss e, gh e, gw e') of a system's (loss, gh, gw) against the reference's."""
    loss, gh, gw = out
    el = abs(float(loss.detach()) - float(ref[0])) / abs(float(ref[0]))
    eh, ew = rel(gh, ref[1]), rel(gw, ref[2])
    return el <= 2.0 ** -6 and eh <= 0.1 and ew <= 0.1, "loss %.2e, grad_hidden %.2e, grad_weight %.2e" % (el, eh, ew)


def extra_gb(fn, args):
    """Peak memory of one call above what was allocated before it and the gradients it returns, GB."""
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn(*args)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    grads = sum(x.numel() * x.element_size() for x in out[1:])
    del out
    return (peak - grads) / 1e9


def floor(h, w, rounds):
    """(ms of the three GEMMs, ms of a copy of the logits), timed together."""
    logits = torch.mm(h, w.t())
    dl = logits.clone()
    gh, gw = torch.empty_like(h), torch.empty_like(w)

    def gemms():
        torch.mm(h, w.t(), out=logits)
        torch.mm(dl, w, out=gh)
        torch.mm(dl.t(), h, out=gw)

    def copy():
        dl.copy_(logits)
    return interleaved_ms([gemms, copy], rounds=rounds)   # the buffers go with this frame


def breakdown(key, n, rows_list, rounds):
    """Where ours' time goes (printed, no table rows): each GEMM whole, then for chunks of each R rows the logits
    GEMM, the cross-entropy kernel (out of place, the model's softcap), grad_hidden's GEMM and grad_weight's
    accumulating addmm, each timed on one chunk and scaled by the chunks N takes."""
    label, d, v, cap = MODELS[key]
    lce = sys.modules["softmax_tune.linear_cross_entropy"]
    g = torch.Generator(device="cuda").manual_seed(7)
    h = torch.randn(n, d, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(v, d, device="cuda", generator=g) * (2.0 / d ** 0.5)).to(torch.bfloat16)
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    full = torch.mm(h, w.t())
    dl = full.clone()
    gh, gw = torch.empty_like(h), torch.empty_like(w)
    names = ["whole logits", "whole grad_hidden", "whole grad_weight"]
    fns = [lambda: torch.mm(h, w.t(), out=full), lambda: torch.mm(dl, w, out=gh), lambda: torch.mm(dl.t(), h, out=gw)]
    flag = sys.modules["softmax_tune.cross_entropy"]._flag(0)
    for r in rows_list:
        x, y = full[:r], dl[:r]
        loss = torch.empty(r, dtype=torch.float32, device="cuda")
        lse = torch.empty_like(loss)
        names += ["%d rows: logits" % r, "%d rows: cross-entropy" % r, "%d rows: grad_hidden" % r,
                  "%d rows: grad_weight +=" % r]
        fns += [lambda x=x, r=r: torch.mm(h[:r], w.t(), out=x),
                lambda x=x, y=y, r=r, loss=loss, lse=lse: lce._kernel(0, x, t[:r], y, loss, lse, IGNORE, 0.0, 0.0, cap,
                                                                     None, flag),
                lambda y=y, r=r: torch.mm(y, w, out=gh[:r]),
                lambda y=y, r=r: gw.addmm_(y.t(), h[:r])]
    times = interleaved_ms(fns, rounds=rounds)
    for name, ms in zip(names, times):
        r = int(name.split()[0]) if name[0].isdigit() else n
        print("# breakdown %s N %d: %s %.3f ms, x%.2f chunks = %.3f ms" % (label, n, name, ms, n / r, ms * n / r),
              flush=True)


def problem(key, n, args, peers, systems_wanted):
    label, d, v, cap = MODELS[key]
    g = torch.Generator(device="cuda").manual_seed(n + v)
    h = torch.randn(n, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    w = (torch.randn(v, d, device="cuda", generator=g) * (2.0 / d ** 0.5)).to(torch.bfloat16).requires_grad_()
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    t[torch.rand(n, device="cuda", generator=g) < 0.05] = IGNORE
    opts = "softcap=%g" % cap if cap else "-"
    keycols = [label, str(n), str(d), str(v), "bf16", opts]
    t0 = time.time()
    gemm_ms, copy_ms = floor(h.detach(), w.detach(), args.rounds)
    floor_ms = gemm_ms + copy_ms
    rows = ["\t".join(keycols + ["cublas_3gemm", "%.3f" % gemm_ms, "-", "%.3f" % floor_ms]),
            "\t".join(keycols + ["copy_logits", "%.3f" % copy_ms, "-", "%.3f" % floor_ms])]
    for r in rows:
        print(r, flush=True)
    gc.collect()
    torch.cuda.empty_cache()
    chunk = sys.modules["softmax_tune.linear_cross_entropy"].chunk_rows(n, v, torch.bfloat16, 0)
    print("# %s N %d: floor %.3f ms (GEMMs %.3f + copy %.3f); ours' default chunk %d rows" % (
        label, n, floor_ms, gemm_ms, copy_ms, chunk), flush=True)
    cands = []
    for name in systems_wanted:
        if name == "ours":
            cands.append(("ours", ours(cap)))
            for r in args.chunks:
                cands.append(("ours@%d" % r, ours(cap, r)))
        elif name == "liger" and peers.get("liger"):
            cands.append(("liger", liger(peers["liger"], cap)))
        elif name == "cce" and peers.get("cce"):
            cands.append(("cce", cce(peers["cce"], cap)))
        elif name == "torch":
            cands.append(("torch", eager(cap)))
        elif name == "compile":
            cands.append(("compile", compiled(cap)))
    ref = reference(h.detach(), w.detach(), t, cap)
    print("# %s N %d: float64 reference in %.1f s" % (label, n, time.time() - t0), flush=True)
    checked = []
    for name, fn in cands:
        try:
            t1 = time.time()
            out = fn(h, w, t)
            ok, why = verdict(out, ref)
            del out
            print("# %s N %d %s: %s against float64 (%s; first call %.1f s)" % (label, n, name, "ok" if ok else "WRONG",
                                                                               why, time.time() - t1), flush=True)
            checked.append((name, fn, ok))
        except Exception as e:  # noqa: BLE001  (a system that cannot run this problem is a comment)
            print("# %s N %d %s: %s" % (label, n, name, (str(e).splitlines() or [""])[0][:200]), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
    del ref
    gc.collect()
    torch.cuda.empty_cache()
    ran = []
    for name, fn, ok in checked:
        try:
            ran.append((name, fn, ok, extra_gb(fn, (h, w, t))))
        except Exception as e:  # noqa: BLE001
            print("# %s N %d %s (memory): %s" % (label, n, name, (str(e).splitlines() or [""])[0][:200]), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
    times = interleaved_ms([lambda fn=fn: fn(h, w, t) for _, fn, _, _ in ran], rounds=args.rounds)
    for (name, _, ok, gb), ms in zip(ran, times):
        row = "\t".join(keycols + [name, "%.3f" % ms, "%.3f" % gb, "%.3f" % floor_ms]) + ("" if ok else "\tWRONG")
        print(row + "\t# %.3f of the floor" % (floor_ms / ms), flush=True)
        rows.append(row)
    print("# %s N %d: %.0f s" % (label, n, time.time() - t0), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--n", default="4096,16384")
    ap.add_argument("--systems", default="ours,liger,cce,torch,compile")
    ap.add_argument("--chunks", default="", help="ours again with chunks of these rows (ours@R)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--peers", default=os.environ.get("LCE_PEERS", os.path.join(HERE, "..", ".peers")))
    ap.add_argument("--breakdown", default="", help="rows of chunks: first print where ours' time goes, for the "
                    "first N of each model (breakdown())")
    ap.add_argument("--breakdown-n", type=int, help="its N (default: the first of --n)")
    ap.add_argument("--breakdown-models", help="its models (default: --models)")
    ap.add_argument("--out")
    args = ap.parse_args()
    args.chunks = [int(c) for c in args.chunks.split(",") if c]
    for k in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 256)
    wanted = args.systems.split(",")
    peers, notes = {}, []
    for name, load in (("liger", lambda root: load_liger(root, "fused_linear_cross_entropy")), ("cce", load_cce)):
        if name in wanted:
            mod, commit = load(os.path.join(args.peers, name))
            peers[name] = mod
            notes.append("%s: %s" % (name, commit if mod else "not run (%s)" % commit))
    out = args.out or os.path.join(HERE, "results", "linear-cross-entropy-%s-%s.tsv" % (
        gpu_name(), datetime.date.today().isoformat()))
    tree = os.environ.get("SOFTMAX_TUNE_TREE", "")
    lines = header("Loss: mean over the rows not ignored (5% of labels -100), labels int64, bf16, forward and backward "
                   "(grad hidden and weight); each system checked against float64 first (WRONG marks a miss).",
                   "floor_ms: cuBLAS's three GEMMs alone (cublas_3gemm) plus a copy of the [N, V] logits "
                   "(copy_logits); peak_extra_gb: peak memory above the inputs and the returned gradients.",
                   "Peers: " + "; ".join(notes) + ".",
                   "softmax_tune %s%s; SOFTMAX_TUNE_TABLE=%s; torch.compile dynamic=True." % (
                       os.path.basename(softmax_tune.library_path()), (", tree " + tree) if tree else "",
                       os.environ.get("SOFTMAX_TUNE_TABLE", "(built in)")),
                   "model\tN\tD\tV\tdtype\toptions\tsystem\tms\tpeak_extra_gb\tfloor_ms",
                   timing="Median of %d interleaved rounds (benchlib.interleaved_ms: L2 cleared before each call, a "
                          "GPU-side hold so launch time is not counted)." % args.rounds)
    t0 = time.time()
    if args.breakdown:
        for key in (args.breakdown_models or args.models).split(","):
            breakdown(key, args.breakdown_n or int(args.n.split(",")[0]), [int(r) for r in args.breakdown.split(",")],
                      args.rounds)
            gc.collect()
            torch.cuda.empty_cache()
    for n in [int(x) for x in args.n.split(",")] if any(wanted) else []:   # --systems "": the breakdown alone
        for key in args.models.split(","):
            lines += problem(key, n, args, peers, wanted)
            gc.collect()
            torch.cuda.empty_cache()
            write(out, lines)
    print("# %.0f s; written %s" % (time.time() - t0, out))


if __name__ == "__main__":
    main()
