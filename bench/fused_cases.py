#!/usr/bin/env python3
"""fused_cases.py — the fused ops on the cases LLM training adds to a plain loss: a logit softcap
(cross-entropy and attention), a scaled loss's gradient (grad_output other than 1), attention's
mask and bias tensors in the model's dtype, every system checked against float64 first.

    python3 bench/fused_cases.py [--case softcap,scaled,bias,narrow] [--quick] [--dtypes bfloat16] [--rounds N]
        [--seed S] [--tune .carry/softmax-tune] [--no-inductor] [--time-wrong] [--liger DIR] [--out F]

Writes bench/results/fused-cases-<gpu>-<date>.tsv (or --out), a problem's rows as it finishes: case, op,
dtype, shape, options, system, ms, frac_of_floor (floor / ms), floor (its ms, timed in the same rounds),
max_err.
  softcap: cross_entropy (loss and gradient, torch.autograd.grad) and cross_entropy_loss (the loss
    under no_grad: the library's loss-only kernel), bf16 2048 x V for V 128256, 256000, 262144,
    softcap 30; attention_softmax (forward) and attention_softmax+backward (forward, then
    autograd.grad with a random dy) of bf16 scores 2x16x4096x4096, causal, softcap 50, scale 1/sqrt(128).
  scaled: cross_entropy on bench/cross_entropy.py's five shapes (--dtypes, default bfloat16) with
    the gradient of loss * g, g 1/8 and 65536 (GradScaler's first scale), next to the plain loss (g=1).
  bias: attention_softmax (forward) of f16 scores 8x8x1024x1024 (T5-style) with one tensor added
    after the scale, float32, float16 or bfloat16 (bias=, randn*2) or bool (mask=, 80% seen, key 0
    always), shaped [1, H, Q, K] (a bias shared by the batches) or [B, 1, Q, K] (Hugging Face's
    mask, shared by the heads). Floor: a copy of the scores plus one read of the tensor (amax of
    it as stored), in the same rounds.
  narrow: not measured here: bench/random_shapes.py --cols 2,128 draws them (bench/shapes/
    narrow-20261127.txt), SHAPES=that bench/untuned_run.sh runs them untuned against tuned.
Systems: softmax_tune; torch (the code a user writes, in the inputs' dtype:
F.cross_entropy(cap * torch.tanh(x / cap), t); torch.softmax of the scaled, capped, masked scores;
bias: softmax(x.float() * scale + t or its masked_fill, -1).to(x.dtype), Hugging Face's eager attention
but for x * scale in float32 (in float16 it fails the check));
torch_compile (that function under torch.compile, dynamic=False); liger (Liger Kernel's
LigerCrossEntropyFunction, from --liger DIR: cross-entropy only). A system that fails its check
is a row with ms '-' and the reason in options (--time-wrong: timed anyway, marked WRONG).
--tune BIN tunes each problem first (bench/untuned_fused.py's tune: softmax-tune --op ... --shape ...).
--quick: one small problem of each kind, 10 rounds (a smoke run). softcap and scaled with --tune took
136 s on an H200 (2026-11-27); on an H100 the scaled case's last two shapes were past a 165 s limit.
Most of it is torch.compile's compiles (--no-inductor: about a minute in all).
Timing: benchlib.interleaved_ms (median of --rounds interleaved rounds, L2 cleared, GPU-side hold).
"""

import argparse
import datetime
import importlib
import importlib.metadata
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

from attention_softmax import SCALE, checker as attn_checker, floor_fn
from benchlib import DTYPES, header, interleaved_ms, load_liger, run_table
from cross_entropy import SHAPES as CE_SHAPES, ce, checker as ce_checker, gpu_name, loss_only
from untuned_fused import ce_reference, tune

import softmax_tune  # noqa: E402  (benchlib put python/ on the path)
from softmax_tune import attention as attn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CE_CAP, ATTN_CAP = 30.0, 50.0
CE_STD = 3.0        # logits randn * 3
ATTN_STD = 32.0     # scores randn * 32: scale * scores of std 2.8
CHECK_ROWS = 64     # cross-entropy gradient rows held to the float64 reference
CHECK_HEADS = 2     # attention heads (of the first batch) held to it
CHUNK = 1 << 25     # elements of a float64 reference chunk
SOFTCAP_VOCABS = [128256, 256000, 262144]
GRAD_OUTPUTS = [(1.0, "g=1"), (0.125, "g=1/8"), (65536.0, "g=65536")]
COLUMNS = "case\top\tdtype\tshape\toptions\tsystem\tms\tfrac_of_floor\tfloor\tmax_err"


