#!/usr/bin/env python3
"""test_python_stand_in.py BINARY — attention kinds the kernel set holds no classes of, on a GPU,
each in a fresh process with an empty cache and kept-cubins folder: ALiBi (bf16, causal), a bias
tensor of bf16 [B, 1, Q, K] and a bool one, a softcap (f16 key padding, forward and backward), a
sliding window (bf16 causal, forward and backward) and float32 (causal).
The first call runs the set's stand-in (a config `kernels` lists as a stand-in; no NVRTC compile
counted; under 5 ms) and is right against float64; after softmax_tune.wait() the kind's own
kernel runs (another config, one compile counted; the backward's case counts its forward's too)
and is right; a second process with the same kept cubins runs it after wait too, compiling
nothing (its worker reads the kept cubin back); and a run that ends while its ALiBi kernel still
compiles exits cleanly, four times. Widths are random (the seed is printed). Exit 77
without torch, a GPU or a kernel set with stand-ins."""

import json
import os
import random
import subprocess
import sys
import tempfile

from pyharness import expect, finish
import softmax_tune  # noqa: E402,F401  (finish(both=True) asks it which host path served)

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import json, math, sys, time, torch
sys.path.insert(0, %r)
import softmax_tune
from softmax_tune import attention as attn
case, K, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(seed)
softmax_tune.softmax(torch.randn(4, 100, device="cuda"))   # the library opened: not the first call's cost
B, H, Q = 2, 4, 24
dt = torch.float16 if case.startswith("softcap") else torch.float32 if case == "f32" else torch.bfloat16
x = (torch.randn(B, H, Q, K, device="cuda") * 4).to(dt)
kw = {}
if case == "alibi":
    kw = dict(causal=True, alibi_slopes=torch.tensor([2.0 ** (-h - 1) for h in range(H)], device="cuda"))
elif case == "bias":
    kw = dict(bias=torch.randn(B, 1, Q, K, device="cuda").to(dt))
elif case == "bool":
    kw = dict(mask=torch.rand(B, 1, Q, K, device="cuda") < 0.8)
