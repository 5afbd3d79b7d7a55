#!/usr/bin/env python3
"""vp_parts.py — where does vocab_parallel_cross_entropy's time go beyond its shard's single-GPU op?
One GPU, a one-rank NCCL group: the same passes as each rank of a group runs (the statistics'
loss-only kernel, the all-gather, the weighted gradient kernel, the label fix-ups), without the
wire. Variants, bf16 logits [N, V] (a rank's shard), fwd+bwd of the mean loss, 5% of labels -100:
  shard_alone    softmax_tune.cross_entropy(x, t): the single-GPU op (the bound's part)
  vp             softmax_tune.vocab_parallel_cross_entropy(x, t, group): the op of issue 57
  vp_forward     the same, forward only (statistics, exchange, row losses)
  loss_only      softmax_tune.cross_entropy(x, t) on x without a gradient: the statistics' read
  vp_old         with --old FILE: vocab_parallel_cross_entropy of another vocab_parallel.py (say
                 `git show REV:python/softmax_tune/vocab_parallel.py`), loaded beside this one and
                 timed in the same rounds, over the same library
Timed by benchlib.interleaved_ms (L2 cleared, a GPU-side hold); then host time (a loop of calls,
one synchronize) and one vp call under torch.profiler: its CUDA kernels, each's us and count.
On the GPU machine, .carry/ packed (bench/carry.sh), from the repository root:

    python3 lab/vp_parts.py [--old FILE] [NxV ...]      (default 8192x64128 8192x76032: Llama-3's and Qwen2.5's
                                            halves of the vocabulary)
"""
import os
import sys

import torch
import torch.distributed as dist

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "bench"))
import softmax_tune  # noqa: E402
from benchlib import interleaved_ms  # noqa: E402
from host_overhead import loop_us  # noqa: E402


def problem(n, v):
    g = torch.Generator(device="cuda").manual_seed(20261128)
    x = (torch.randn(n, v, device="cuda", generator=g) * 3).to(torch.bfloat16).requires_grad_()
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    t[torch.rand(n, device="cuda", generator=g) < 0.05] = -100
    return x, t


def old_module(path):
    """vocab_parallel.py at path as softmax_tune._vp_old (its relative imports: this package's)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("softmax_tune._vp_old", path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    return m


def main():
    args = sys.argv[1:]
    old = old_module(args.pop(args.index("--old") + 1)) if "--old" in args else None
    args = [a for a in args if a != "--old"]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29571")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    grp = dist.group.WORLD
    print("# %s, torch %s, %s" % (torch.cuda.get_device_name(), torch.__version__,
                                  "C++ ops" if getattr(softmax_tune._native, "C", None) is not None else "ctypes"))
    for shape in args or ["8192x64128", "8192x76032"]:
        n, v = map(int, shape.split("x"))
        x, t = problem(n, v)
        xn = x.detach()
        fns = {
            "shard_alone": lambda: torch.autograd.grad(softmax_tune.cross_entropy(x, t), [x]),
            "vp": lambda: torch.autograd.grad(softmax_tune.vocab_parallel_cross_entropy(x, t, grp), [x]),
            "vp_forward": lambda: softmax_tune.vocab_parallel_cross_entropy(xn, t, grp),
            "loss_only": lambda: softmax_tune.cross_entropy(xn, t),
        }
        if old is not None:
            fns["vp_old"] = lambda: torch.autograd.grad(old.vocab_parallel_cross_entropy(x, t, grp), [x])
        ms = dict(zip(fns, interleaved_ms(list(fns.values()))))
        host = {k: loop_us(f, 50) for k, f in fns.items() if k in ("vp", "vp_old", "shard_alone")}
        print("%s bf16: " % shape + ", ".join("%s %.3f ms" % kv for kv in ms.items())
              + "; a call's host+GPU in a loop: " + ", ".join("%s %.0f us" % kv for kv in host.items()))
        for name in ("vp", "vp_old") if old is not None else ("vp",):
            kernels(name, fns[name])
    dist.destroy_process_group()


def kernels(name, fn):
    """fn's CUDA kernels a call under torch.profiler (3 calls): their total and the 14 longest."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    rows = sorted(((e.key, e.device_time_total / 3, e.count // 3) for e in prof.key_averages()), key=lambda r: -r[1])
    print("  %s's kernels a call: %.1f us in all, %d launches" % (name, sum(r[1] for r in rows), sum(r[2] for r in rows)))
    for k, us, c in rows[:14]:
        print("    %8.1f us  x%-3d %s" % (us, c, k[:90]))


if __name__ == "__main__":
    main()
