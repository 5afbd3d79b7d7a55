"""benchlib.py — what the Python benchmarks share (bench/peers.py, bench/backward.py,
bench/train_step.py): the public shapes and dtypes, the binding and the verification rule on
the path, the header line naming the GPU and versions, and the timing loop: each system's output
checked first, then the median times of all of them in interleaved rounds (L2 cleared before
each launch, which waits on the GPU behind a hold, so the host's launch time is not counted),
a fraction of the first system's time (the copy or the floor) beside it."""

import datetime
import os
import statistics
import sys
import time

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

SHAPES = ["32000x16384", "4096x4096", "1048576x128", "131072x1000", "65536x2048",
          "8192x32000", "2048x128256", "256x1048576", "32x16384"]
ROUNDS = 200   # interleaved_ms's rounds
HOLD = 400_000   # GPU cycles each launch waits behind (torch.cuda._sleep): 0.2-0.23 ms at 1.75-1.98 GHz
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def peer_commit(root):
    """The commit a peer's source copy names in root/COMMIT (written when it was fetched)."""
    f = os.path.join(root, "COMMIT")
    return open(f).read().strip() if os.path.exists(f) else "unknown commit"


def load_liger(root, op):
    """liger_kernel.ops.OP from a copy of Liger Kernel's sources under root, without running the
    package __init__s (they import every op and optional dependencies); (module, commit) or (None, why)."""
    import importlib
    import types
    pkg = os.path.join(root, "liger_kernel")
    if not os.path.isdir(pkg):
        return None, "no liger_kernel under %s" % root
    sys.path.insert(0, root)
    for name, sub in (("liger_kernel", pkg), ("liger_kernel.ops", os.path.join(pkg, "ops"))):
        m = types.ModuleType(name)
        m.__path__ = [sub]
        sys.modules[name] = m
    try:
        mod = importlib.import_module("liger_kernel.ops." + op)
    except Exception as e:  # noqa: BLE001
        return None, "import liger_kernel.ops.%s: %s" % (op, e)
    return mod, peer_commit(root)


def tree():
    """The source tree measured: .carry/TREE (bench/carry.sh writes it; the GPU machines get no .git),
    else git's HEAD, else "unknown"."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        with open(os.path.join(root, ".carry", "TREE")) as f:
            return f.read().strip()
    except OSError:
        pass
    import subprocess
    r = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def device_line():
    dev = torch.cuda.get_device_properties(0)
    return "# %s (%d SMs), torch %s, triton %s, %s, tree %s." % (
        dev.name, dev.multi_processor_count, torch.__version__, triton.__version__, datetime.date.today().isoformat(),
        tree())


def header(*notes, timing=None):
    """The table's first lines, printed: the GPU and versions, how times are taken (timing, else
    interleaved_ms's rounds), notes, and last the TSV's column names (the last note)."""
    timing = timing or ("Median of %d interleaved rounds (each system once a round, in rotating order; L2 cleared"
                        " before each launch, then a GPU-side wait of %d cycles, so the host's launch time is"
                        " not counted)." % (ROUNDS, HOLD))
    lines = [device_line(), "# " + timing]
    lines += ["# " + n for n in notes[:-1]] + [notes[-1]]
    print("\n".join(lines), flush=True)
    return lines


def problems(dtypes, shapes):
    """(dtype name, torch dtype, shape, rows, cols) of a comma-separated dtype list and shapes."""
    for dname in dtypes.split(","):
        for shape in shapes:
            rows, cols = map(int, shape.split("x"))
            yield dname, DTYPES[dname], shape, rows, cols


def median_ms(fn):
    """fn's median time in ms (triton.testing.do_bench: L2 cleared before each repetition)."""
    fn()
    settle()
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def interleaved_ms(fns, rounds=None, warmup_ms=200):
    """The median ms of each of fns, timed in rounds: a round runs every fn once, in rotating
    order, the L2 cleared before each (a 256 MB buffer zeroed, as do_bench does). A change of
    clocks during the run then falls on all of them alike; separate do_bench windows put up to
    12% between two systems on calls of a few microseconds (an H200's tiny kernels measured
    ~4.1 or ~4.6 us by the clock of the moment). Between the clear and the start event the GPU
    waits HOLD cycles, so the call is queued before the GPU reaches it: without it, a host slower
    than the clear (Python wrappers while torch.compile's workers still ran) counted its launch
    time into the kernel's (bf16 4096x4096 log_softmax_backward measured 0.20 of the floor on an
    H100, 1.0 in the run before; f32 32x16384 0.11 against 0.82)."""
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < warmup_ms:   # clocks up, every fn compiled and warm
        for f in fns:
            f()
        torch.cuda.synchronize()
    settle()
    return timed_rounds(fns, rounds or ROUNDS)