elif case.startswith("window"):
    kw = dict(causal=True, window=max(1, K // 3))
elif case == "f32":
    kw = dict(causal=True)
else:
    kw = dict(softcap=50.0, key_lengths=torch.randint(K // 2, K + 1, (B,), device="cuda", dtype=torch.int32))
back = case.endswith("_bw")
rel = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}.get(dt)   # half an ulp of the dtype
if rel is None:   # float32: the score's error (about 3e-6 of |z| + 1, test_python_attn's rule) rules
    rel = 8e-6 + 3e-6 * (float(x.abs().max()) + 1)
dy = torch.randn(B, H, Q, K, device="cuda").to(dt)
x64 = x.double().requires_grad_()
ref = attn.reference(x64, **kw)
want = torch.autograd.grad(ref, x64, dy.double())[0] if back else ref.detach()
slack = rel * ref.detach() * (dy.double().abs() + (dy.double() * ref.detach()).abs().sum(-1, keepdim=True)) if back else 0

def call():
    if not back:
        return softmax_tune.attention_softmax(x, **kw)
    xg = x.detach().requires_grad_()
    return torch.autograd.grad(softmax_tune.attention_softmax(xg, **kw), xg, dy)[0]

def err(got):   # over a bound of half an ulp of the dtype (y's rounding carried through the gradient)
    bound = rel * (want.abs() + 1e-3 * float(want.abs().max())) + slack + 2.0 ** -24
    return float(((got.double() - want).abs() / bound).max())

cfg = lambda: attn.config(x, back, **kw)
c0 = softmax_tune.stats()["compiles"]
if back:
    softmax_tune.attention_softmax(x.detach().requires_grad_(), **kw)   # the forward's first call is not the one timed
    c0 = softmax_tune.stats()["compiles"]
torch.cuda.synchronize()
t0 = time.perf_counter()
got = call()
torch.cuda.synchronize()
ms = (time.perf_counter() - t0) * 1e3
first = dict(ms=ms, config=cfg(), err=err(got), compiles=softmax_tune.stats()["compiles"] - c0)
softmax_tune.wait()
got = call()
torch.cuda.synchronize()
print("RESULT " + json.dumps(dict(first=first, config=cfg(), err=err(got), compiles=softmax_tune.stats()["compiles"] - c0)))
""" % os.path.join(HERE, "..", "python")


# A run that ends while its stand-in's kernel compiles: _lib's exit hook waits for the compile (exit()
# with a thread inside NVRTC crashed such a run: SIGSEGV or abort, about 4 exits in 10).
QUIT = r"""
import sys, torch
sys.path.insert(0, %r)
import softmax_tune
x = torch.randn(2, 4, 24, int(sys.argv[1]), device="cuda").to(torch.bfloat16)
softmax_tune.attention_softmax(x, causal=True, alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625], device="cuda"))
torch.cuda.synchronize()
""" % os.path.join(HERE, "..", "python")


def quit_compiling(rng):
    for i in range(4):
        K = rng.randrange(40, 5000)
        with tempfile.TemporaryDirectory() as tmp:   # an empty kept-cubins folder: the kernel compiles
            env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(tmp, "c.db"), SOFTMAX_TUNE_CUBINS=os.path.join(tmp, "kept"),
                       SOFTMAX_TUNE_MISS="heuristic", SOFTMAX_TUNE_WARN="none")
            r = subprocess.run([sys.executable, "-c", QUIT, str(K)], capture_output=True, text=True, env=env)
        expect(r.returncode == 0, "a run that ended while compiling (ALiBi K=%d): rc %d: %s" % (K, r.returncode, r.stderr[-600:]))


def child(case, K, seed, env):
    r = subprocess.run([sys.executable, "-c", CHILD, case, str(K), str(seed)], capture_output=True, text=True, env=env)
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    expect(r.returncode == 0 and line, "%s K=%d: rc %d: %s" % (case, K, r.returncode, (r.stdout + r.stderr)[-600:]))
    return json.loads(line[0][7:]) if line else None


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "softmax-tune"
    listed = subprocess.run([binary, "kernels", "--op", "attention_softmax"], capture_output=True, text=True).stdout
    stand_ins = {l.split("\t")[7] for l in listed.splitlines() if l.endswith("\tstand-in")}
    if not stand_ins:
        print("SKIP: the kernel set beside %s has no stand-ins (%s)" % (binary, listed.splitlines()[:1]))
        sys.exit(77)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print("seed", seed)
    for case in ("alibi", "bias", "bool", "softcap", "softcap_bw", "window", "window_bw", "f32"):
        K = rng.randrange(40, 5000)
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(tmp, "c.db"), SOFTMAX_TUNE_CUBINS=os.path.join(tmp, "kept"),
                       SOFTMAX_TUNE_MISS="heuristic", SOFTMAX_TUNE_WARN="none")
            a = child(case, K, seed, env)
            b = child(case, K, seed, env)
        if not a or not b:
            continue
        f = a["first"]
        print("%s K=%d: first %.1f ms %s (err %.3g, %d compiles), then %s (err %.3g, %d compiles); a second process: "
              "first %.1f ms, then %s (%d compiles)" % (case, K, f["ms"], f["config"], f["err"], f["compiles"], a["config"],
                                                         a["err"], a["compiles"], b["first"]["ms"], b["config"], b["compiles"]))
        stand = "vec=1,reduce=shfl,passes=2,hold=none,rows=1" in f["config"]
        expect(stand, "%s: the first call ran %s, not a stand-in" % (case, f["config"]))
        expect(f["compiles"] == 0 and f["ms"] < 5, "%s: the first call compiled %d kernels, %.1f ms" % (case, f["compiles"], f["ms"]))
        expect(f["err"] <= 1 and a["err"] <= 1, "%s: wrong: the stand-in %.3g, the own kernel %.3g over the bound" % (case, f["err"], a["err"]))
        own = 2 if case.endswith("_bw") else 1   # the backward's and its forward's
        expect(a["config"] != f["config"] and a["compiles"] == own, "%s: after wait: %s, %d compiles" % (case, a["config"], a["compiles"]))
        expect(b["config"] == a["config"] and b["compiles"] == 0 and b["err"] <= 1,
               "%s: a second process ran %s after wait, %d compiles" % (case, b["config"], b["compiles"]))
    quit_compiling(rng)
    finish("test_python_stand_in", both=True)


if __name__ == "__main__":
    main()
