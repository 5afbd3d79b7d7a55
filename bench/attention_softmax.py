#!/usr/bin/env python3
"""attention_softmax.py — the attention-softmax table of issue 37: softmax(mask(scale * scores))
forward and backward on one GPU, every system in one run, each checked first.

    python3 bench/attention_softmax.py [--quick] [--dtypes float16,bfloat16] [--sizes 1024,...,32768]
        [--masks causal,padding] [--directions fwd,bwd] [--tune .carry/softmax-tune [--tune-only]] [--no-autotune]
        [--compile-budget S] [--rounds N] [--out F [--append]]

Writes bench/results/attention-softmax-<gpu>-<date>.tsv (or --out): dtype, shape, mask, bias,
direction, system, ms, frac_of_floor, frac_of_copy.
  shape BHxQxK: scores [B*H, Q, K] run as [B, H, Q, K] with B = B*H, H = 1 (key padding: one key
    length a row of B, drawn in [K/4, K]); [B*H, S, S] for S in --sizes, B*H sized to 512 MB of
    scores (one head at S = 32768: 2 GB in 16-bit types), and the decode shape [B*H, 1, 32768].
    float32 at S = 2048 and 8192 only (no decode).
  mask causal (offset K - Q) or padding; bias none; scale 1/sqrt(128).
  direction fwd: y = f(x). bwd: torch.autograd.grad(y, x, dy) of each system's own forward (graph
    kept), so each system's backward: the library's st_attention_softmax_backward, torch's chain of
    kernels, Inductor's generated ones.
  floor (the masked floor, frac_of_floor's denominator): a Triton kernel of this file over the mask's
    pattern, timed in the same rounds: fwd reads the visible scores and writes every output (masked
    ones 0); bwd reads the visible y and dy and writes every dx. Not the library's own floor
    (st_attn_floor is not in its API; `softmax-tune bench --op attention_softmax` reports that one).
  copy (frac_of_copy's): fwd dst.copy_(x); bwd torch.add(y, dy, out=dx): every element read and written.
Systems: softmax_tune (softmax_tune.attention_softmax), torch (the masked scaled scores' softmax:
torch.softmax((x * scale).masked_fill(~mask, -inf), -1)), inductor (that function under
torch.compile), inductor_max (mode="max-autotune-no-cudagraphs", within --compile-budget seconds of
compiles over the run), apex (Apex's Megatron fused softmax, bench/apex_softmax.py, where --apex holds
it built: bench/apex_fetch.sh, then bench/apex_build.py on the GPU machine). TransformerEngine is not
run (its build needs its whole C++ library; Apex's kernels are the same Megatron ones).
--tune BIN tunes each problem first (softmax-tune --op attention_softmax[_backward] --shape ...);
--tune-only then measures nothing (a run split over calls: tune, then measure).
--quick: bfloat16, S 1024 and 4096 and decode, 30 rounds, no max-autotune.
Timing: benchlib.interleaved_ms (median of --rounds interleaved rounds, L2 cleared, GPU-side hold).
"""

import argparse
import datetime
import math
import os
import subprocess
import time

import torch
import triton
import triton.language as tl

import apex_softmax
from benchlib import DTYPES, header, interleaved_ms, run_table, table_rows
from cross_entropy import Budget, gpu_name

import softmax_tune  # noqa: E402  (benchlib put python/ on the path)
from softmax_tune import attention as attn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1024, 2048, 4096, 8192, 16384, 32768]
F32_SIZES = (2048, 8192)
TARGET = 512 << 20   # bytes of scores a problem holds (at least one head)
DECODE_K = 32768
SCALE = 128 ** -0.5
UNCHECKED = ("floor", "copy")


