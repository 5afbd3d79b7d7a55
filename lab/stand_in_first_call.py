#!/usr/bin/env python3
"""stand_in_first_call.py — what the first call of an attention kind the kernel set holds no
classes of costs (ALiBi, bias tensors, a softcap: the set's stand-in while the rule's kernel
compiles in the background, runtime/background.h), and how fast the stand-in runs.

    python3 lab/stand_in_first_call.py [--kinds alibi,bias32,bias16,bool,softcap] [--shape BxHxQxK]

Each kind in a fresh process (empty cache and kept-cubins folder, SOFTMAX_TUNE_MISS=heuristic,
the library opened by a softmax call first): the first call's wall time split into the Python
call and the synchronize after it; then the stand-in's time (CUDA events, median of 20 calls
before softmax_tune.wait()), the wait's time, and the own kernel's time after it. Variants:
SOFTMAX_TUNE_KERNELS=none in the environment gives the path without a set (the compile on the
call), SOFTMAX_TUNE_NO_CPP=1 the ctypes path.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time, torch
sys.path.insert(0, %r)
import softmax_tune
kind, shape = sys.argv[1], [int(v) for v in sys.argv[2].split("x")]
B, H, Q, K = shape
softmax_tune.softmax(torch.randn(4, 100, device="cuda"))
x = torch.randn(B, H, Q, K, device="cuda", dtype=torch.bfloat16)
kw = dict(alibi=dict(causal=True, alibi_slopes=torch.rand(H, device="cuda")),
          bias32=dict(bias=torch.randn(B, 1, Q, K, device="cuda")),
          bias16=dict(bias=torch.randn(B, 1, Q, K, device="cuda").to(torch.bfloat16)),
          bool=dict(mask=torch.rand(B, 1, Q, K, device="cuda") < 0.8),
          softcap=dict(softcap=50.0))[kind]
torch.cuda.synchronize()
t0 = time.perf_counter()
softmax_tune.attention_softmax(x, **kw)
t1 = time.perf_counter()
torch.cuda.synchronize()
t2 = time.perf_counter()
def timed():
    e = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ms = []
    for _ in range(20):
        e[0].record(); softmax_tune.attention_softmax(x, **kw); e[1].record(); torch.cuda.synchronize()
        ms.append(e[0].elapsed_time(e[1]))
    return sorted(ms)[10]
stand = timed()
t3 = time.perf_counter()
softmax_tune.wait()
t4 = time.perf_counter()
own = timed()
print("RESULT " + json.dumps(dict(call_ms=(t1 - t0) * 1e3, sync_ms=(t2 - t1) * 1e3, stand_in_ms=stand, wait_ms=(t4 - t3) * 1e3,
                                  own_ms=own, config=softmax_tune.attention.config(x, **kw), stats=softmax_tune.stats())))
""" % os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="alibi,bias32,bias16,bool,softcap")
    ap.add_argument("--shape", default="2x4x24x2499")
    a = ap.parse_args()
    print("kind\tshape\tcall_ms\tsync_ms\tstand_in_ms\twait_ms\town_ms\tcompiles\tconfig")
    for kind in a.kinds.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(tmp, "c.db"), SOFTMAX_TUNE_CUBINS=os.path.join(tmp, "k"),
                       SOFTMAX_TUNE_MISS="heuristic", SOFTMAX_TUNE_WARN="none")
            r = subprocess.run([sys.executable, "-c", CHILD, kind, a.shape], capture_output=True, text=True, env=env)
        line = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
        if not line:
            print("%s\t%s\terror: %s" % (kind, a.shape, (r.stdout + r.stderr)[-300:].replace("\n", " | ")))
            continue
        d = json.loads(line[0][7:])
        print("%s\t%s\t%.2f\t%.2f\t%.4f\t%.1f\t%.4f\t%d\t%s" % (kind, a.shape, d["call_ms"], d["sync_ms"], d["stand_in_ms"],
                                                           d["wait_ms"], d["own_ms"], d["stats"]["compiles"], d["config"]))


if __name__ == "__main__":
    main()
