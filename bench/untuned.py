#!/usr/bin/env python3
"""untuned.py — the untuned path against the tuned one and torch, on problems nobody tuned,
forward (softmax, log_softmax) or backward (softmax_backward, log_softmax_backward).

    python3 bench/untuned.py phase untuned|tuned --shapes FILE --out PART.tsv   (one process each)
    python3 bench/untuned.py merge UNTUNED.tsv TUNED.tsv --shapes FILE --device NAME --out TABLE.tsv
                             [--table TEXT] [--not-tuned TEXT]

phase untuned: with $SOFTMAX_TUNE_CACHE an empty cache and SOFTMAX_TUNE_MISS=heuristic (the
default table: the built-in one, or $SOFTMAX_TUNE_TABLE's), each problem's first call through
the Python binding, timed with its compile (first_call_ms: the wall time of the call and a
synchronize; a warm-up shape opens the library first; no kept cubins unless
$SOFTMAX_TUNE_CUBINS says where), its output checked by softmax-tune's rule
(python/softmax_tune_check.py), then medians of softmax-tune, the floor and torch, timed in
interleaved rounds (benchlib.interleaved_ms: the L2 cleared before each launch, the host's
launch time not counted).
  forward:  x = randn*3 in the dtype; softmax_tune.softmax(x, log=...); floor a torch copy of x;
            torch.softmax / log_softmax; checked by explain().
  backward: y = softmax (log_softmax) of randn*3 in float32, cast to the dtype, dy = randn in the
            dtype; torch.ops.softmax_tune.softmax_backward(y, dy, log) (st_softmax_backward);
            floor torch.add(y, dy, out=dx), a kernel that reads two tensors and writes one;
            torch._softmax_backward_data / _log_softmax_backward_data; checked by
            backward_explain().
phase tuned: the same with the cache the tuner filled (`softmax-tune --shapes FILE`) and
SOFTMAX_TUNE_MISS=error; a problem the tuner did not reach is a comment line. Each phase writes
its rows as it goes (a phase cut short by a timeout keeps them).
merge: the table (fractions of the floor, each against its own phase's floor; a problem the
tuner did not reach has tuned_frac '-' and is counted apart) and a summary line: geomean
untuned/tuned, worst, below 0.85, untuned more than 3% slower than torch on calls where torch
takes 10 us or more (the untuned phase's own rounds; shorter calls counted apart), first call.
"""
import argparse
import math
import os
import sys
import time
import warnings

DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
BACKWARD = ("softmax_backward", "log_softmax_backward")
TORCH_MIN_US = 10.0   # the torch rule counts calls of this long and more (issue 39)
COLUMNS = "dtype\tshape\top\tfrac\ttorch_frac\tfirst_call_ms\tok\tconfig\tsource\tfloor_us\tus\ttorch_us"


def problems(path):
    seed, out = "", []
    for line in open(path):
        if line.startswith("#"):
            seed = seed or line[1:].strip()
            continue
        if line.strip():
            shape, dtype, op = line.split()
            out.append((dtype, shape, op))
    return seed, out


def forward_case(torch, softmax_tune, explain, dtype, r, c, op):
    """(first call, check of its output, config, [floor, ours, torch] timed) of a forward problem."""
    log = op == "log_softmax"
    x = (torch.randn(r, c, device="cuda") * 3).to(dtype)
    out = torch.empty_like(x)
    tf = (lambda: torch.log_softmax(x, -1)) if log else (lambda: torch.softmax(x, -1))
    return (lambda: softmax_tune.softmax(x, log=log, out=out), lambda y: explain(y, x, log=log),
            lambda: softmax_tune.config(x, log=log),
            [lambda: out.copy_(x), lambda: softmax_tune.softmax(x, log=log, out=out), tf])


