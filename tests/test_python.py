#!/usr/bin/env python3
"""test_python.py — the PyTorch binding (python/softmax_tune.py) against torch.softmax in
float64: every dtype and op, batched shapes, a non-default stream, out=, and the clear errors
for what it does not take; then every visible GPU, from the main thread (with GPU 0 current)
and from a thread per GPU at once. Exit 77 (skipped) without torch or a CUDA GPU."""

import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA GPU")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import softmax_tune  # noqa: E402
from softmax_tune_check import check, explain  # noqa: E402  (softmax-tune's verification rule)

failures = 0


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def raises(fn, what):
    try:
        fn()
    except ValueError as e:
        print("  ok, refused:", e)
        return
    expect(False, what + " was accepted")


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for log in (False, True):
        for shape in ((513, 1000), (4, 3, 4099), (64, 32768)):
            x = (torch.randn(*shape, device="cuda") * 4).to(dtype)
            ok, err, why = explain(softmax_tune.softmax(x, log=log), x, log)
            expect(ok, "%s %s log=%s: max err %.3g ulp: %s" % (shape, dtype, log, err, why))

x = torch.randn(1000, 2048, device="cuda", dtype=torch.bfloat16)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    y = softmax_tune.softmax(x)
s.synchronize()
expect(check(y, x, False)[0], "on a non-default stream")
out = torch.empty_like(x)
expect(softmax_tune.softmax(x, out=out) is out and check(out, x, False)[0], "out=")
print("config for 1000x2048 bf16:", softmax_tune.config(x))

raises(lambda: softmax_tune.softmax(x.cpu()), "a CPU tensor")
raises(lambda: softmax_tune.softmax(x.t()), "a non-contiguous tensor")
raises(lambda: softmax_tune.softmax(x.to(torch.int32)), "an int32 tensor")
raises(lambda: softmax_tune.softmax(x.double()), "a float64 tensor")
raises(lambda: softmax_tune.softmax(x, dim=0), "dim=0")


def on_device(i, results):
    x = torch.randn(777, 3000 + i, device="cuda:%d" % i, dtype=torch.bfloat16)
    ys = [softmax_tune.softmax(x, log=bool(k % 2)) for k in range(20)]
    torch.cuda.synchronize(i)
    results[i] = all(close(y, x, bool(k % 2))[0] and y.device == x.device for k, y in enumerate(ys))


import threading  # noqa: E402
ngpus = torch.cuda.device_count()
results = {}
for i in range(ngpus):   # torch's current device stays 0
    on_device(i, results)
    expect(results[i], "GPU %d from the main thread" % i)
threads = [threading.Thread(target=on_device, args=(i, results)) for i in range(ngpus)]
results.clear()
for t in threads:
    t.start()
for t in threads:
    t.join()
for i in range(ngpus):
    expect(results.get(i), "GPU %d from its own thread" % i)
print("%d GPU(s): softmax on each, from one thread and a thread each" % ngpus)
print("test_python: %d failures" % failures)
sys.exit(1 if failures else 0)
