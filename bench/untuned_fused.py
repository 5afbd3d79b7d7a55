#!/usr/bin/env python3
"""untuned_fused.py — the fused ops before anyone tunes: cross-entropy and attention_softmax on
random problems, the untuned path (the kernel set, an empty cache) against the tuned kernel.

    python3 bench/untuned_fused.py problems --seed S --n N --out FILE     (N of each op)
    python3 bench/untuned_fused.py phase untuned|tuned --problems FILE --out PART.tsv [--tune BIN]
    python3 bench/untuned_fused.py merge UNTUNED.tsv TUNED.tsv --out TABLE.tsv

phase untuned: a fresh process with an empty $SOFTMAX_TUNE_CACHE, no kept cubins and
SOFTMAX_TUNE_MISS=heuristic: each problem's first call (wall time of the call and a synchronize,
the library opened by a warm-up problem first: first_call_ms), its output checked against a
float64 reference (the first rows; where the first call ran the kernel set's stand-in, again once
softmax_tune.wait() put the kind's own kernel in use), then the floor, softmax-tune and torch eager timed in
interleaved rounds (benchlib.interleaved_ms: L2 cleared, medians).
phase tuned: each problem tuned first (`BIN --op ... --shape ...`, its options), then timed the
same way with SOFTMAX_TUNE_MISS=error.
  cross_entropy NxV: loss (mean) of logits randn*2 and labels in [0, V); mode fwd_bwd: the loss
    and the logits' gradient (floor: a copy of the logits); loss_only: under no_grad (floor:
    logits.amax(1), a read). Options: none, label_smoothing 0.1, z_loss 1e-4, softcap 30.
  attention_softmax BxHxQxK: scores randn*4, scale 1/sqrt(128); masks none, causal, key padding
    (lengths in [K/4, K]), both; ALiBi, a [1, H, Q, K] bias tensor, softcap 50 for some; fwd (floor:
    a copy) or bwd (torch.autograd.grad of the forward: floor torch.add(y, dy)).
torch.compile and Liger are not run here (bench/cross_entropy.py and bench/attention_softmax.py
hold them, per problem compiles of a minute or more for 40 random shapes).
"""
import argparse
import math
import os
import random
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from benchlib import DTYPES, interleaved_ms

import softmax_tune  # noqa: E402  (benchlib put python/ on the path)
from softmax_tune import attention as attn  # noqa: E402

VOCABS = [32000, 32768, 49152, 50257, 65536, 100352, 128256, 151936, 200064, 256000, 262144]
CE_OPTS = ["none", "label_smoothing=0.1", "z_loss=1e-4", "softcap=30"]
MASKS = ["none", "causal", "padding", "padding_causal"]
SCALE = 128 ** -0.5
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
REL = {torch.float32: 1e-5, torch.float16: 2.0 ** -8, torch.bfloat16: 2.0 ** -6}   # the output's rounding, a few ulp
TINY = {torch.float32: 2.0 ** -149, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -133}   # its subnormal step


