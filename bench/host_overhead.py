#!/usr/bin/env python3
"""host_overhead.py — what a call costs on the host, softmax_tune next to torch (issue 39): per
mode and size, a CPU loop of --calls calls then one synchronize, the median of --runs such loops
(torch's and softmax_tune's taking turns),
in microseconds a call. 32x1000 is launch-bound (the host's cost shows); 4096x4096 is GPU-bound
(the loop waits on the kernels). Modes: eager inference softmax(x); out=; the nn.Softmax module;
forward + backward (x requires grad, .backward(dy)); torch.compile of softmax(x) * 2; cross-entropy
loss-only (x without a gradient) and forward + backward (F.cross_entropy next to
softmax_tune.cross_entropy, a label a row, the mean). Then
attention_softmax on causal scores [B, H, Q, K] (1x8x1x128: a decoding step, launch-bound;
1x16x1024x1024: a prefill's, GPU-bound), inference and forward + backward, next to torch's eager
composition softmax((x * scale).masked_fill(~causal, -inf)) with the mask made once.

    python3 bench/host_overhead.py [--dtype float32] [--only attention] [--out bench/results/host-GPU-DATE.tsv]

--only SUBSTR: the modes whose name holds it.

The TSV (shape, mode, torch_us, softmax_tune_us, ratio) is written to --out, by default
bench/results/host-<gpu>-<date>.tsv; its comment lines name the GPU, the versions and the host
path (the C++ ops, or the ctypes fallback under SOFTMAX_TUNE_NO_CPP=1). The table is printed last.
"""
import argparse
import datetime
import os
import re
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import softmax_tune  # noqa: E402

SHAPES = ("32x1000", "4096x4096")
ATTN_SHAPES = ("1x8x1x128", "1x16x1024x1024")   # causal scores [B, H, Q, K]: decoding; a prefill
COLUMNS = ("shape", "mode", "torch_us", "softmax_tune_us", "ratio")


def loop_us(fn, calls):
    """One loop of calls calls, then one synchronize: us a call."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def paired_us(tfn, sfn, calls, runs):
    """(torch's, softmax_tune's) median us a call over runs loops each, the two taking turns (which
    goes first alternates), so that a drift of the host's speed falls on both alike."""
    for fn in (tfn, sfn):
        for _ in range(20):   # first calls: kernels loaded, graphs compiled, caches warm
            fn()
    torch.cuda.synchronize()
    t, s = [], []
    for r in range(runs):
        for fn, into in ((tfn, t), (sfn, s)) if r % 2 == 0 else ((sfn, s), (tfn, t)):
            into.append(loop_us(fn, calls))
    return statistics.median(t), statistics.median(s)


def modes(x):
    """(mode, torch's call, softmax_tune's call) for input x."""
    y = torch.empty_like(x)
    xg, dy = x.detach().clone().requires_grad_(), torch.randn_like(x)
    tm, sm = torch.nn.Softmax(-1), softmax_tune.nn.Softmax(-1)
    tc = torch.compile(lambda t: torch.softmax(t, -1) * 2, dynamic=False)
    sc = torch.compile(lambda t: softmax_tune.softmax(t) * 2, dynamic=False)
    labels = torch.randint(0, x.shape[-1], x.shape[:-1], device=x.device)
    return [("eager softmax(x)", lambda: torch.softmax(x, -1), lambda: softmax_tune.softmax(x)),
            ("out=", lambda: torch.softmax(x, -1, out=y), lambda: softmax_tune.softmax(x, out=y)),
            ("nn.Softmax module", lambda: tm(x), lambda: sm(x)),
            ("forward + backward", lambda: torch.softmax(xg, -1).backward(dy),
             lambda: softmax_tune.softmax(xg).backward(dy)),
            ("torch.compile softmax(x)*2", lambda: tc(x), lambda: sc(x)),
            ("cross-entropy loss-only", lambda: torch.nn.functional.cross_entropy(x, labels),
             lambda: softmax_tune.cross_entropy(x, labels)),
            ("cross-entropy fwd + bwd", lambda: torch.nn.functional.cross_entropy(xg, labels).backward(),
             lambda: softmax_tune.cross_entropy(xg, labels).backward())]


def attn_modes(x):
    """(mode, torch's eager composition, softmax_tune's call) for causal attention scores x [B, H, Q, K]
    (the diagonal at K - Q, as attention_softmax's default)."""
    Q, K = x.shape[-2:]
    masked = torch.arange(K, device=x.device) > torch.arange(Q, device=x.device)[:, None] + (K - Q)
    xg, dy = x.detach().clone().requires_grad_(), torch.randn_like(x)

    def torch_attn(t):
        return torch.softmax((t * 0.125).masked_fill(masked, float("-inf")), -1)

    def ours(t):
        return softmax_tune.attention_softmax(t, scale=0.125, causal=True)

    return [("attention_softmax causal", lambda: torch_attn(x), lambda: ours(x)),
            ("attention_softmax causal fwd + bwd", lambda: torch_attn(xg).backward(dy),
             lambda: ours(xg).backward(dy))]


def gpu_tag():
    name = torch.cuda.get_device_name(0)
    m = re.search(r"h100|h200|b200|a100|l40s?|l4|t4|a10g?", name.lower())
    return m.group(0) if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="", help="the modes whose name holds this")
    a = ap.parse_args()
    out = a.out or os.path.join(HERE, "results", "host-%s-%s.tsv" % (gpu_tag(), datetime.date.today().isoformat()))
    path = "the C++ ops (softmax_tune._C)" if softmax_tune.cpp_ops else "the ctypes fallback (Python custom ops)"
    lines = ["# %s, torch %s, %s, %s." % (torch.cuda.get_device_name(0), torch.__version__, a.dtype,
                                          datetime.date.today().isoformat()),
             "# softmax_tune's host path: %s. Median of %d loops of %d calls each, each loop then one synchronize, "
             "torch's and softmax_tune's loops taking turns; us a call; ratio = softmax_tune / torch." % (path, a.runs, a.calls),
             "\t".join(COLUMNS)]
    for shape in SHAPES + ATTN_SHAPES:
        x = torch.randn(*map(int, shape.split("x")), device="cuda").to(getattr(torch, a.dtype))
        for mode, tfn, sfn in (modes if x.dim() == 2 else attn_modes)(x):
            if a.only not in mode:
                continue
            try:
                t, s = paired_us(tfn, sfn, a.calls, a.runs)
            except Exception as e:  # noqa: BLE001  (one mode failing leaves the others' rows)
                why = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
                lines.insert(2, "# %s %s failed: %s" % (shape, mode, why))
                print(lines[2], flush=True)
                continue
            lines.append("%s\t%s\t%.1f\t%.1f\t%.2f" % (shape, mode, t, s, s / t))
            print(lines[-1], flush=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\nwritten to %s\n" % out)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
