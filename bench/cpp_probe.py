#!/usr/bin/env python3
"""cpp_probe.py [CASE] — on a GPU machine with the C++ ops built: each suspect of a crash of
softmax_tune._C in a process of its own (python3 -X faulthandler), so that one line per case says
which ones crash (a signal) and the faulthandler's Python stack shows where; with gdb or cuda-gdb there, the
first crash again under it for its C++ frames. A control (torch's own C++ error through torch.ops)
tells a fault of these ops from one of the environment. With CASE: that case alone, in this process.

    python3 bench/cpp_probe.py        # from the repository root (bench/host_run.sh probe)
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def refused(fn):
    """fn() must raise RuntimeError: its first line."""
    try:
        fn()
    except RuntimeError as e:
        return "raised: " + str(e).splitlines()[0][:150]
    return "NOT raised"


def run(case):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import torch
    import softmax_tune
    ops = torch.ops.softmax_tune
    assert softmax_tune.cpp_ops, "the C++ ops are not built"
    xo, o = torch.randn(33, 700, device="cuda"), torch.empty(33, 700, device="cuda")
    if case == "aten_raise":   # control: torch's own TORCH_CHECK through torch.ops
        return refused(lambda: torch.ops.aten.mm(xo, xo))
    if case == "out_ok":
        ops.softmax_out(xo, False, o)
        return "ok"
    if case == "out_raise":
        return refused(lambda: ops.softmax_out(xo.t(), False, o))
    if case == "out_raise_after_opcheck":   # tests/test_python.py's order
        ops.softmax_out(xo, True, o)
        torch.library.opcheck(ops.softmax_out.default, (xo, False, o), test_utils=("test_schema", "test_faketensor"))
        return refused(lambda: ops.softmax_out(xo.t(), False, o))
    if case == "backward_raise":   # our TORCH_CHECK from a functional op (with an autograd kernel)
        return refused(lambda: ops.softmax_backward(xo, xo[:, :5], False))
    if case == "cpu":
        c = torch.randn(5, 70)
        want = (torch.softmax(c, -1), torch.log_softmax(c, -1))
        same = torch.equal(ops.softmax(c, False), want[0]) and torch.equal(ops.softmax(c, True), want[1])
        return "ok" if same else "WRONG"
    if case == "cpu_grad":
        c = torch.randn(5, 70, requires_grad=True)
        ops.softmax(c, False).sum().backward()
        return "ok"
    if case == "compile":
        x3 = torch.randn(8, 500, 16, device="cuda", dtype=torch.bfloat16)
        f = torch.compile(lambda t: softmax_tune.softmax(t, dim=1) * 2, fullgraph=True)
        return "ok" if torch.allclose(f(x3).float() / 2, torch.softmax(x3.float(), 1), atol=1e-2) else "WRONG"
    raise SystemExit("cpp_probe: no case %r" % case)


CASES = ("aten_raise", "out_ok", "out_raise", "out_raise_after_opcheck", "backward_raise", "cpu", "cpu_grad",
         "compile")


def gdb_trace(case):
    """The C++ stack of a crashing case, under gdb or cuda-gdb (when there)."""
    gdb = shutil.which("gdb") or shutil.which("cuda-gdb")   # the GPU machines have cuda-gdb only
    if not gdb:
        return "  (no gdb or cuda-gdb here for the C++ frames)"
    cmd = [gdb, "-q", "-batch", "-ex", "run", "-ex", "bt 30", "--args", sys.executable, __file__, case]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    lines = [line for line in r.stdout.splitlines() if line.startswith("#") or "SIG" in line]
    return "\n".join("  " + line[:200] for line in lines[:40])


def main():
    if len(sys.argv) > 1:
        print(sys.argv[1] + ": " + run(sys.argv[1]), flush=True)
        return
    crashed = None
    for case in CASES:
        r = subprocess.run([sys.executable, "-X", "faulthandler", __file__, case], capture_output=True, text=True,
                           timeout=300)
        if r.returncode < 0:
            print("%s: CRASH, signal %d; its Python stack:" % (case, -r.returncode))
            print("\n".join("  " + line for line in r.stderr.splitlines() if line.strip())[-3000:])
            crashed = crashed or case
        elif r.returncode != 0:
            print("%s: exit %d: %s" % (case, r.returncode, (r.stderr.strip().splitlines() or [""])[-1][:300]))
        else:
            print(r.stdout.strip().splitlines()[-1])
    if crashed:
        print("C++ stack of %s:" % crashed)
        print(gdb_trace(crashed))


if __name__ == "__main__":
    main()
