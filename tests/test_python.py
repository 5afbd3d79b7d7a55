#!/usr/bin/env python3
"""test_python.py — the PyTorch binding (python/softmax_tune) forward, against torch.softmax in
float64 by softmax-tune's rule: every dtype and op, batched shapes, a non-default stream, out=;
any dim (dim=0, dim=1 of 3-D, negative), transposed, sliced and expanded inputs; empty and 0-d
tensors, CPU and float64 (torch's own softmax); dtype=; nn.Softmax / nn.LogSoftmax; the custom
op's schema and fake (torch.library.opcheck); torch.compile(fullgraph=True), and Inductor's fusion
of a softmax with elementwise uses (softmax_tune/fusion.py; off in the fallback's run); CUDA graph capture;
then every visible GPU, from the main thread (with GPU 0 current) and from a thread per GPU at
once. With the C++ ops (softmax_tune._C) also their out op and the ops on CPU tensors; then all
of it again on the ctypes fallback (SOFTMAX_TUNE_NO_CPP=1; a SKIP line where the C++ ops are not
built). Gradients: test_python_train.py. Exit 77 (skipped) without torch or a CUDA GPU."""

import os
import threading

from pyharness import expect, finish, host_path, raises, torch
import softmax_tune  # noqa: E402
from softmax_tune_check import check, explain  # noqa: E402  (softmax-tune's verification rule)

host_path(softmax_tune)


def good(y, x, log, what, dim=-1):
    """y = softmax of x over dim, by the rule."""
    ok, err, why = explain(y.movedim(dim, -1), x.movedim(dim, -1), log)
    return expect(ok and y.shape == x.shape, "%s: shape %s, max err %.3g ulp: %s" % (what, tuple(y.shape), err, why))


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for log in (False, True):
        for shape in ((513, 1000), (4, 3, 4099), (64, 32768)):
            x = (torch.randn(*shape, device="cuda") * 4).to(dtype)
            good(softmax_tune.softmax(x, log=log), x, log, "%s %s log=%s" % (shape, dtype, log))
        x = torch.randn(6, 7, 300, device="cuda", dtype=dtype) * 3
        for dim in (0, 1, 2, -1, -2, -3):
            good(softmax_tune.softmax(x, dim, log), x, log, "6x7x300 %s dim=%d log=%s" % (dtype, dim, log), dim)
        t = torch.randn(300, 513, device="cuda", dtype=dtype).t()
        good(softmax_tune.softmax(t, -1, log), t, log, "transposed %s log=%s" % (dtype, log))
        good(softmax_tune.softmax(t, 0, log), t, log, "transposed %s dim=0 log=%s" % (dtype, log), 0)
        s = torch.randn(100, 2000, device="cuda", dtype=dtype)[:, ::2]
        good(softmax_tune.softmax(s, -1, log), s, log, "sliced %s log=%s" % (dtype, log))
        e = torch.randn(1, 1000, device="cuda", dtype=dtype).expand(8, 1000)
        good(softmax_tune.softmax(e, -1, log), e, log, "expanded %s log=%s" % (dtype, log))

x = torch.randn(1000, 2048, device="cuda", dtype=torch.bfloat16)
good(softmax_tune.log_softmax(x), x, True, "log_softmax()")
good(softmax_tune.log_softmax(x, 0), x, True, "log_softmax(dim=0)", 0)
y = softmax_tune.softmax(x, dtype=torch.float32)
expect(y.dtype == torch.float32 and check(y, x.float())[0], "dtype=torch.float32")
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    y = softmax_tune.softmax(x)
stream.synchronize()
expect(check(y, x, False)[0], "on a non-default stream")
out = torch.empty_like(x)
expect(softmax_tune.softmax(x, out=out) is out and check(out, x, False)[0], "out=")
print("config for 1000x2048 bf16:", softmax_tune.config(x))
for m, log in ((softmax_tune.nn.Softmax(0), False), (softmax_tune.nn.LogSoftmax(dim=1), True)):
    good(m(x), x, log, repr(m), m.dim)

# torch's own softmax: CPU, float64, empty and 0-d tensors, exactly as torch gives them
for name, t, dim in (("CPU", x.cpu(), -1), ("CPU float32 dim=0", x.float().cpu(), 0), ("float64", x.double(), -1),
                     ("empty rows", x[:0], -1), ("empty cols", x[:, :0], -1), ("empty dim=0", x[:0], 0),
                     ("0-d", x[0, 0], 0), ("0-d dim=-1", x[0, 0], -1)):
    for log in (False, True):
        want = (torch.log_softmax if log else torch.softmax)(t, dim)
        got = softmax_tune.softmax(t, dim, log)
        expect(got.shape == want.shape and got.device == want.device and got.dtype == want.dtype
               and torch.equal(got, want), "%s log=%s: not torch's result" % (name, log))
raises(lambda: softmax_tune.softmax(x, 2), IndexError, "dim=2 of a 2-d tensor", "dim 2")
raises(lambda: softmax_tune.softmax(x, -3), IndexError, "dim=-3 of a 2-d tensor", "dim -3")
raises(lambda: softmax_tune.softmax(x.t(), out=out), ValueError, "out= with a non-contiguous x")
raises(lambda: softmax_tune.softmax(x, 0, out=out), ValueError, "out= with dim=0")
raises(lambda: softmax_tune.softmax(x, out=out[:, :100]), ValueError, "out= of another shape")
raises(lambda: softmax_tune.softmax(x.cpu(), out=out.cpu()), ValueError, "out= on the CPU")
raises(lambda: softmax_tune.config(x.cpu()), ValueError, "config of a CPU tensor")

