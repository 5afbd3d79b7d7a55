#!/usr/bin/env python3
"""untuned.py — the untuned path against the tuned one and torch, on problems nobody tuned.

    python3 bench/untuned.py phase untuned|tuned --shapes FILE --out PART.tsv   (one process each)
    python3 bench/untuned.py merge UNTUNED.tsv TUNED.tsv --shapes FILE --device NAME --out TABLE.tsv

phase untuned: with $SOFTMAX_TUNE_CACHE an empty cache and SOFTMAX_TUNE_MISS=heuristic, each
problem's first call through the Python binding, timed with its compile (first_call_ms: the
wall time of softmax_tune.softmax(x) and a synchronize; a warm-up shape opens the library
first; no kept cubins unless $SOFTMAX_TUNE_CUBINS says where), its output checked by
softmax-tune's rule (python/softmax_tune_check.py), then medians of softmax-tune, a torch copy
of the same tensor and torch.softmax / log_softmax, timed in interleaved rounds
(benchlib.interleaved_ms: the L2 cleared before each launch). phase tuned: the same with the
cache the tuner filled (`softmax-tune --shapes FILE`). merge: the table (fractions of copy,
each against its own phase's copy) and a summary: geomean untuned/tuned, worst, problems where
untuned is more than 3% slower than torch (in the untuned phase's own rounds).
"""
import argparse
import math
import os
import sys
import time
import warnings

DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


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


def phase(args):
    os.environ.setdefault("SOFTMAX_TUNE_CUBINS", "none")   # first_call_ms with the compile, not a kept cubin
    os.environ.setdefault("SOFTMAX_TUNE_WARN", "each")     # the per-problem messages name each one's source
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "python"))
    sys.path.insert(0, here)
    from benchlib import interleaved_ms
    import softmax_tune
    from softmax_tune_check import explain
    sources = []
    warnings.showwarning = lambda msg, *a, **k: sources.append(str(msg))
    _, probs = problems(args.shapes)
    try:   # opens the library, not a shape's cost; under miss policy error 7x3 may be untuned
        softmax_tune.softmax(torch.randn(7, 3, device="cuda"))
    except RuntimeError:
        pass
    torch.cuda.synchronize()
    rows_out = ["dtype\tshape\top\tfrac\ttorch_frac\tfirst_call_ms\tok\tconfig\tsource"]
    for dtype, shape, op in probs:
        r, c = map(int, shape.split("x"))
        log = op == "log_softmax"
        torch.manual_seed(r * 7 + c)
        x = (torch.randn(r, c, device="cuda") * 3).to(getattr(torch, DT[dtype]))
        out = torch.empty_like(x)
        torch.cuda.synchronize()
        del sources[:]
        t = time.perf_counter()
        try:
            y = softmax_tune.softmax(x, log=log, out=out)
        except RuntimeError as e:   # a problem the tuner did not reach (phase tuned): left out, said
            print("# %s %s %s: %s" % (dtype, shape, op, e), flush=True)
            continue
        torch.cuda.synchronize()
        first = (time.perf_counter() - t) * 1e3
        ok, err, _ = explain(y, x, log=log)
        cfg = softmax_tune.config(x, log=log)
        tf = (lambda: torch.log_softmax(x, -1)) if log else (lambda: torch.softmax(x, -1))
        copy_ms, st_ms, torch_ms = interleaved_ms([lambda: out.copy_(x),
                                                   lambda: softmax_tune.softmax(x, log=log, out=out), tf])
        src = [s for s in sources if "no tuned kernel" in s or "uses the kernel" in s]
        src = src[0].split(", from ")[-1].split(" (tune with")[0] if src else "cache"
        row = "%s\t%s\t%s\t%.4f\t%.4f\t%.1f\t%s\t%s\t%s" % (dtype, shape, op, copy_ms / st_ms, copy_ms / torch_ms, first,
                                                         "ok" if ok else "WRONG(%.3g ulp)" % err, cfg, src)
        print(row, flush=True)
        rows_out.append(row)
        del x, out, y
        torch.cuda.empty_cache()
    open(args.out, "w").write("\n".join(rows_out) + "\n")


def read(path):
    lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    head = lines[0]
    return {(d[0], d[1], d[2]): dict(zip(head, d)) for d in lines[1:]}


def merge(args):
    seed, probs = problems(args.shapes)
    un, tu = read(args.untuned), read(args.tuned)
    out = ["# untuned path vs tuned vs torch on %s, %s; problems: %s" % (args.device, time.strftime("%Y-%m-%d"), seed),
           "# fractions of a torch copy of the same tensor (medians of interleaved rounds, L2 cleared before each"
           " launch, the host's launch time not counted); untuned: empty cache, miss policy heuristic, the"
           " default table; first_call_ms: first call incl. the NVRTC compile",
           "dtype\tshape\top\tuntuned_frac\ttuned_frac\ttorch_frac\tfirst_call_ms\tuntuned_ok\tuntuned_config\tsource"]
    ratios, slow = [], []
    for p in probs:
        u, t = un.get(p), tu.get(p)
        if not u or not t:
            out.append("# %s %s %s: missing (%s)" % (p + ("untuned" if not u else "tuned",)))
            continue
        uf, tf, pf = float(u["frac"]), float(t["frac"]), float(u["torch_frac"])
        ratios.append((uf / tf, p))
        if uf < pf / 1.03:
            slow.append(p)
        out.append("%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s" % (p + (uf, tf, pf, u["first_call_ms"], u["ok"], u["config"], u["source"])))
    g = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst = min(ratios)
    fc = sorted(float(un[p]["first_call_ms"]) for p in probs if p in un)
    out.append("# summary: %d problems; untuned/tuned geomean %.3f, worst %.3f (%s); below 0.85: %d; untuned more than 3%%"
               " slower than torch: %d %s; first call median %.0f ms, max %.0f ms" %
               (len(ratios), g, worst[0], " ".join(worst[1]), sum(r < 0.85 for r, _ in ratios), len(slow),
                ", ".join(" ".join(p) for p in slow), fc[len(fc) // 2], fc[-1]))
    open(args.out, "w").write("\n".join(out) + "\n")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["phase", "merge"])
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="")
    a = ap.parse_args()
    if a.what == "phase":
        phase(a)
    else:
        a.untuned, a.tuned = a.rest
        merge(a)


if __name__ == "__main__":
    main()
