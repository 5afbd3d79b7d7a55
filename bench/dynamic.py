#!/usr/bin/env python3
"""dynamic.py — workloads whose shape changes every call (a decoder's growing KV cache, prompts
of every length, packed batches), as a new user runs them: the whole loop, each shape's first
call, the steady call, and the NVRTC compiles it took.

    python3 bench/dynamic.py [--workloads a,b,...] [--systems a,b,...] [--liger DIR] [--out TABLE.tsv] [--seed S]

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
F.cross_entropy), liger (Liger Kernel from its sources at --liger DIR, default $LIGER_PATH, else
.peers/liger, on sys.path in its process only: LigerSoftmaxFunction, LigerCrossEntropyFunction with
ignore_index -100 and mean reduction as F.cross_entropy's; an empty Triton cache, TRITON_CACHE_DIR
in the workload's folder; softmax, ce32k and ce128k only: no masked attention softmax in Liger, no
row). Liger's first call of a workload is checked against torch eager on the same input (untimed;
softmax: each row's L1 error <= 2e-2; cross-entropy: the loss within rtol 2e-2, the gradient's max
error <= 2e-2 of its largest element); a miss is a row with total_s WRONG, the reason in stderr. No
liger_kernel under DIR, or its import failing: no liger rows, the header says why; it names
Liger's commit (DIR/COMMIT) otherwise.
Per call: its inputs are made and synchronized first, then the call (forward and backward for
cross-entropy) and a synchronize are timed on the host clock. total_s: the sum over the workload's
calls; first_call_ms: each shape's first call (median, max); steady_ms: the last shape called 20
times more, median; compiles: softmax_tune.stats()'s NVRTC compiles in the process (liger: Triton
JIT compiles, counted by triton.knobs.runtime.jit_post_compile_hook, '-' without it; torch: '-').
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
SYSTEMS = ["st-fresh", "st-second", "torch", "liger"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGER = {"softmax": ("softmax", "LigerSoftmaxFunction"),   # workload: (liger_kernel.ops module, its function)
         "ce32k": ("cross_entropy", "LigerCrossEntropyFunction"),
         "ce128k": ("cross_entropy", "LigerCrossEntropyFunction")}


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


def make_liger(torch, fn, name, shape, check):
    """Liger's call on one shape's inputs, as make's, and (where check) a function of that call's result
    that runs torch eager on the same input after it: None if they agree, else why not. Liger's
    cross-entropy writes its gradient into its input: torch gets a copy taken before."""
    dev, bf = "cuda", torch.bfloat16
    if name == "softmax":
        x = torch.randn(*shape, device=dev, dtype=bf)
        def agree(y):
            err = (y.float() - torch.softmax(x, dim=-1).float()).abs().sum(dim=-1).max().item()
            return None if err <= 2e-2 else "a row's L1 error %.3g against torch.softmax" % err
        return (lambda: fn.apply(x)), agree if check else None
    n, v = shape
    logits = torch.randn(n, v, device=dev, dtype=bf, requires_grad=True)
    labels = torch.randint(0, v, (n,), device=dev)
    x0 = logits.detach().clone().requires_grad_() if check else None
    def call():
        loss = fn.apply(logits, labels, None, -100, 0.0, 0.0, "mean", None, False, False, False)[0]
        loss.backward()
        return loss
    def agree(loss):
        want = torch.nn.functional.cross_entropy(x0, labels)
        want.backward()
        if logits.grad is None:
            return "no gradient"
        lerr = abs(loss.item() - want.item()) / abs(want.item())
        g, gw = logits.grad.float(), x0.grad.float()
        gerr = (g - gw).abs().max().item() / gw.abs().max().item()
        if lerr <= 2e-2 and gerr <= 2e-2:
            return None
        return "loss %.5g against F.cross_entropy's %.5g, gradient error %.3g of its largest" % (
            loss.item(), want.item(), gerr)
    return call, agree if check else None


def load_liger(path, names):
    """Liger's functions for the workloads names, from its sources at path, put on sys.path in this process
    only (benchlib.load_liger: the package __init__s not run), and Liger's commit; (None, why) if that fails."""
    try:
        import benchlib
        fns, commit = {}, None
        for name in names:
            mod, commit = benchlib.load_liger(path, LIGER[name][0])
            if mod is None:
                return None, commit
            fns[name] = getattr(mod, LIGER[name][1])
        return fns, commit
    except Exception as e:  # noqa: BLE001  (torch, triton or Liger itself missing: said, not fatal)
        return None, "%s: %s" % (type(e).__name__, e)


def triton_compiles():
    """A list that grows by one a Triton JIT compile in this process: triton.knobs.runtime.jit_post_compile_hook
    (JITFunction._do_compile calls it after each compile, triton 3.4 on); None without that knob."""
    try:
        from triton import knobs
    except ImportError:
        return None
    if not hasattr(knobs.runtime, "jit_post_compile_hook"):
        return None
    seen, prev = [], knobs.runtime.jit_post_compile_hook
    def hook(*args, **kwargs):
        seen.append(kwargs.get("key"))
        return prev(*args, **kwargs) if prev else None
    knobs.runtime.jit_post_compile_hook = hook
    return seen


