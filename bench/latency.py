#!/usr/bin/env python3
"""latency.py — the cache-hit latency: in a fresh process (torch already up, tensor allocated),
the time from the first softmax_tune call, which opens the library's context (st_open), looks
the shape up in the cache, checks and loads its cubin, to the end of that first launch.

    python3 bench/latency.py --shape 4096x4096 [--dtype bfloat16] [--runs 5]
"""

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time, torch
sys.path.insert(0, sys.argv[1])
import softmax_tune
rows, cols = map(int, sys.argv[2].split("x"))
x = torch.randn(rows, cols, device="cuda").to(getattr(torch, sys.argv[3]))
torch.cuda.synchronize()
t0 = time.perf_counter()
y = softmax_tune.softmax(x)
torch.cuda.synchronize()
t1 = time.perf_counter()
y2 = softmax_tune.softmax(x)
torch.cuda.synchronize()
t2 = time.perf_counter()
print("%.3f %.3f" % ((t1 - t0) * 1e3, (t2 - t1) * 1e3))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    firsts, seconds = [], []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD, here, args.shape, args.dtype], check=True,
                             capture_output=True, text=True, env=dict(os.environ, SOFTMAX_TUNE_MISS="error"))
        a, b = map(float, out.stdout.split())
        firsts.append(a)
        seconds.append(b)
    firsts.sort()
    seconds.sort()
    print("cache-hit latency, %s %s, %d fresh processes: first call (st_open + look-up + load + launch) "
          "median %.1f ms (min %.1f, max %.1f); second call %.3f ms" % (args.shape, args.dtype, args.runs,
          firsts[len(firsts) // 2], firsts[0], firsts[-1], seconds[len(seconds) // 2]))


if __name__ == "__main__":
    main()