def backward_case(torch, softmax_tune, backward_explain, dtype, r, c, op):
    """The same for a backward problem: y a real forward output (float32, cast), dy random."""
    log = op == "log_softmax_backward"
    x = torch.randn(r, c, device="cuda") * 3
    y = (torch.log_softmax(x, -1) if log else torch.softmax(x, -1)).to(dtype)
    del x
    dy = torch.randn(r, c, device="cuda").to(dtype)
    dx = torch.empty_like(y)
    ours = torch.ops.softmax_tune.softmax_backward
    bw = torch._log_softmax_backward_data if log else torch._softmax_backward_data
    return (lambda: ours(y, dy, log), lambda g: backward_explain(g, y, dy, log=log),
            lambda: softmax_tune.config(y, log=log, backward=True),
            [lambda: torch.add(y, dy, out=dx), lambda: ours(y, dy, log), lambda: bw(dy, y, -1, dtype)])


def warm_up(torch, softmax_tune, backward):
    """Opens the library (and the backward op), not a problem's cost; under miss policy error 7x3
    may be untuned."""
    x = torch.randn(7, 3, device="cuda")
    for f in [lambda: softmax_tune.softmax(x)] + ([lambda: torch.ops.softmax_tune.softmax_backward(x, x, False)]
                                                  if backward else []):
        try:
            f()
        except RuntimeError:
            pass
    torch.cuda.synchronize()


def phase(args):
    os.environ.setdefault("SOFTMAX_TUNE_CUBINS", "none")   # first_call_ms with the compile, not a kept cubin
    os.environ.setdefault("SOFTMAX_TUNE_WARN", "each")     # the per-problem messages name each one's source
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "python"))
    sys.path.insert(0, here)
    from benchlib import interleaved_ms
    import softmax_tune
    from softmax_tune_check import backward_explain, explain
    sources = []
    warnings.showwarning = lambda msg, *a, **k: sources.append(str(msg))
    _, probs = problems(args.shapes)
    warm_up(torch, softmax_tune, any(op in BACKWARD for _, _, op in probs))
    table = os.environ.get("SOFTMAX_TUNE_TABLE", "")
    table_dir = os.path.dirname(table) + "/" if os.path.isabs(table) else None   # no host folder in the sources
    part = open(args.out, "w")   # a row as each problem is done: a phase cut short keeps what it did
    part.write(COLUMNS + "\n")
    for dtype, shape, op in probs:
        r, c = map(int, shape.split("x"))
        torch.manual_seed(r * 7 + c)
        backward = op in BACKWARD
        case = backward_case if backward else forward_case
        first_call, check, config, fns = case(torch, softmax_tune, backward_explain if backward else explain,
                                              getattr(torch, DT[dtype]), r, c, op)
        torch.cuda.synchronize()
        del sources[:]
        t = time.perf_counter()
        try:
            y = first_call()
        except RuntimeError as e:   # a problem the tuner did not reach (phase tuned): left out, said
            print("# %s %s %s: %s" % (dtype, shape, op, str(e).splitlines()[0]), flush=True)
            continue
        torch.cuda.synchronize()
        first = (time.perf_counter() - t) * 1e3
        ok, err, _ = check(y)
        floor_ms, st_ms, torch_ms = interleaved_ms(fns)
        src = [s for s in sources if "no tuned kernel" in s or "uses the kernel" in s]
        src = src[0].split(", from ")[-1].split(" (tune with")[0] if src else "cache"
        src = src.replace(table_dir, "", 1) if table_dir else src
        row = "%s\t%s\t%s\t%.4f\t%.4f\t%.1f\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f" % (
            dtype, shape, op, floor_ms / st_ms, floor_ms / torch_ms, first, "ok" if ok else "WRONG(%.3g ulp)" % err,
            config(), src, floor_ms * 1e3, st_ms * 1e3, torch_ms * 1e3)
        print(row, flush=True)
        part.write(row + "\n")
        part.flush()
        del y, first_call, check, config, fns
        torch.cuda.empty_cache()
    part.close()


def read(path):
    if not os.path.exists(path):
        return {}
    lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip() and not l.startswith("#")]
    if not lines:
        return {}
    head = lines[0]
    return {(d[0], d[1], d[2]): dict(zip(head, d)) for d in lines[1:]}


