"""attn_key_lengths.py LABEL — how fast is a tuned attention kernel at each key length? On the GPU
machine, with SOFTMAX_TUNE_CACHE holding the tuned kernel (lab/attn_key_lengths.sh tunes it first):
the bf16 1x1x32768x32768 key-padding backward (or --fwd: the forward; --shape B,S; --dtype) with
every batch at one key length L, for each L of --fracs (fractions of K) or --lengths, timed beside
the Triton masked floor of bench/attention_softmax.py in the same interleaved rounds. Prints
label, L, ms, floor ms, fraction of the floor. --once: one call each, no timing (under a profiler).

    python3 lab/attn_key_lengths.py bwd/1x32768 --shape 1,32768 --lengths 13926,13928
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import attention_softmax as B  # noqa: E402
from benchlib import interleaved_ms  # noqa: E402
import softmax_tune  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("label")
ap.add_argument("--fwd", action="store_true")
ap.add_argument("--shape", default="1,32768")
ap.add_argument("--dtype", default="bfloat16")
ap.add_argument("--fracs", default="0.34,0.5,0.625,0.735,0.8,0.95")
ap.add_argument("--lengths", help="key lengths instead of --fracs (comma-separated)")
ap.add_argument("--once", action="store_true", help="one call each, no timing (for a profiler)")
a = ap.parse_args()
bh, S = map(int, a.shape.split(","))
dt = B.DTYPES[a.dtype]
g = torch.Generator(device="cuda").manual_seed(7)
x = (torch.randn(bh, 1, S, S, device="cuda", generator=g) * 4).to(dt)
dy = None if a.fwd else torch.randn(bh, 1, S, S, device="cuda", generator=g).to(dt)
out = torch.empty_like(x)
lens = [int(v) for v in a.lengths.split(",")] if a.lengths else [int(float(f) * S) for f in a.fracs.split(",")]
for L in lens:
    kl = torch.full((bh,), L, dtype=torch.int32, device="cuda")
    if a.fwd:
        fn = lambda: softmax_tune.attention_softmax(x, scale=B.SCALE, key_lengths=kl)  # noqa: E731
        fl = B.floor_fn(x, None, out, kl, False)
    else:
        y = softmax_tune.attention_softmax(x, scale=B.SCALE, key_lengths=kl)
        sc, cap, win, off = B.attn._check_options(B.SCALE, None, False, None, None, kl, x.shape)
        fn = lambda: B.attn.run_backward(None, y, dy, kl, sc, cap, False, win, off)  # noqa: E731
        fl = B.floor_fn(y, dy, out, kl, False)
    fn(); fl()
    if a.once:
        continue
    ms, fms = interleaved_ms([fn, fl], rounds=20)
    print("%s\t%d\t%.4f\t%.4f\t%.3f" % (a.label, L, ms, fms, fms / ms), flush=True)