# the custom op: schema and fake implementation
try:
    for log in (False, True):
        torch.library.opcheck(torch.ops.softmax_tune.softmax.default, (torch.randn(33, 700, device="cuda"), log),
                              test_utils=("test_schema", "test_faketensor"))
    print("opcheck softmax_tune::softmax: schema and fake ok")
except Exception as e:  # noqa: BLE001
    expect(False, "opcheck softmax_tune::softmax: %s" % e)

if softmax_tune.cpp_ops:   # the C++ ops' out op (schema, fake) and the ops on a CPU tensor (torch's, exactly)
    xo, o = torch.randn(33, 700, device="cuda"), torch.empty(33, 700, device="cuda")
    torch.ops.softmax_tune.softmax_out(xo, True, o)
    expect(check(o, xo, True)[0], "torch.ops.softmax_tune.softmax_out")
    try:
        torch.library.opcheck(torch.ops.softmax_tune.softmax_out.default, (xo, False, o),
                              test_utils=("test_schema", "test_faketensor"))
        print("opcheck softmax_tune::softmax_out: schema and fake ok")
    except Exception as e:  # noqa: BLE001
        expect(False, "opcheck softmax_tune::softmax_out: %s" % e)
    raises(lambda: torch.ops.softmax_tune.softmax_out(xo.t(), False, o), RuntimeError, "softmax_out of a strided x",
           "contiguous")
    c = torch.randn(5, 70)
    for log in (False, True):
        want = (torch.log_softmax if log else torch.softmax)(c, -1)
        expect(torch.equal(torch.ops.softmax_tune.softmax(c, log), want), "the C++ op on a CPU tensor log=%s: not torch's"
               % log)

# torch.compile: no graph break (fullgraph), the custom op in the graph, outputs by the rule
for log in (False, True):
    x3 = torch.randn(8, 500, 16, device="cuda", dtype=torch.bfloat16)
    try:
        f = torch.compile(lambda t: softmax_tune.softmax(t, dim=1, log=log) * 2, fullgraph=True)
        good(f(x3) / 2, x3, log, "torch.compile(fullgraph=True) dim=1 log=%s" % log, 1)
        g = torch.compile(lambda t: softmax_tune.softmax(t, log=log) * 2)
        good(g(x) / 2, x, log, "torch.compile log=%s" % log)
        m = torch.compile(softmax_tune.nn.LogSoftmax(-1) if log else softmax_tune.nn.Softmax(-1), fullgraph=True)
        good(m(x), x, log, "torch.compile(nn module, fullgraph=True) log=%s" % log)
    except Exception as e:  # noqa: BLE001
        expect(False, "torch.compile log=%s: %s: %s" % (log, type(e).__name__, str(e).splitlines()[0][:300]))
print("torch.compile: fullgraph forward done")

# Inductor's fusion (softmax_tune/fusion.py): a softmax whose every use is elementwise becomes
# torch's, fused by Inductor; one that feeds a matmul keeps our op. Off under SOFTMAX_TUNE_FUSE=0.
fuse = os.environ.get("SOFTMAX_TUNE_FUSE") != "0"
expect(softmax_tune.compile_fusion == fuse, "compile_fusion is %s, SOFTMAX_TUNE_FUSE=%s"
       % (softmax_tune.compile_fusion, os.environ.get("SOFTMAX_TUNE_FUSE")))
xf = torch.randn(300, 1000, device="cuda")
wf = torch.randn(1000, 64, device="cuda")
for log in (False, True):
    try:
        n = softmax_tune.fusion.swapped
        f = torch.compile(lambda t: softmax_tune.softmax(t, dim=0, log=log) * 2 * 4)   # exact: powers of 2
        good(f(xf) / 8, xf, log, "torch.compile softmax*2*4 dim=0 (fusion %s) log=%s" % (fuse, log), 0)
        expect((softmax_tune.fusion.swapped > n) == fuse, "torch.compile softmax*2*4 log=%s: %d nodes swapped, "
               "fusion %s" % (log, softmax_tune.fusion.swapped - n, fuse))
        n = softmax_tune.fusion.swapped
        h = torch.compile(lambda t, w: softmax_tune.softmax(t, log=log) @ w)
        want = (torch.log_softmax if log else torch.softmax)(xf.double(), -1) @ wf.double()
        got = h(xf, wf).double()
        expect(torch.allclose(got, want, rtol=1e-3, atol=1e-3 * want.abs().max().item()),
               "torch.compile softmax @ w log=%s: off by %.3g" % (log, (got - want).abs().max().item()))
        expect(softmax_tune.fusion.swapped == n, "torch.compile softmax @ w log=%s: the op was swapped" % log)
    except Exception as e:  # noqa: BLE001
        expect(False, "torch.compile fusion log=%s: %s: %s" % (log, type(e).__name__, str(e).splitlines()[0][:300]))
print("torch.compile: Inductor's fusion (%s) done" % ("on" if fuse else "off"))

# CUDA graphs: capture, then replay on new data
for grad in (False, True):
    xs = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            softmax_tune.softmax(xs, dim=0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ys = softmax_tune.softmax(xs, dim=0)
    with torch.no_grad():
        xs.copy_(torch.randn_like(xs) * 3)
    graph.replay()
    torch.cuda.synchronize()
    good(ys.detach(), xs.detach(), False, "CUDA graph replay (requires_grad=%s)" % grad, 0)
print("CUDA graphs: forward captured and replayed")


def on_device(i, results):
    x = torch.randn(777, 3000 + i, device="cuda:%d" % i, dtype=torch.bfloat16)
    ys = [softmax_tune.softmax(x, log=bool(k % 2)) for k in range(20)]
    torch.cuda.synchronize(i)
    results[i] = all(check(y, x, bool(k % 2))[0] and y.device == x.device for k, y in enumerate(ys))


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
finish("test_python", both=True)