def make_problems(seed, n):
    r = random.Random(seed)
    out = []
    for _ in range(n):
        dt = r.choice(["bfloat16"] * 3 + ["float16", "float32"])
        v = r.choice(VOCABS)
        rows = r.randint(1000, 16384)
        if dt == "float32":
            rows = min(rows, 8192)
        out.append(["cross_entropy", dt, "%dx%d" % (rows, v), r.choice(CE_OPTS), r.choice(["fwd_bwd", "loss_only"])])
    for i in range(n):
        dt = r.choice(["bfloat16"] * 3 + ["float16"])
        extra = r.choice(["none"] * 5 + ["alibi", "bias", "softcap=50"])
        mask = r.choice(MASKS)
        if i % 2:   # decode: one query a head over a long cache
            k = r.randint(512, 32768)
            shape = "%dx%dx1x%d" % (r.choice([1, 4, 8, 16]), r.choice([8, 16, 32]), k)
        else:       # prefill: square scores, about 256 MB of them
            q = r.randint(256, 4096)
            bh = max(1, (256 << 20) // (q * q * 2))
            shape = "1x%dx%dx%d" % (bh, q, q)
        opts = mask + ("" if extra == "none" else "," + extra)
        out.append(["attention_softmax", dt, shape, opts, r.choice(["fwd", "bwd"])])
    return out


def ce_opts(opt):
    k, _, v = opt.partition("=")
    return {} if k == "none" else {k: float(v)}


def ce_reference(x, t, o, n):
    """float64 row losses and gradient (of the mean over all rows) of the first n rows."""
    z = x[:n].double()
    cap = o.get("softcap")
    if cap:
        z = cap * torch.tanh(z / cap)
    zz = z.detach().requires_grad_()
    lse = torch.logsumexp(zz, 1)
    logp = zz - lse[:, None]
    eps = o.get("label_smoothing", 0.0)
    loss = -(1 - eps) * logp.gather(1, t[:n, None].long())[:, 0] - eps * logp.mean(1) + o.get("z_loss", 0.0) * lse ** 2
    g, = torch.autograd.grad(loss.sum() / x.shape[0], zz)
    if cap:
        g = g * (1 - (z / cap) ** 2)
    return loss.detach(), g


def ce_problem(dt, shape, opt, mode, g):
    rows, v = map(int, shape.split("x"))
    dtype = DTYPES[dt]
    x = (torch.randn(rows, v, device="cuda", generator=g) * 2).to(dtype)
    t = torch.randint(0, v, (rows,), device="cuda", generator=g)
    o = ce_opts(opt)
    ref_loss, ref_g = ce_reference(x, t, o, 32)
    xg = x.detach().requires_grad_(mode == "fwd_bwd")

    def st():
        if mode == "loss_only":
            with torch.no_grad():
                return softmax_tune.cross_entropy(x, t, **o)
        return torch.autograd.grad(softmax_tune.cross_entropy(xg, t, **o), xg)[0]

    def torch_ce():
        z = xg
        if o.get("softcap"):
            z = o["softcap"] * torch.tanh(z / o["softcap"])
        if mode == "loss_only":
            with torch.no_grad():
                return F.cross_entropy(z, t, label_smoothing=o.get("label_smoothing", 0.0))
        return torch.autograd.grad(F.cross_entropy(z, t, label_smoothing=o.get("label_smoothing", 0.0)), xg)[0]

    def check():
        rel = REL[dtype]
        with torch.no_grad():
            loss = softmax_tune.cross_entropy(x[:32], t[:32], reduction="none", **o).double()
        err = ((loss - ref_loss).abs() / (1e-3 + ref_loss.abs())).max().item()
        ok = err < 2 * rel
        if mode == "fwd_bwd":
            got = st()[:32].double()
            bound = rel * (ref_g.abs() + 1e-3 * ref_g.abs().max()) + TINY[dtype]
            gerr = ((got - ref_g).abs() / bound).max().item()
            ok, err = ok and gerr <= 1, max(err, gerr)
        return ok, err

    dst = torch.empty_like(x)
    floor = (lambda: dst.copy_(x)) if mode == "fwd_bwd" else (lambda: x.amax(1))
    torch_fn = None if o.get("z_loss") else torch_ce   # torch has no z-loss
    return st, floor, torch_fn, check


def attn_problem(dt, shape, opts, direction, g):
    B, H, Q, K = map(int, shape.split("x"))
    dtype = DTYPES[dt]
    parts = opts.split(",")
    mask = parts[0]
    kw = dict(scale=SCALE, causal="causal" in mask)
    if "padding" in mask:
        kw["key_lengths"] = (K * (0.25 + 0.75 * torch.rand(B, device="cuda", generator=g))).int().clamp(1, K)
    for p in parts[1:]:
        if p == "alibi":
            kw["alibi_slopes"] = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)], device="cuda")
        elif p == "bias":
            kw["bias"] = torch.randn(1, H, Q, K, device="cuda", generator=g).to(dtype)
        elif p.startswith("softcap="):
            kw["softcap"] = float(p.split("=")[1])
    x = (torch.randn(B, H, Q, K, device="cuda", generator=g) * 4).to(dtype)
    dy = torch.randn(B, H, Q, K, device="cuda", generator=g).to(dtype) if direction == "bwd" else None
    n = 1
    rkw = {k: (v[:n] if k == "key_lengths" else v) for k, v in kw.items()}
    ref = attn.reference(x[:n].double(), **rkw)
    extra = 0.0
    if direction == "bwd":
        d = dy[:n].double()
        yr = ref
        xx = x[:n].double().requires_grad_()
        ref, = torch.autograd.grad(attn.reference(xx, **rkw), xx, d)
        extra = SCALE * yr * (d.abs() + (d * yr).abs().sum(-1, keepdim=True))   # y's rounding through the gradient
    xg = x.detach().requires_grad_(direction == "bwd")
    if direction == "fwd":
        def st():
            return softmax_tune.attention_softmax(x, **kw)
    else:
        y = softmax_tune.attention_softmax(xg, **kw)

        def st():
            return torch.autograd.grad(y, xg, dy, retain_graph=True)[0]

    def check():
        rel = REL[dtype]
        got = st()[:n].double()
        bound = rel * (ref.abs() + extra + 1e-3 * float(ref.abs().max())) + TINY[dtype]
        err = ((got - ref).abs() / bound).max().item()
        return err <= 1, err

    dst = torch.empty_like(x)
    if direction == "fwd":
        floor = lambda: dst.copy_(x)  # noqa: E731
    else:
        y0 = softmax_tune.attention_softmax(x, **kw)
        floor = lambda: torch.add(y0, dy, out=dst)  # noqa: E731
    return st, floor, None, check