def settle():
    """softmax_tune's kernels compiling in the background put in use (softmax_tune.wait: a kind the
    kernel set has no classes of runs its stand-in until then), where the binding is loaded."""
    st = sys.modules.get("softmax_tune")
    if st is not None and hasattr(st, "wait"):
        st.wait()


def timed_rounds(fns, rounds):
    """interleaved_ms's timed rounds alone (the caller warms up): the median ms of each of fns."""
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(rounds)]
          for _ in fns]
    for k in range(rounds):
        for j in range(len(fns)):
            i = (j + k) % len(fns)
            cache.zero_()
            torch.cuda._sleep(HOLD)
            ev[i][k][0].record()
            fns[i]()
            ev[i][k][1].record()
    torch.cuda.synchronize()
    return [statistics.median(a.elapsed_time(b) for a, b in e) for e in ev]


def time_systems(key, systems, check, nbytes=None):
    """TSV rows: key columns, system, ms[, GB/s of nbytes], the first system's ms / this one's.
    systems: (name, fn) pairs, the first the floor (not checked); check(output) -> (ok, err, why).
    Every output is checked first, then the systems that ran are timed together
    (interleaved_ms). A system that cannot run is a comment line, not a row; a wrong one is
    marked WRONG."""
    ran = []
    for name, fn in systems:
        try:
            verdict = (True, 0.0, "") if not ran else check(fn())
        except Exception as e:  # a peer that cannot run this shape is reported, not fatal
            print("# %s %s: %s" % (" ".join(key), name, (str(e).splitlines() or [""])[0][:200]), flush=True)
            continue
        ran.append((name, fn, verdict))
    if not ran:
        return []
    times = interleaved_ms([fn for _, fn, _ in ran])
    rows, base = [], times[0]
    for (name, _, (ok, err, why)), ms in zip(ran, times):
        row = "\t".join(list(key) + [name, "%.4f" % ms] + (["%.1f" % (nbytes / ms / 1e6)] if nbytes else [])
                        + ["%.3f" % (base / ms)])
        if not ok:
            row += "\tWRONG (max err %.3g ulp)" % err
            print("# %s %s WRONG: %s" % (" ".join(key), name, why), flush=True)
        rows.append(row)
        print(row, flush=True)
    return rows


def table_rows(key, ran, times, cols):
    """TSV rows, printed: key columns, system, ms, then cols(i, ms)'s columns, WRONG (err) after a
    system whose output failed its check. ran: (name, ok, err) of each system timed, in times' order."""
    lines = []
    for i, ((name, ok, err), ms) in enumerate(zip(ran, times)):
        row = "\t".join(list(key) + [name, "%.4f" % ms] + cols(i, ms))
        if not ok:
            row += "\tWRONG (err %.3g)" % err
        print(row, flush=True)
        lines.append(row)
    return lines


def run_table(out, lines, jobs):
    """Each job()'s rows (a problem's) added to lines and the table rewritten to out after each,
    memory freed between; the run's time said last."""
    import gc
    t0 = time.time()
    for job in jobs:
        lines += job()
        gc.collect()
        torch.cuda.empty_cache()
        write(out, lines)
    print("# %.0f s; written %s" % (time.time() - t0, out))


def write(path, lines):
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
