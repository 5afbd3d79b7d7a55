#!/usr/bin/env python3
"""train_step.py — softmax-tune in a training step, against torch, in one run: forward and
backward of

  attention: scores [B*H*Q, K] (bf16, a leaf) -> softmax -> P @ V (bmm with V [B*H, K, 128]),
             backward from a random gradient of the output;
  lm_head:   logits [tokens, vocab] (bf16, a leaf) -> log_softmax -> NLL of random targets
             (mean), backward.

Each side (softmax_tune.softmax / torch.softmax, the rest the same torch ops) is checked first:
its gradient of the leaf against float64 autograd (softmax_tune_check.grad_explain, with the
gradient reaching the softmax as dy: the forward rule's bounds carried through the backward and
rounded to bf16), then its step time is the median of triton.testing.do_bench (L2 cleared
before each repetition). Then the softmax's own kernels in it, alone: forward ("fwd") and
backward ("bwd", on the step's y and dy), each side. TSV columns: case, shape, system, ms,
vs_torch (torch's ms for the same part / this ms), grad_check.

    python3 bench/train_step.py [--heads-rows 16384] [--seq 2048] [--tokens 4096] [--vocab 128256] [--out F]
"""

import argparse

import torch
import torch.nn.functional as F

from benchlib import header, median_ms, write
import softmax_tune  # noqa: E402
from softmax_tune_check import grad_explain  # noqa: E402


def attention(sm, scores, v, g, bh):
    p = sm(scores, -1)
    out = torch.bmm(p.view(bh, -1, scores.shape[1]), v)
    return p, out, g


def lm_head(lsm, logits, target):
    logp = lsm(logits, -1)
    return logp, F.nll_loss(logp, target), None


def case_runs(args):
    """(case, shape, log, leaf, {system: step(leaf, keep) -> (softmax output, loss, grad)})"""
    bh = args.heads_rows // args.seq
    scores = torch.randn(args.heads_rows, args.seq, device="cuda", dtype=torch.bfloat16) * 3
    v = torch.randn(bh, args.seq, 128, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(bh, args.heads_rows // bh, 128, device="cuda", dtype=torch.bfloat16)
    yield ("attention", "%dx%d" % tuple(scores.shape), False, scores,
           {"softmax_tune": lambda t: attention(softmax_tune.softmax, t, v, g, bh),
            "torch": lambda t: attention(torch.softmax, t, v, g, bh)})
    logits = torch.randn(args.tokens, args.vocab, device="cuda", dtype=torch.bfloat16) * 2
    target = torch.randint(0, args.vocab, (args.tokens,), device="cuda")
    yield ("lm_head", "%dx%d" % tuple(logits.shape), True, logits,
           {"softmax_tune": lambda t: lm_head(softmax_tune.log_softmax, t, target),
            "torch": lambda t: lm_head(torch.log_softmax, t, target)})


def measure(fn, x, log, what):
    """(step ms, grad check, (y, dy): the softmax's output and the gradient reaching it) of fn
    from a fresh leaf like x, the leaf's gradient checked first."""
    leaf = x.detach().clone().requires_grad_()
    y, loss, g = fn(leaf)
    y.retain_grad()   # dy: the gradient reaching the softmax
    loss.backward(g)
    ok, err, why = grad_explain(leaf.grad, x, y.grad, log)
    if not ok:
        print("# %s WRONG: %s" % (what, why), flush=True)
    last = y.detach(), y.grad
    del y, loss

    def step():
        leaf.grad = None
        _, out, grad = fn(leaf)
        out.backward(grad)
    return median_ms(step), ("ok" if ok else "WRONG") + " (max err %.3g ulp)" % err, last


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heads-rows", type=int, default=16384, help="B*H*Q, the attention's rows")
    ap.add_argument("--seq", type=int, default=2048, help="K (= Q), the attention's cols")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--out", help="also write the TSV here")
    args = ap.parse_args()
    lines = header("A step = forward + backward of the case from its leaf; fwd, bwd: the softmax's kernels alone.",
                   "grad_check: the leaf's gradient against float64 autograd (python/softmax_tune_check.py grad_explain).",
                   "case\tshape\tsystem\tms\tvs_torch\tgrad_check",
                   timing="Median of triton.testing.do_bench (L2 cleared before each repetition).")
    torch.manual_seed(0)
    for case, shape, log, x, runs in case_runs(args):
        times = {}
        for name, fn in runs.items():
            try:
                ms, check, (y, dy) = measure(fn, x, log, case + " " + name)   # torch's y, dy last
                times[name] = ms, check
            except RuntimeError as e:   # e.g. a library without st_softmax_backward: said, not fatal
                print("# %s %s: %s" % (case, name, str(e).splitlines()[0][:200]), flush=True)
        # the softmax's own kernels in that step, forward and backward, each side
        bw = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        with torch.no_grad():
            times["softmax_tune fwd"] = (median_ms(lambda: softmax_tune.softmax(x, -1, log)), "-")
            times["torch fwd"] = (median_ms(lambda: (torch.log_softmax if log else torch.softmax)(x, -1)), "-")
            times["torch bwd"] = (median_ms(lambda: bw(dy, y, -1, y.dtype)), "-")
            try:
                times["softmax_tune bwd"] = (median_ms(lambda: torch.ops.softmax_tune.softmax_backward(y, dy, log)), "-")
            except RuntimeError as e:
                print("# %s softmax_tune bwd: %s" % (case, str(e).splitlines()[0][:200]), flush=True)
        for name, (ms, check) in times.items():
            ref = times["torch" + name[len(name.split()[0]):]][0]   # torch's time for the same part
            row = "%s\t%s\t%s\t%.4f\t%.3f\t%s" % (case, shape, name, ms, ref / ms, check)
            lines.append(row)
            print(row, flush=True)
    write(args.out, lines)


if __name__ == "__main__":
    main()