def tune(binary, p):
    op, dt, shape, opts, mode = p
    cmd = [binary, "--shape", shape, "--dtype", SHORT[dt], "--quiet"]
    if op == "cross_entropy":
        cmd += ["--op", "cross_entropy_loss" if mode == "loss_only" else "cross_entropy"]
        o = ce_opts(opts)
        if "softcap" in o:
            cmd += ["--softcap", "30"]
    else:
        parts = opts.split(",")
        if mode == "bwd":   # the backward's forward runs first: tuned too, or the tuned phase's miss policy stops it
            tune(binary, [op, dt, shape, opts, "fwd"])
        cmd += ["--op", "attention_softmax" + ("_backward" if mode == "bwd" else ""), "--scale", repr(SCALE)]
        cmd += ["--mask", parts[0].replace("_", "+")] if parts[0] != "none" else []
        for q in parts[1:]:
            cmd += ["--alibi"] if q == "alibi" and mode == "fwd" else ["--bias-tensor"] if q == "bias" and mode == "fwd" else \
                   ["--softcap", q.split("=")[1]] if q.startswith("softcap") else []
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print("# tune %s: rc %d, %.1f s %s" % (" ".join(cmd[1:]), r.returncode, time.time() - t0,
                                           (r.stdout + r.stderr).strip().replace("\n", " | ")[:200]), flush=True)


def phase(args):
    probs = [l.rstrip("\n").split("\t") for l in open(args.problems) if l.strip() and not l.startswith("#")]
    out = open(args.out, "w")
    g = torch.Generator(device="cuda").manual_seed(1)
    if args.phase == "untuned":   # the library opened, its context made: not a first call's cost
        softmax_tune.softmax(torch.randn(64, 1000, device="cuda"))
        torch.cuda.synchronize()
    for p in probs:
        st = floor = torch_fn = check = None
        if args.tune:
            tune(args.tune, p)
        try:
            make = ce_problem if p[0] == "cross_entropy" else attn_problem
            st, floor, torch_fn, check = make(p[1], p[2], p[3], p[4], g)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            st()
            torch.cuda.synchronize()
            first = (time.perf_counter() - t0) * 1e3
            try:   # the check's calls (32 rows, the forward of a backward) may be of kernels the tuned phase lacks
                ok, err = check()   # a kind the kernel set has no classes of: its stand-in, then (after wait) its own kernel
                softmax_tune.wait()
                ok2, err2 = check()
                ok, err = ok and ok2, max(err, err2)
                verdict = "ok" if ok else "WRONG(%.3g)" % err
            except RuntimeError as e:
                verdict = "unchecked (%s)" % (str(e).splitlines() or [""])[0][:80]
            fns = [floor, st] + ([torch_fn] if torch_fn else [])
            ms = interleaved_ms(fns, rounds=20)
            row = p + ["%.4f" % ms[0], "%.4f" % ms[1], "%.4f" % ms[2] if torch_fn else "-", "%.2f" % first,
                       verdict]
        except Exception as e:  # noqa: BLE001  (a problem that cannot run is a row that says why)
            row = p + ["-", "-", "-", "-", "error: " + (str(e).splitlines() or [""])[0][:160]]
        print("\t".join(row), flush=True)
        out.write("\t".join(row) + "\n")
        out.flush()
        del st, floor, torch_fn, check
        torch.cuda.empty_cache()   # the next problem's tensors fit


def merge(args):
    def rows(path):
        return {tuple(l.split("\t")[:5]): l.rstrip("\n").split("\t")[5:] for l in open(path) if l.strip()}
    u, t = rows(args.untuned), rows(args.tuned)
    out = open(args.out, "w")
    out.write("op\tdtype\tshape\toptions\tmode\tuntuned_frac\ttuned_frac\tuntuned_of_tuned\ttorch_frac\t"
              "torch_compile_frac\tliger_frac\tfirst_call_ms\tcheck\n")
    ratios = {}
    for k, (fl, st, to, first, chk) in u.items():
        tf = t.get(k)
        uf = float(fl) / float(st) if st != "-" else math.nan
        tfr = float(tf[0]) / float(tf[1]) if tf and tf[1] != "-" else math.nan
        tor = float(fl) / float(to) if to != "-" else math.nan
        ratios.setdefault((k[0], k[4]), []).append(uf / tfr)
        out.write("\t".join(list(k) + ["%.3f" % uf, "%.3f" % tfr, "%.3f" % (uf / tfr), "%.3f" % tor if to != "-" else "-",
                                       "-", "-", first, chk + ("" if not tf else "/" + tf[4])]) + "\n")
    for (op, mode), r in sorted(ratios.items()):
        r = [x for x in r if x == x]
        if r:
            out.write("# %s %s: untuned/tuned geomean %.3f, worst %.3f over %d problems\n"
                      % (op, mode, math.exp(sum(map(math.log, r)) / len(r)), min(r), len(r)))
    firsts = [float(v[3]) for v in u.values() if v[3] != "-"]
    out.write("# first call (untuned, fresh process): median %.2f ms, max %.2f ms\n"
              % (sorted(firsts)[len(firsts) // 2], max(firsts)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["problems", "phase", "merge"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--problems")
    ap.add_argument("--tune")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.what == "problems":
        with open(a.out, "w") as f:
            f.write("# bench/untuned_fused.py problems --seed %d --n %d\n" % (a.seed, a.n))
            for p in make_problems(a.seed, a.n):
                f.write("\t".join(p) + "\n")
    elif a.what == "phase":
        a.phase = a.args[0]
        phase(a)
    else:
        a.untuned, a.tuned = a.args
        merge(a)


if __name__ == "__main__":
    sys.exit(main())
