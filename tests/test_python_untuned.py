#!/usr/bin/env python3
"""test_python_untuned.py BINARY — record, then tune, on a GPU: a run over four shapes through
the PyTorch binding (77x3000 f32 softmax, 333x1000 bf16 log_softmax, 50x700 f16 softmax with its
gradient, f32 attention scores 2x4x8x3000 causal with their gradient: six problems) from an empty
cache lists all six in softmax_tune.untuned(), writes them with write_untuned (the attention ones
as 'BxHxQxK dtype op mask=causal bias=none' lines), and warns once, at exit, with the count (no
per-shape warning); the same run
with SOFTMAX_TUNE_WARN=each warns per problem and, with SOFTMAX_TUNE_UNTUNED=FILE, writes the same
list at exit; then BINARY --shapes FILE tunes them; then the same run, in a fresh process with
SOFTMAX_TUNE_MISS=error (a miss would raise), finds every problem in the cache: untuned() empty,
no warning. Each run in its own process, a temporary cache and kept-cubins folder.
Exit 77 (skipped) without torch or a CUDA GPU."""

import json
import os
import subprocess
import sys
import tempfile

from pyharness import expect, finish

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = r"""
import json, sys, torch
sys.path.insert(0, %r)
import softmax_tune
x = torch.randn(77, 3000, device="cuda")
softmax_tune.softmax(x)
x = torch.randn(333, 1000, device="cuda", dtype=torch.bfloat16)
softmax_tune.log_softmax(x)
x = torch.randn(50, 700, device="cuda", dtype=torch.float16, requires_grad=True)
softmax_tune.softmax(x).sum().backward()
s = torch.randn(2, 4, 8, 3000, device="cuda", requires_grad=True)
softmax_tune.attention_softmax(s, causal=True).sum().backward()
torch.cuda.synchronize()
if len(sys.argv) > 1:
    softmax_tune.write_untuned(sys.argv[1])
print("UNTUNED " + json.dumps(softmax_tune.untuned()))
""" % os.path.join(HERE, "..", "python")
WANT = [[77, 3000, "f32", "softmax"], [333, 1000, "bf16", "log_softmax"], [50, 700, "f16", "softmax"],
        [50, 700, "f16", "softmax_backward"], [2, 4, 8, 3000, "f32", "attention_softmax", "mask=causal", "bias=none"],
        [2, 4, 8, 3000, "f32", "attention_softmax_backward", "mask=causal", "bias=none"]]
LINES = ["77x3000 f32 softmax", "333x1000 bf16 log_softmax", "50x700 f16 softmax", "50x700 f16 softmax_backward",
         "2x4x8x3000 f32 attention_softmax mask=causal bias=none",
         "2x4x8x3000 f32 attention_softmax_backward mask=causal bias=none"]


def run(env, *args):
    """The run in a fresh process: its untuned() list and its stderr."""
    p = subprocess.run([sys.executable, "-c", RUN] + list(args), env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in p.stdout.splitlines() if line.startswith("UNTUNED ")]
    expect(p.returncode == 0 and lines, "the run failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return (json.loads(lines[0][8:]) if lines else None), p.stderr


if len(sys.argv) != 2:
    sys.exit("usage: test_python_untuned.py BINARY (the softmax-tune command that tunes the recorded list)")
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, SOFTMAX_TUNE_CACHE=os.path.join(d, "cache.db"), SOFTMAX_TUNE_CUBINS=os.path.join(d, "cubins"),
               SOFTMAX_TUNE_MISS="heuristic")
    for k in ("SOFTMAX_TUNE_WARN", "SOFTMAX_TUNE_UNTUNED"):
        env.pop(k, None)
    shapes, shapes_at_exit = os.path.join(d, "shapes.txt"), os.path.join(d, "at_exit.txt")
    got, err = run(env, shapes)
    print("untuned:", got)
    expect(got == WANT, "untuned() after the run: %s, want %s" % (got, WANT))
    written = open(shapes).read() if os.path.exists(shapes) else ""
    expect(written == "".join(line + "\n" for line in LINES), "write_untuned wrote %r" % written)
    expect("UntunedWarning" in err and err.count("6 problems ran without a tuned kernel") == 1,
           "one warning at exit with the count: %s" % err[-2000:])
    expect("no tuned kernel for" not in err, "no per-shape warning by default: %s" % err[-2000:])

    got, err = run(dict(env, SOFTMAX_TUNE_WARN="each", SOFTMAX_TUNE_UNTUNED=shapes_at_exit))
    expect(err.count("no tuned kernel for") == 6, "SOFTMAX_TUNE_WARN=each: a warning per problem: %s" % err[-3000:])
    at_exit = open(shapes_at_exit).read() if os.path.exists(shapes_at_exit) else ""
    expect(at_exit == written, "SOFTMAX_TUNE_UNTUNED wrote %r at exit, want %r" % (at_exit, written))

    tune = subprocess.run([sys.argv[1], "--shapes", shapes, "--quiet"], env=env, capture_output=True, text=True, timeout=600)
    print(tune.stdout[-2000:], tune.stderr[-1000:])
    expect(tune.returncode == 0, "softmax-tune --shapes exited %d" % tune.returncode)

    got, err = run(dict(env, SOFTMAX_TUNE_MISS="error"))
    expect(got == [], "after tuning, untuned() in a fresh run: %s" % got)
    expect("UntunedWarning" not in err and "no tuned kernel" not in err, "after tuning, no warning: %s" % err[-2000:])
finish("test_python_untuned")