def header(args, seed, backward):
    what = "backward " if backward else ""
    floor = ("the floor, torch.add(y, dy, out=dx): a kernel that reads two tensors and writes one" if backward
             else "a torch copy of the same tensor")
    return ["# %suntuned path vs tuned vs torch on %s, %s; problems: %s" % (what, args.device, time.strftime("%Y-%m-%d"), seed),
            "# fractions of %s (medians of interleaved rounds, L2 cleared before each launch, the host's launch time"
            " not counted); untuned: empty cache, miss policy heuristic, %s; first_call_ms: first call incl. the"
            " NVRTC compile; torch_us: torch's time (the torch rule counts calls of %g us and more)%s" %
            (floor, args.table, TORCH_MIN_US, "; y a float32 softmax (log_softmax) cast to the dtype, dy randn" if backward else ""),
            "dtype\tshape\top\tuntuned_frac\ttuned_frac\ttorch_frac\tfirst_call_ms\tuntuned_ok\tuntuned_config\tsource\ttorch_us"]


def merge(args):
    seed, probs = problems(args.shapes)
    un, tu = read(args.untuned), read(args.tuned)
    out = header(args, seed, any(op in BACKWARD for _, _, op in probs))
    ratios, slow, slow_short, untuned_only, missing = [], [], [], [], []
    for p in probs:
        u, t = un.get(p), tu.get(p)
        if not u:
            missing.append(p)
            out.append("# %s %s %s: missing (untuned phase)" % p)
            continue
        uf, pf, torch_us = float(u["frac"]), float(u["torch_frac"]), float(u["torch_us"])
        if t:
            ratios.append((uf / float(t["frac"]), p))
        else:
            untuned_only.append(p)
        if uf < pf / 1.03:
            (slow if torch_us >= TORCH_MIN_US else slow_short).append(p)
        out.append("%s\t%s\t%s\t%.3f\t%s\t%.3f\t%s\t%s\t%s\t%s\t%.1f" % (
            p + (uf, "%.3f" % float(t["frac"]) if t else "-", pf, u["first_call_ms"], u["ok"], u["config"], u["source"],
                 torch_us)))
    names = lambda ps: ", ".join(" ".join(p) for p in ps)
    parts = ["%d problems" % len(probs)]
    if ratios:
        g = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        worst = min(ratios)
        parts.append("untuned/tuned over %d: geomean %.3f, worst %.3f (%s); below 0.85: %d" %
                     (len(ratios), g, worst[0], " ".join(worst[1]), sum(r < 0.85 for r, _ in ratios)))
    parts.append("untuned more than 3%% slower than torch where torch takes %g us or more: %d %s (shorter calls: %d %s)" %
                 (TORCH_MIN_US, len(slow), names(slow), len(slow_short), names(slow_short)))
    wrong = [p for p in probs if p in un and un[p]["ok"] != "ok"]
    parts.append("wrong: %d %s" % (len(wrong), names(wrong)))
    if untuned_only:
        parts.append("not tuned%s, so not in the geomean: %d %s" % (args.not_tuned, len(untuned_only), names(untuned_only)))
    if missing:
        parts.append("missing from the untuned phase: %d %s" % (len(missing), names(missing)))
    fc = sorted(float(un[p]["first_call_ms"]) for p in probs if p in un)
    if fc:
        parts.append("first call median %.0f ms, max %.0f ms" % (fc[len(fc) // 2], fc[-1]))
    out.append("# summary: " + "; ".join(parts))
    open(args.out, "w").write("\n".join(out) + "\n")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["phase", "merge"])
    ap.add_argument("rest", nargs="*", help="phase: untuned or tuned; merge: UNTUNED.tsv TUNED.tsv")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="")
    ap.add_argument("--table", default="the default table", help="merge: the header's words for the table used")
    ap.add_argument("--not-tuned", default="", help="merge: why a problem was not tuned, e.g. ' in 90 s (TUNE_LIMIT)'")
    a = ap.parse_args()
    if a.what == "phase":
        if a.rest not in (["untuned"], ["tuned"]):
            ap.error("phase takes untuned or tuned")
        phase(a)
    else:
        if len(a.rest) != 2:
            ap.error("merge takes UNTUNED.tsv TUNED.tsv")
        a.untuned, a.tuned = a.rest
        merge(a)


if __name__ == "__main__":
    main()