def first_line(e):
    return ((str(e).splitlines() or [""])[0][:160] or type(e).__name__).replace("\t", " ")


def driver():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.split("\n")[0].strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ---- measuring one problem ----

def measure(key, floor, runs, args):
    """Rows of one problem. runs: (system, options, fn, check); each fn's first output checked
    (check(out) -> (ok, err text, why)), then the floor and the runs that passed (all that ran,
    under --time-wrong) timed together; the others are rows with ms '-' and why in options."""
    done = []
    for name, opts, fn, check in runs:
        try:
            ok, err, why = check(fn())
        except Exception as e:  # noqa: BLE001  (a system that cannot run this problem: its row says why)
            done.append((name, join(opts, "error: " + first_line(e), sep="; "), "-", None))
            continue
        if not ok:
            opts = join(opts, "WRONG: " + why, sep="; ")
        done.append((name, opts, err, fn if ok or args.time_wrong else None))
    times = interleaved_ms([floor] + [fn for *_, fn in done if fn is not None], rounds=args.rounds)
    floor_ms, rows, timed = times[0], [], iter(times[1:])
    for name, opts, err, fn in done:
        ms = None if fn is None else next(timed)
        cells = ["-", "-"] if ms is None else ["%.4f" % ms, "%.3f" % (floor_ms / ms)]
        rows.append("\t".join(key[:4] + [opts or "-", name] + cells + ["%.4f" % floor_ms, err]))
        print(rows[-1], flush=True)
    return rows


def join(*parts, sep=","):
    return sep.join(p for p in parts if p)


def rel_err(got, ref):
    """max |got - ref| over max |ref| (float64)."""
    return float((got.double() - ref).abs().max() / ref.abs().max())


# ---- cross-entropy ----

