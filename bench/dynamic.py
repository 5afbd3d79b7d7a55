#!/usr/bin/env python3
"""dynamic.py — workloads whose shape changes every call (a decoder's growing KV cache, prompts
of every length, packed batches), as a new user runs them: the whole loop, each shape's first
call, the steady call, and the NVRTC compiles it took.

    python3 bench/dynamic.py [--workloads a,b,...] [--out TABLE.tsv] [--seed S]

Workloads (bf16):
  decode       attention_softmax 8x32x1xK causal, K = 2000..2063 (a step a key)
  decode4096   the same, K = 1..4096
  prefill      attention_softmax 1x16xQxQ causal, Q = 500..515
  softmax      softmax 256xK, K = 3000..3031
  ce32k        cross_entropy Nx32000 forward + backward, N = 4000..4031
  ce128k       cross_entropy Nx128256 forward + backward, 32 random N in [1000, 16384] (--seed)
Systems, each in a process of its own: st-fresh (softmax-tune, an empty cache and no kept
cubins), st-second (softmax-tune again, with the cache and kept cubins st-fresh left: a
second process of the same job), torch (eager: softmax over a -inf masked copy for attention,
F.cross_entropy). Liger Kernel is not installed on the GPU machines: not run.
Per call: its inputs are made and synchronized first, then the call (forward and backward for
cross-entropy) and a synchronize are timed on the host clock. total_s: the sum over the workload's
calls; first_call_ms: each shape's first call (median, max); steady_ms: the last shape called 20
times more, median; compiles: softmax_tune.stats()'s NVRTC compiles in the process (torch: '-').
Runs where `import softmax_tune` finds the library (SOFTMAX_TUNE_LIB).
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

WORKLOADS = ["decode", "prefill", "softmax", "ce32k", "ce128k", "decode4096"]
SYSTEMS = ["st-fresh", "st-second", "torch"]


def shapes(name, seed):
    if name == "decode":
        return [(8, 32, 1, k) for k in range(2000, 2064)]
    if name == "decode4096":
        return [(8, 32, 1, k) for k in range(1, 4097)]
    if name == "prefill":
        return [(1, 16, q, q) for q in range(500, 516)]
    if name == "softmax":
        return [(256, k) for k in range(3000, 3032)]
    if name == "ce32k":
        return [(n, 32000) for n in range(4000, 4032)]
    rng = random.Random(seed)
    return [(rng.randint(1000, 16384), 128256) for _ in range(32)]


def make(torch, name, shape):
    """The inputs of one call and the call itself, for softmax-tune (st) and for torch."""
    dev, bf = "cuda", torch.bfloat16
    if name in ("decode", "decode4096", "prefill"):
        x = torch.randn(*shape, device=dev, dtype=bf)
        B, H, Q, K = shape
        def st():
            import softmax_tune
            return softmax_tune.attention_softmax(x, causal=True)
        def eager():
            keep = torch.ones(Q, K, dtype=torch.bool, device=dev).tril(K - Q)
            return torch.softmax(x.masked_fill(~keep, float("-inf")), dim=-1)
        return st, eager
    if name == "softmax":
        x = torch.randn(*shape, device=dev, dtype=bf)
        def st():
            import softmax_tune
            return softmax_tune.softmax(x, dim=-1)
        return st, lambda: torch.softmax(x, dim=-1)
    n, v = shape
    logits = torch.randn(n, v, device=dev, dtype=bf, requires_grad=True)
    labels = torch.randint(0, v, (n,), device=dev)
    def st():
        import softmax_tune
        softmax_tune.cross_entropy(logits, labels).backward()
    def eager():
        torch.nn.functional.cross_entropy(logits, labels).backward()
    return st, eager


def child(name, system, seed):
    """One workload on one system in this process: prints the row's figures."""
    import torch
    if system != "torch":
        import softmax_tune
    sh = shapes(name, seed)
    warm = torch.randn(4, 4, device="cuda")   # CUDA and the library opened outside the timing
    if system != "torch":
        softmax_tune.softmax(warm)
    torch.cuda.synchronize()
    first, total, call = [], 0.0, None
    for s in sh:
        st, eager = make(torch, name, s)
        call = eager if system == "torch" else st
        torch.cuda.synchronize()
        t = time.perf_counter()
        call()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        first.append(dt * 1e3)
        total += dt
    steady = []
    for _ in range(20):
        torch.cuda.synchronize()
        t = time.perf_counter()
        call()
        torch.cuda.synchronize()
        steady.append((time.perf_counter() - t) * 1e3)
    compiles = "-" if system == "torch" else str(softmax_tune.stats().get("compiles", "?"))
    print("ROW\t%d\t%.3f\t%.3f\t%.3f\t%.4f\t%s" % (len(sh), total, statistics.median(first), max(first),
                                                  statistics.median(steady), compiles))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--out", default="-")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "SYSTEM"))
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], a.child[1], a.seed)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    tree = os.environ.get("ST_TREE", "?")
    out.write("# dynamic shapes: bench/dynamic.py --seed %d on %s, tree %s; Liger not installed: not run\n"
              % (a.seed, gpu[0] if gpu else "?", tree))
    out.write("workload\tsystem\tshapes\ttotal_s\tfirst_call_ms_median\tfirst_call_ms_max\tsteady_ms\tcompiles\n")
    out.flush()
    for name in a.workloads.split(","):
        state = tempfile.mkdtemp(prefix="st_dyn_")
        env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(state, "cache.db"),
                   SOFTMAX_TUNE_CUBINS=os.path.join(state, "cubins"), PYTHONUNBUFFERED="1")
        for system in a.systems.split(","):
            try:
                r = subprocess.run([sys.executable, __file__, "--seed", str(a.seed), "--child", name, system], env=env,
                                   capture_output=True, text=True, timeout=a.timeout)
                row = [l for l in r.stdout.splitlines() if l.startswith("ROW\t")]
                fields = row[0].split("\t")[1:] if row else ["-"] * 6
                if not row:
                    print("%s %s failed: %s" % (name, system, r.stderr.strip()[-600:]), file=sys.stderr)
            except subprocess.TimeoutExpired:
                fields = ["-", ">%d" % a.timeout, "-", "-", "-", "-"]
            out.write("\t".join([name, system] + fields) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