def child(name, system, seed, liger):
    """One workload on one system in this process: prints the row's figures (liger: a WRONG line too where its
    first call disagrees with torch's). Workload probe, system liger: whether Liger loads, and its commit."""
    if system == "liger":
        fns, commit = load_liger(liger, sorted(LIGER) if name == "probe" else [name])
        if name == "probe" or fns is None:
            print("LIGER\t%s\t%s" % ("ok" if fns else "skip", " ".join(str(commit).split())[:300]))
            return
        fn, compiles = fns[name], triton_compiles()
    import torch
    if system.startswith("st-"):
        import softmax_tune
    sh = shapes(name, seed)
    warm = torch.randn(4, 4, device="cuda")   # CUDA and the library (Triton's driver) opened outside the timing
    if system.startswith("st-"):
        softmax_tune.softmax(warm)
    if system == "liger":
        try:
            from triton.runtime.driver import driver
            driver.active.get_current_device()
        except Exception:  # noqa: BLE001  (then in the first call's time)
            pass
    torch.cuda.synchronize()
    first, total, call, wrong = [], 0.0, None, None
    for i, s in enumerate(sh):
        if system == "liger":
            call, check = make_liger(torch, fn, name, s, i == 0)
        else:
            st, eager = make(torch, name, s)
            call, check = (eager if system == "torch" else st), None
        torch.cuda.synchronize()
        t = time.perf_counter()
        r = call()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        first.append(dt * 1e3)
        total += dt
        if check:
            wrong = check(r)
        r = None
    steady = []
    for _ in range(20):
        torch.cuda.synchronize()
        t = time.perf_counter()
        call()
        torch.cuda.synchronize()
        steady.append((time.perf_counter() - t) * 1e3)
    if system == "liger":   # a fresh process compiles at least once: none counted, the hook is not called
        compiles = str(len(compiles)) if compiles else "-"
    else:
        compiles = "-" if system == "torch" else str(softmax_tune.stats().get("compiles", "?"))
    if wrong:
        print("WRONG\t%s" % wrong)
        print("ROW\t%d\tWRONG\t-\t-\t-\t%s" % (len(sh), compiles))
        return
    print("ROW\t%d\t%.3f\t%.3f\t%.3f\t%.4f\t%s" % (len(sh), total, statistics.median(first), max(first),
                                                  statistics.median(steady), compiles))


def probe_liger(path, timeout):
    """(True, Liger's commit) if Liger loads from path in a process of its own, else (False, why not)."""
    if not os.path.isdir(os.path.join(path, "liger_kernel")):
        return False, "no liger_kernel under %s" % path
    try:
        r = subprocess.run([sys.executable, __file__, "--child", "probe", "liger", "--liger", path],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "its probe ran past %d s" % timeout
    said = [l.split("\t", 2) + [""] for l in r.stdout.splitlines() if l.startswith("LIGER\t")]
    if not said:
        return False, "its probe failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1]
    return said[0][1] == "ok", said[0][2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--out", default="-")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--liger", default=os.environ.get("LIGER_PATH") or os.path.join(ROOT, ".peers", "liger"),
                    help="Liger Kernel's sources (DIR/liger_kernel, DIR/COMMIT): $LIGER_PATH, else .peers/liger")
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "SYSTEM"))
    a = ap.parse_args()
    liger = os.path.abspath(a.liger)
    if a.child:
        return child(a.child[0], a.child[1], a.seed, liger)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    tree = os.environ.get("ST_TREE", "?")
    workloads, systems = a.workloads.split(","), a.systems.split(",")
    note = "liger: not run (not asked)"
    if "liger" in systems and any(w in LIGER for w in workloads):
        ok, said = probe_liger(liger, a.timeout)
        note = "liger: Liger Kernel %s from %s" % (said, a.liger) if ok else "liger: not run (%s)" % said
        systems = systems if ok else [x for x in systems if x != "liger"]
    out.write("# dynamic shapes: bench/dynamic.py --seed %d on %s, tree %s; %s\n"
              % (a.seed, gpu[0] if gpu else "?", tree, note))
    out.write("workload\tsystem\tshapes\ttotal_s\tfirst_call_ms_median\tfirst_call_ms_max\tsteady_ms\tcompiles\n")
    out.flush()
    for name in workloads:
        state = tempfile.mkdtemp(prefix="st_dyn_")
        env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(state, "cache.db"),
                   SOFTMAX_TUNE_CUBINS=os.path.join(state, "cubins"), PYTHONUNBUFFERED="1")
        for system in systems:
            if system == "liger" and name not in LIGER:
                continue
            cmd, e = [sys.executable, __file__, "--seed", str(a.seed), "--child", name, system], env
            if system == "liger":
                cmd, e = cmd + ["--liger", liger], dict(env, TRITON_CACHE_DIR=os.path.join(state, "triton"))
            try:
                r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=a.timeout)
                row = [l for l in r.stdout.splitlines() if l.startswith("ROW\t")]
                fields = row[0].split("\t")[1:] if row else ["-"] * 6
                if not row:
                    print("%s %s failed: %s" % (name, system, r.stderr.strip()[-600:]), file=sys.stderr)
                for l in r.stdout.splitlines():
                    if l.startswith(("WRONG\t", "LIGER\t")):
                        print("%s %s: %s" % (name, system, l.replace("\t", ": ", 1)), file=sys.stderr)
            except subprocess.TimeoutExpired:
                fields = ["-", ">%d" % a.timeout, "-", "-", "-", "-"]
            out.write("\t".join([name, system] + fields) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