@triton.jit
def _floor(x, dy, y, lens, Q, K, offset, CAUSAL: tl.constexpr, PAD: tl.constexpr, BW: tl.constexpr,
           BLOCK: tl.constexpr):
    """Row program_id(0), columns of block program_id(1): the visible ones read (x, and dy when BW:
    their sum written), every one written (masked ones 0)."""
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    hi = K
    if CAUSAL:
        hi = tl.minimum(row % Q + offset + 1, K)
    if PAD:
        hi = tl.minimum(tl.load(lens + row // Q), K)
    base = row.to(tl.int64) * K
    seen = cols < hi
    v = tl.load(x + base + cols, mask=seen, other=0.0)
    if BW:
        v += tl.load(dy + base + cols, mask=seen, other=0.0)
    tl.store(y + base + cols, v, mask=cols < K)


def floor_fn(x, dy, out, lens, causal):
    """The masked floor's kernel launch over x [B, 1, Q, K] (dy None: forward's)."""
    B, _, Q, K = x.shape
    block = 4096 if K >= 4096 else triton.next_power_of_2(K)
    grid = (B * Q, triton.cdiv(K, block))
    lens_arg = lens if lens is not None else x

    def run():
        _floor[grid](x, dy if dy is not None else x, out, lens_arg, Q, K, K - Q, CAUSAL=causal, PAD=lens is not None,
                     BW=dy is not None, BLOCK=block, num_warps=8)
        return out
    return run


def torch_softmax(mask):
    hidden = ~mask   # made once: not a pass of every call

    def f(x):
        return torch.softmax((x * SCALE).masked_fill(hidden, -math.inf), -1)
    return f


def problems(args):
    """(dtype name, B*H, Q, K) of the run."""
    for dname in args.dtypes.split(","):
        es = DTYPES[dname].itemsize
        for s in args.sizes:
            if dname == "float32" and s not in F32_SIZES:
                continue
            yield dname, max(1, TARGET // (s * s * es)), s, s
        if args.decode and dname != "float32":
            yield dname, max(1, TARGET // (DECODE_K * es)), 1, DECODE_K


def tune(binary, dname, B, Q, K, mask):
    """Tune the problem's forward and backward kernels into the cache (a line each)."""
    dt = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[dname]
    for op in ("attention_softmax", "attention_softmax_backward"):
        cmd = [binary, "--op", op, "--shape", "%dx1x%dx%d" % (B, Q, K), "--dtype", dt, "--mask", mask,
               "--scale", repr(SCALE), "--quiet"]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        print("# tune %s: rc %d, %.0f s %s" % (" ".join(cmd[1:]), r.returncode, time.time() - t0,
                                               (r.stdout + r.stderr).strip().replace("\n", " | ")[:300]), flush=True)


def systems(direction, x, dy, kl, mask, causal, args, budget):
    """(name, fn) of every system for this problem; a system that cannot start is a comment line."""
    opts = dict(scale=SCALE, causal=causal, key_lengths=kl)
    ts = torch_softmax(mask)
    fns = [("softmax_tune", lambda a: softmax_tune.attention_softmax(a, **opts), False), ("torch", ts, False)]
    if not args.no_inductor:
        fns.append(("inductor", torch.compile(ts, dynamic=False), False))
        if not args.no_autotune:
            fns.append(("inductor_max", torch.compile(ts, dynamic=False, mode="max-autotune-no-cudagraphs"), True))
    floor_out = torch.empty_like(x)
    xd = x.detach()
    if direction == "fwd":
        out = [("floor", floor_fn(xd, None, floor_out, kl, causal)), ("copy", lambda: floor_out.copy_(xd))]
    else:
        y0 = softmax_tune.attention_softmax(xd, **opts)
        out = [("floor", floor_fn(y0, dy, floor_out, kl, causal)),
               ("copy", lambda: torch.add(y0, dy, out=floor_out))]
    if args.apex_mods:
        try:
            out.append(("apex", apex_softmax.system(args.apex_mods, direction, xd, dy, mask, causal, SCALE)))
        except Exception as e:  # noqa: BLE001
            print("# apex: %s" % (str(e).splitlines() or [""])[0][:200], flush=True)
    for name, f, compiles in fns:
        def prepare(f=f):   # fwd: the call; bwd: the forward once (its graph kept), the call its gradient
            if direction == "fwd":
                f(xd)
                return lambda: f(xd)
            y = f(x)
            return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)[0]
        try:
            out.append((name, budget.take(prepare) if compiles else prepare()))
        except Exception as e:  # noqa: BLE001
            print("# %s: %s" % (name, (str(e).splitlines() or [""])[0][:200]), flush=True)
    return out


def checker(ref, extra, dtype):
    """check(out) -> (ok, err, why): out within the dtype's rounding of ref (the first rows of B,
    those ref holds) plus rel * extra (bwd: the sum's and y's rounding, scale |y| (|dy| + sum |dy y|)),
    plus one step of the dtype's subnormals (float16 outputs under 2^-14 are rounded to 2^-24)."""
    rel = {torch.float32: 1e-5, torch.float16: 2.0 ** -8, torch.bfloat16: 2.0 ** -6}[dtype]   # torch rounds scale * x
    tiny = {torch.float32: 2.0 ** -149, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -133}[dtype]   # subnormal step

    def check(out):
        got = out[:ref.shape[0]].float()
        bound = rel * (ref.abs() + extra) + rel * 1e-3 * float(ref.abs().max()) + tiny
        err = ((got - ref).abs() - bound).max().item()
        if not err <= 0:
            return False, err, "off by %.3g over the bound (or NaN)" % err
        return True, err, ""
    return check


def problem(dname, BH, Q, K, mask_kind, direction, args, budget):
    dtype = DTYPES[dname]
    g = torch.Generator(device="cuda").manual_seed(BH + Q + K)
    x = (torch.randn(BH, 1, Q, K, device="cuda", generator=g) * 4).to(dtype)
    causal = mask_kind == "causal"
    kl = None
    if causal:
        mask = torch.ones(Q, K, dtype=torch.bool, device="cuda").tril(K - Q)
    else:
        kl = (K * (0.25 + 0.75 * torch.rand(BH, device="cuda", generator=g))).int().clamp(1, K)
        mask = (torch.arange(K, device="cuda") < kl[:, None])[:, None, None, :]
    dy = torch.randn(BH, 1, Q, K, device="cuda", generator=g).to(dtype) if direction == "bwd" else None
    n = min(BH, 2)   # the rows of B checked
    ref = attn.reference(x[:n].float(), SCALE, causal=causal, key_lengths=kl[:n] if kl is not None else None)
    extra = 0.0
    if direction == "bwd":
        d = dy[:n].float()
        extra = SCALE * ref * (d.abs() + (d * ref).abs().sum(-1, keepdim=True))
        ref = SCALE * ref * (d - (d * ref).sum(-1, keepdim=True))
        x.requires_grad_()
    check = checker(ref, extra, dtype)
    key = [dname, "%dx%dx%d" % (BH, Q, K), mask_kind, "none", direction]
    try:
        cfg = attn.config(x.detach(), direction == "bwd", causal=causal, key_lengths=kl)
        print("# %s: softmax_tune kernel %s" % (" ".join(key), cfg), flush=True)
    except Exception as e:  # noqa: BLE001
        print("# %s: softmax_tune config: %s" % (" ".join(key), e), flush=True)
    ran = []
    for name, fn in systems(direction, x, dy, kl, mask, causal, args, budget):
        try:
            first = fn()
            ok, err, why = (True, 0.0, "") if name in UNCHECKED else check(first)
            del first
        except Exception as e:  # noqa: BLE001  (a system that cannot run this problem is a comment)
            print("# %s %s: %s" % (" ".join(key), name, (str(e).splitlines() or [""])[0][:200]), flush=True)
            continue
        if not ok:
            print("# %s %s WRONG: %s" % (" ".join(key), name, why), flush=True)
        ran.append((name, fn, ok, err))
    del ref, extra
    times = interleaved_ms([fn for _, fn, _, _ in ran], rounds=args.rounds)
    by_name = {name: ms for (name, _, _, _), ms in zip(ran, times)}
    floor_ms, copy_ms = by_name.get("floor", math.nan), by_name.get("copy", math.nan)
    return table_rows(key, [(name, ok, err) for name, _, ok, err in ran], times,
                      lambda i, ms: ["%.3f" % (floor_ms / ms), "%.3f" % (copy_ms / ms)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="bfloat16, S 1024 and 4096 and decode, 30 rounds")
    ap.add_argument("--dtypes", default="float16,bfloat16,float32")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--no-decode", dest="decode", action="store_false")
    ap.add_argument("--masks", default="causal,padding")
    ap.add_argument("--directions", default="fwd,bwd")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--tune", metavar="BIN", help="tune each problem first with this softmax-tune command")
    ap.add_argument("--tune-only", action="store_true", help="with --tune: tune the problems, measure nothing")
    ap.add_argument("--no-autotune", action="store_true", help="skip torch.compile max-autotune")
    ap.add_argument("--no-inductor", action="store_true", help="skip torch.compile altogether")
    ap.add_argument("--compile-budget", type=float, default=150.0, help="seconds of max-autotune compiles, all told")
    ap.add_argument("--apex", default=os.environ.get("APEX_PATH", os.path.join(HERE, "..", ".peers", "apex")),
                    help="Apex's sources, built by bench/apex_build.py (default .peers/apex)")
    ap.add_argument("--out")
    ap.add_argument("--append", action="store_true", help="add the rows to --out's table (a run split over calls)")
    args = ap.parse_args()
    if args.quick:
        args.dtypes, args.sizes, args.rounds, args.no_autotune = "bfloat16", "1024,4096", 30, True
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.apex_mods, apex_line = apex_softmax.load(args.apex)
    for k in ("cache_size_limit", "recompile_limit"):   # a compile per problem, all on one function
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 256)
    out = args.out or os.path.join(HERE, "results", "attention-softmax-%s-%s.tsv" % (
        gpu_name(), datetime.date.today().isoformat()))
    lines = header("softmax(mask(scale * x)), scale 1/sqrt(128), scores [B*H, Q, K] as [B, H=1, Q, K]; key padding: "
                   "a key length per row of B in [K/4, K]. Each system's output checked first against a float32 "
                   "reference (WRONG marks a miss); bwd: autograd.grad of its own forward.",
                   "floor: a Triton kernel over the mask's pattern (this file's _floor: visible elements read, "
                   "every output written), timed in the same rounds; not the library's st_attn_floor. copy: "
                   "fwd dst.copy_(x), bwd torch.add(y, dy, out=dx).",
                   apex_line + " TransformerEngine: not run (its build needs its whole C++ library).",
                   "softmax_tune %s; SOFTMAX_TUNE_MISS=%s; %s." % (
                       os.path.basename(softmax_tune.library_path()), os.environ.get("SOFTMAX_TUNE_MISS", "(default)"),
                       "each problem tuned first (--tune)" if args.tune else "untuned problems get the rule's kernel"),
                   "dtype\tshape\tmask\tbias\tdirection\tsystem\tms\tfrac_of_floor\tfrac_of_copy",
                   timing="Median of %d interleaved rounds (benchlib.interleaved_ms: L2 cleared before each call, "
                          "a GPU-side hold so launch time is not counted)." % args.rounds)
    if args.tune_only:   # no table written
        out = None
    elif args.append and os.path.exists(out):   # its header stays; this run's header is printed only
        with open(out) as f:
            lines = f.read().splitlines()
    budget = Budget(args.compile_budget)
    run_table(out, lines, jobs(args, budget))


def jobs(args, budget):
    """A callable per (problem, mask, direction), each problem tuned first under --tune."""
    for dname, BH, Q, K in problems(args):
        for mask_kind in args.masks.split(","):
            if args.tune:
                tune(args.tune, dname, BH, Q, K, mask_kind)
            for direction in [] if args.tune_only else args.directions.split(","):
                yield lambda d=dname, b=BH, q=Q, k=K, m=mask_kind, r=direction: problem(d, b, q, k, m, r, args, budget)


if __name__ == "__main__":
    main()