def ce_loss64(x, t, o):
    """The float64 mean loss over all rows: untuned_fused.ce_reference's row losses, in chunks of rows."""
    step = max(1, CHUNK // x.shape[1])
    total = sum(float(ce_reference(x[i:i + step], t[i:i + step], o, step)[0].sum()) for i in range(0, x.shape[0], step))
    return total / x.shape[0]


def ce_check(ref_loss, ref_grad, dtype, g):
    """bench/cross_entropy.py's checker against the float64 loss and the first CHECK_ROWS rows of the
    gradient times g (NaN and inf fail too); err: the loss's absolute error, the gradient's over its max."""
    want = None if ref_grad is None else ref_grad * g
    verdict = ce_checker(ref_loss, want, dtype)

    def check(out):
        loss, grad = out if isinstance(out, tuple) else (out, None)
        part = None if grad is None else grad[:CHECK_ROWS].double()
        ok, _, why = verdict(loss if part is None else (loss, part))
        err = "loss=%.3g" % abs(float(loss) - ref_loss)
        if part is not None:
            err += " grad=%.3g" % rel_err(part, want)
        finite = math.isfinite(float(loss)) and (part is None or bool(torch.isfinite(part).all()))
        return ok and finite, err, why or ("" if finite else "NaN or inf")
    return check


def ce_systems(cap, liger, args):
    """(name, f(x, t) -> mean loss) of each system, the code its user writes."""
    def eager(x, t):
        return F.cross_entropy(cap * torch.tanh(x / cap) if cap else x, t)

    out = [("softmax_tune", lambda x, t: softmax_tune.cross_entropy(x, t, softcap=cap)), ("torch", eager)]
    if not args.no_inductor:
        out.append(("torch_compile", torch.compile(eager, dynamic=False)))
    if liger is not None:
        out.append(("liger", lambda x, t: liger.LigerCrossEntropyFunction.apply(
            x, t, None, -100, 0.0, 0.0, "mean", cap, False, False, False)[0]))
    return out


def grad_run(f, x, t, g):
    """Loss and gradient as a user takes them: autograd.grad(loss * g, x), the plain loss at g = 1."""
    def run():
        loss = f(x, t)
        return loss, torch.autograd.grad(loss if g == 1 else loss * g, x)[0]
    return run


def ce_rows(case, dname, shape, mode, cap, gs, args, liger):
    """The rows of cross_entropy (mode fwd_bwd, each grad_output of gs) or cross_entropy_loss."""
    n, v = map(int, shape.split("x"))
    dtype = DTYPES[dname]
    if args.tune:
        tune(args.tune, ["cross_entropy", dname, shape, "softcap=%g" % cap if cap else "none", mode])
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = (torch.randn(n, v, device="cuda", generator=gen) * CE_STD).to(dtype)
    t = torch.randint(0, v, (n,), device="cuda", generator=gen)
    o = {"softcap": cap} if cap else {}
    ref_loss = ce_loss64(x, t, o)
    ref_grad = ce_reference(x, t, o, CHECK_ROWS)[1] if mode == "fwd_bwd" else None
    fwd_bwd = mode == "fwd_bwd"
    print_config(lambda: ce.config(x, grad=fwd_bwd), case, shape, mode)
    x.requires_grad_(fwd_bwd)
    dst, xd = torch.empty_like(x), x.detach()
    floor = (lambda: dst.copy_(xd)) if fwd_bwd else (lambda: xd.amax(dim=1))
    op = "cross_entropy" if fwd_bwd else "cross_entropy_loss"
    rows = []
    for g, label in gs if fwd_bwd else [(None, "")]:   # a grad_output's rows timed together: a run holds its scale
        runs = []
        for name, f in ce_systems(cap, liger, args):
            xs = x.detach().clone().requires_grad_(fwd_bwd) if name == "liger" else x   # Liger writes into its input
            run = grad_run(f, xs, t, g) if fwd_bwd else loss_only(f, xs, t)
            runs.append((name, join("softcap=%g" % cap if cap else "", label), run,
                         ce_check(ref_loss, ref_grad, dtype, g)))
        rows += measure([case, op, dname, shape], floor, runs, args)
    return rows


def print_config(config, *key):
    try:
        print("# %s: softmax_tune kernel %s" % (" ".join(key), config()), flush=True)
    except Exception as e:  # noqa: BLE001  (no kernel for it yet: said, not fatal)
        print("# %s: softmax_tune config: %s" % (" ".join(key), first_line(e)), flush=True)


# ---- attention ----

def attn_check(x, dy, cap, dtype):
    """bench/attention_softmax.py's checker against attn.reference in float64 on the first batch's
    first CHECK_HEADS heads (fwd_bwd: y and dx, its autograd gradient); err: y's absolute error, dx's over its max."""
    xs = x[:1, :CHECK_HEADS].detach().double().requires_grad_(dy is not None)
    yref = attn.reference(xs, SCALE, cap, causal=True)
    dxref = extra = None
    if dy is not None:
        d = dy[:1, :CHECK_HEADS].double()
        dxref, = torch.autograd.grad(yref, xs, d)
        yref = yref.detach()
        extra = SCALE * yref * (d.abs() + (d * yref).abs().sum(-1, keepdim=True))   # y's rounding through dx
    ycheck = attn_checker(yref, 0.0, dtype)
    dxcheck = attn_checker(dxref, extra, dtype) if dy is not None else None

    def check(out):
        y, dx = out if isinstance(out, tuple) else (out, None)
        y = y[:1, :CHECK_HEADS]
        ok, _, why = ycheck(y)
        err = "y=%.3g" % float((y.double() - yref).abs().max())
        if dx is not None:
            ok2, _, why2 = dxcheck(dx[:1, :CHECK_HEADS])
            err += " dx=%.3g" % rel_err(dx[:1, :CHECK_HEADS], dxref)
            ok, why = ok and ok2, why or why2
        return ok, err, why
    return check


def attn_systems(mask, cap, args):
    """(name, f(scores) -> probabilities) of each system."""
    hidden = ~mask   # made once: not a pass of every call

    def eager(x):
        z = x * SCALE
        return torch.softmax((cap * torch.tanh(z / cap)).masked_fill(hidden, -math.inf), -1)

    out = [("softmax_tune", lambda x: softmax_tune.attention_softmax(x, scale=SCALE, softcap=cap, causal=True)),
           ("torch", eager)]
    if not args.no_inductor:
        out.append(("torch_compile", torch.compile(eager, dynamic=False)))
    return out


def attn_run(f, x, dy):
    """The forward of x, or (dy given) the forward and autograd.grad(y, x, dy) in one call."""
    if dy is None:
        return lambda: f(x)

    def run():
        y = f(x)
        return y, torch.autograd.grad(y, x, dy)[0]
    return run


def attn_floor(x, dy):
    """bench/attention_softmax.py's masked floor (causal) over x as [B*H, 1, Q, K]: the forward's, and
    with dy the backward's after it (visible y and dy read, every dx written; x stands for y)."""
    B, H, Q, K = x.shape
    xv = x.detach().view(B * H, 1, Q, K)
    fwd = floor_fn(xv, None, torch.empty_like(xv), None, True)
    if dy is None:
        return fwd
    bwd = floor_fn(xv, dy.view(B * H, 1, Q, K), torch.empty_like(xv), None, True)
    return lambda: (fwd(), bwd())


def attn_rows(case, dname, shape, mode, cap, args):
    B, H, Q, K = map(int, shape.split("x"))
    dtype = DTYPES[dname]
    if args.tune:   # mode bwd tunes the forward too
        tune(args.tune, ["attention_softmax", dname, shape, "causal,softcap=%g" % cap, "bwd" if mode == "fwd_bwd" else "fwd"])
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = (torch.randn(B, H, Q, K, device="cuda", generator=gen) * ATTN_STD).to(dtype)
    dy = torch.randn(B, H, Q, K, device="cuda", generator=gen).to(dtype) if mode == "fwd_bwd" else None
    mask = torch.ones(Q, K, dtype=torch.bool, device="cuda").tril(K - Q)
    check = attn_check(x, dy, cap, dtype)
    print_config(lambda: attn.config(x, dy is not None, causal=True, softcap=cap), case, shape, mode)
    x.requires_grad_(dy is not None)
    opts = "causal,softcap=%g" % cap
    runs = [(name, opts, attn_run(f, x, dy), check) for name, f in attn_systems(mask, cap, args)]
    op = "attention_softmax" + ("+backward" if dy is not None else "")
    return measure([case, op, dname, shape], attn_floor(x, dy), runs, args)


def bias_rows(case, dname, shape, tname, where, args):
    """attention_softmax of scores shape with one tensor of tname (bool: a mask) shaped [1, H, Q, K]
    (where "1,H") or [B, 1, Q, K] ("B,1")."""
    B, H, Q, K = map(int, shape.split("x"))
    dtype = DTYPES[dname]
    if args.tune:
        tune(args.tune, ["attention_softmax", dname, shape, "none,bias", "fwd"])
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = (torch.randn(B, H, Q, K, device="cuda", generator=gen) * ATTN_STD).to(dtype)
    tshape = (1, H, Q, K) if where == "1,H" else (B, 1, Q, K)
    if tname == "bool":
        t = torch.rand(tshape, device="cuda", generator=gen) < 0.8
        t[..., 0] = True   # every row sees a key (torch's softmax gives NaN otherwise)
        kw, add = {"mask": t}, lambda z: z.masked_fill(~t, -math.inf)
    else:
        t = (torch.randn(tshape, device="cuda", generator=gen) * 2).to(DTYPES[tname])
        kw, add = {"bias": t}, lambda z: z + t
    yref = attn.reference(x[:1, :CHECK_HEADS].double(), SCALE, **{k: v[:1, :CHECK_HEADS] for k, v in kw.items()})
    verdict = attn_checker(yref, 0.0, dtype)

    def check(y):
        ok, _, why = verdict(y[:1, :CHECK_HEADS])
        return ok, "y=%.3g" % float((y[:1, :CHECK_HEADS].double() - yref).abs().max()), why

    def eager(x):   # in float32 from the start: x * scale rounded to float16 fails the check
        return torch.softmax(add(x.float() * SCALE), -1).to(x.dtype)

    systems = [("softmax_tune", lambda: softmax_tune.attention_softmax(x, scale=SCALE, **kw)), ("torch", lambda: eager(x))]
    if not args.no_inductor:
        compiled = torch.compile(eager, dynamic=False)
        systems.append(("torch_compile", lambda: compiled(x)))
    print_config(lambda: attn.config(x, **kw), case, shape, tname, where)
    dst, stored = torch.empty_like(x), t.view(torch.uint8) if tname == "bool" else t
    opts = "%s[%s,Q,K] %s" % ("mask" if tname == "bool" else "bias", where, tname)
    return measure([case, "attention_softmax", dname, shape], lambda: (dst.copy_(x), stored.amax()),
                   [(name, opts, f, check) for name, f in systems], args)


# ---- the cases ----

def softcap_jobs(args, liger):
    n, vocabs = (256, SOFTCAP_VOCABS[:1]) if args.quick else (2048, SOFTCAP_VOCABS)
    for v in vocabs:
        for mode in ("fwd_bwd", "loss_only"):
            yield "softcap %dx%d %s" % (n, v, mode), lambda v=v, m=mode: ce_rows(
                "softcap", "bfloat16", "%dx%d" % (n, v), m, CE_CAP, [(1.0, "")], args, liger)
    shape = "1x2x1024x1024" if args.quick else "2x16x4096x4096"
    for mode in ("fwd", "fwd_bwd"):
        yield "softcap attention %s %s" % (shape, mode), lambda m=mode: attn_rows(
            "softcap", "bfloat16", shape, m, ATTN_CAP, args)


def scaled_jobs(args, liger):
    for dname in args.dtypes.split(","):
        for shape in ["512x32000"] if args.quick else CE_SHAPES:
            yield "scaled %s %s" % (dname, shape), lambda d=dname, s=shape: ce_rows(
                "scaled", d, s, "fwd_bwd", None, GRAD_OUTPUTS, args, liger)


def bias_jobs(args, liger):
    shape = "2x4x256x256" if args.quick else "8x8x1024x1024"
    for tname in ("float32", "float16", "bfloat16", "bool"):
        for where in ("1,H", "B,1"):
            yield "bias %s %s [%s]" % (shape, tname, where), lambda t=tname, w=where: bias_rows(
                "bias", "float16", shape, t, w, args)


def narrow_jobs(args, liger):
    print("narrow: SHAPES=bench/shapes/narrow-20261127.txt bash bench/untuned_run.sh (untuned against tuned)", flush=True)
    return iter(())


CASES = {"softcap": softcap_jobs, "scaled": scaled_jobs, "bias": bias_jobs, "narrow": narrow_jobs}


def jobs(args, liger):
    """Each problem's job, an error in one a comment line of the table (the run goes on)."""
    for case in args.case.split(","):
        for label, job in CASES[case](args, liger):
            yield lambda label=label, job=job: guarded(label, job)


def guarded(label, job):
    try:
        return job()
    except Exception as e:  # noqa: BLE001  (out of memory, a reference that cannot run: said, not fatal)
        line = "# %s: %s" % (label, first_line(e))
        print(line, flush=True)
        return [line]


def find_liger(path):
    """(liger_kernel.ops.cross_entropy, its commit or version) from the sources at path, else an installed
    liger_kernel, else (None, why)."""
    mod, commit = load_liger(path, "cross_entropy")
    if mod is not None or "liger_kernel" in sys.modules:   # found there, or found broken there
        return mod, commit
    try:
        mod = importlib.import_module("liger_kernel.ops.cross_entropy")
    except Exception:  # noqa: BLE001  (not importable either: the first reason stands)
        return None, commit
    try:
        return mod, "liger-kernel %s, importable" % importlib.metadata.version("liger-kernel")
    except importlib.metadata.PackageNotFoundError:
        return mod, "liger_kernel from %s" % mod.__file__


def notes(args, liger_line):
    return [
        "bench/fused_cases.py --case %s%s, seed %d; driver %s, CUDA %s; softmax_tune %s, C++ ops %s, SOFTMAX_TUNE_MISS=%s; %s."
        % (args.case, " --quick" if args.quick else "", args.seed, driver(), torch.version.cuda,
           os.path.basename(softmax_tune.library_path()), "yes" if softmax_tune.cpp_ops else "no (ctypes)",
           os.environ.get("SOFTMAX_TUNE_MISS", "(default)"),
           "each problem tuned first (--tune)" if args.tune else "kernels: the cache's where tuned, else the default table's"),
        "Inputs: logits randn*%g in the dtype, labels uniform in [0, V) (none ignored), the mean loss; scores randn*%g, "
        "dy randn. Each system's first output checked against float64 (untuned_fused.ce_reference: all rows' losses, the "
        "gradient's first %d rows; attn.reference on the first batch's first %d heads, dx by its autograd) by "
        "bench/cross_entropy.py's checker (loss within 2^-6 relative at 16 bits, gradient within 2^-6 |r| + 1e-3 max |r|; "
        "NaN fails) and bench/attention_softmax.py's; a miss: ms '-', why in options%s."
        % (CE_STD, ATTN_STD, CHECK_ROWS, CHECK_HEADS, " (--time-wrong: timed anyway)" if args.time_wrong else ""),
        "max_err: loss= the loss's absolute error, grad= the gradient's largest over the largest |reference| (g times "
        "it); y= the probabilities' absolute error, dx= as grad.",
        "Floors (floor: its ms in the same rounds): cross_entropy a copy of the logits (dst.copy_(x): read and write); "
        "cross_entropy_loss logits.amax(dim=1) (a read), as bench/cross_entropy.py; attention_softmax "
        "bench/attention_softmax.py's masked floor (visible scores read, every output written); "
        "attention_softmax+backward that floor then its backward's (visible y and dy read, every dx written), the "
        "softcap backward's read of the scores not counted; bias: a copy of the scores plus the tensor's amax as stored "
        "(one read of it).",
        "Systems: softmax_tune (cross_entropy(x, t, softcap=), attention_softmax(x, scale=, softcap=, causal=True)); "
        "torch (F.cross_entropy(cap * torch.tanh(x / cap), t); torch.softmax((cap * torch.tanh(x * scale / cap))"
        ".masked_fill(~causal, -inf), -1), in the inputs' dtype; bias: softmax(x.float() * scale + t, or masked_fill(~t, "
        "-inf), -1).to(x.dtype)); torch_compile (torch.compile(that, "
        "dynamic=False)); "
        + liger_line,
        "scaled: g=G is torch.autograd.grad(loss * G, x) (what (loss * G).backward() runs, less the accumulation into "
        ".grad), g=1 autograd.grad(loss, x); the bf16 loss times a power of two is exact. Each g's rows are timed in "
        "rounds of their own, with the floor: a training run holds its scale (gradient accumulation's 1/8 every step, "
        "a loss scaler's 65536 for thousands), and softmax_tune's forward writes the gradient times the scale its last "
        "backward saw (docs/cross-entropy.md).",
        "narrow (2-128 columns): not here; bench/random_shapes.py --cols 2,128 draws them "
        "(bench/shapes/narrow-20261127.txt) and SHAPES=that bench/untuned_run.sh runs them untuned against tuned.",
        COLUMNS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="softcap,scaled,bias,narrow", help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--quick", action="store_true", help="one small problem of each kind, 10 rounds")
    ap.add_argument("--dtypes", default="bfloat16", help="the scaled case's dtypes")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--tune", metavar="BIN", help="tune each problem first with this softmax-tune command")
    ap.add_argument("--no-inductor", action="store_true", help="skip torch.compile")
    ap.add_argument("--time-wrong", action="store_true", help="time systems that fail their check (marked WRONG)")
    ap.add_argument("--liger", default=os.environ.get("LIGER_PATH", os.path.join(HERE, "..", ".peers", "liger")))
    ap.add_argument("--out")
    args = ap.parse_args()
    bad = [c for c in args.case.split(",") if c not in CASES]
    if bad:
        ap.error("unknown case %s (cases: %s)" % (",".join(bad), ",".join(CASES)))
    if args.quick:
        args.rounds = 10
    for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, k):   # a compile per problem, all on the same few functions
            setattr(torch._dynamo.config, k, 1024)
    liger, commit = find_liger(args.liger)
    liger_line = ("liger (liger_kernel.ops.cross_entropy.LigerCrossEntropyFunction, its softcap; %s)." % commit
                  if liger else "liger: not run (%s)." % commit)
    out = args.out or os.path.join(HERE, "results", "fused-cases-%s-%s.tsv" % (gpu_name(),
                                                                               datetime.date.today().isoformat()))
    lines = header(*notes(args, liger_line),
                   timing="Median of %d interleaved rounds (benchlib.interleaved_ms: L2 cleared before each call, "
                          "a GPU-side hold so launch time is not counted)." % args.rounds)
    run_table(out, lines, jobs(args, liger))


if __name__ == "__main__":
    main()
