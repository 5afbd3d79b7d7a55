#!/usr/bin/env python3
"""test_python_vocab_parallel.py — softmax_tune.vocab_parallel_cross_entropy and
vocab_parallel_linear_cross_entropy (python/softmax_tune/vocab_parallel.py) on two ranks of a process group:
over NCCL, a GPU each, where two GPUs are visible; else over gloo, both on one GPU. Each rank holds its shard
of logits (or of the classifier's rows, and of the bias), Megatron's split and an uneven one given by
vocab_start / vocab_size; both check the loss and their shard's gradients (the linear op: hidden's too, summed
over the ranks) against float64 torch on the whole, unsharded inputs, element by element within the bound of
tests/test_python_lce.py (the shard's softmax factor and the global lse's float32 rounding, and for label
smoothing the second pass's rounding, added), for float32, float16 and bfloat16, every option, the three
reductions under a grad_output that is not 1, inplace=True, more rows than a shard has classes (the kernel's
blocks), and bad labels; and against the single-GPU ops (softmax_tune.cross_entropy and
linear_cross_entropy on the whole inputs), each within the same bound of float64 (cross_entropy's gradient
with test_python_ce.py's own allowance added). A GPU machine only: without
torch or a CUDA GPU it prints a SKIP line and exits 77 (skipped)."""

import datetime
import os
import queue
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pyharness import torch  # noqa: E402  (exit 77 without torch or a CUDA GPU)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
WORLD = 2


def _bound_tools():
    """test_python_lce.py's reference with its bounds, imported without running that test."""
    import importlib.util
    src = open(os.path.join(HERE, "test_python_lce.py")).read()
    head = src[:src.index("OPTIONS = [")]   # the helpers, not the cases
    spec = importlib.util.spec_from_loader("lce_bounds", loader=None)
    m = importlib.util.module_from_spec(spec)
    m.__file__ = os.path.join(HERE, "test_python_lce.py")
    exec(compile(head, m.__file__, "exec"), m.__dict__)
    return m


def worker(rank, port, out):
    import torch.distributed as dist
    import softmax_tune
    nccl = torch.cuda.device_count() >= WORLD
    torch.cuda.set_device(rank if nccl else 0)
    dist.init_process_group("nccl" if nccl else "gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=WORLD, device_id=torch.device("cuda", rank) if nccl else None,
                            timeout=datetime.timedelta(seconds=120))   # a rank that fails alone: no long hang
    B = _bound_tools()

    import pyharness
    expect, close = pyharness.expect, B.close

    def shard_of(v, how):
        """(start, size, total) of this rank: Megatron's split, or an uneven one."""
        if how == "even":
            return rank * (v // WORLD), v // WORLD, None
        cut = v // 2 + 17
        return (0, cut, v) if rank == 0 else (cut, v - cut, v)

    gen = torch.Generator(device="cpu").manual_seed(1234)   # the same inputs on both ranks

    def randn(*shape):
        return torch.randn(*shape, generator=gen).cuda()

    def labels(n, v, ii=-100, ignored=0.2):
        t = torch.randint(0, v, (n,), generator=gen)
        t[torch.rand(n, generator=gen) < ignored] = ii
        return t.cuda()

    def ce_case(x, t, go, start, size, total, how, inplace, dtype, what, kw, ii):
        leaf = x[:, start:start + size].clone().requires_grad_()
        xs = leaf * 1.0 if inplace else leaf
        loss = softmax_tune.vocab_parallel_cross_entropy(
            xs, t, vocab_start=start if how != "even" else None, vocab_size=total, inplace=inplace, **kw)
        loss.backward(go.to(dtype))
        ref = ref_ce(B, x, t, go.to(dtype), start, size, dtype, **kw)
        reduction = kw["reduction"]
        close(loss, *ref["loss"], dtype, what + " loss")
        close(leaf.grad, *ref["g"], dtype, what + " grad")
        if not inplace:   # the single-GPU op on the whole logits, within the same bound
            xw = x.clone().requires_grad_()
            lw = softmax_tune.cross_entropy(xw, t, kw.get("class_weight"), ii, reduction,
                                            kw.get("label_smoothing", 0.0), z_loss=kw.get("z_loss", 0.0),
                                            softcap=kw.get("softcap"))
            lw.backward(go.to(dtype))
            close(lw, *ref["loss"], dtype, what + " single-GPU loss")
            # the single-GPU op by test_python_ce.py's own rule (its 1e-5 x the row's largest term besides), and
            # its two roundings where they are absolute: the gradient for grad_output 1 is rounded, then scaled by
            # grad_output and rounded again (half a subnormal spacing each; float16 none: 1-3 spacings off seen)
            g, e = ref["g"]
            fi = torch.finfo(dtype)
            gabs = go.double().abs().reshape(-1, 1) if go.numel() > 1 else go.double().abs()
            sub = 0.5 * fi.smallest_normal * fi.eps * (gabs + 1)
            close(xw.grad[:, start:start + size], g, e + 1e-5 * g.abs().amax(1, keepdim=True) + sub, dtype,
                  what + " single-GPU grad")

    # ---- cross-entropy of sharded logits ----
    n, v = 130, 5000
    cases = [({}, "even"), ({"label_smoothing": 0.1}, "even"), ({"z_loss": 1e-3}, "uneven"),
             ({"softcap": 5.0}, "even"), ({"class_weight": True}, "uneven"), ({"ignore_index": 3}, "even"),
             ({"label_smoothing": 0.2, "z_loss": 1e-2, "softcap": 4.0}, "uneven"),
             ({"class_weight": True, "z_loss": 1e-3, "softcap": 6.0}, "even")]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for opts, how in cases:
            for reduction in ("none", "sum", "mean"):
                for inplace in ((False, True) if reduction != "none" else (False,)):
                    kw = dict(opts, reduction=reduction)
                    ii = kw.get("ignore_index", -100)
                    if kw.pop("class_weight", False):
                        kw["class_weight"] = torch.rand(v, generator=gen).cuda() + 0.5
                    x = (randn(n, v) * 3).to(dtype)
                    t = labels(n, v, ii)
                    go = randn(n) if reduction == "none" else torch.tensor(0.37, device="cuda")
                    start, size, total = shard_of(v, how)
                    what = "vp ce %s %s %s %s inplace=%s" % (dtype, opts, how, reduction, inplace)
                    try:
                        ce_case(x, t, go, start, size, total, how, inplace, dtype, what, kw, ii)
                    except Exception as e:  # noqa: BLE001  (the other cases still run)
                        expect(False, "%s: %s: %s" % (what, type(e).__name__, str(e)[:500]))
        print("rank %d: vp cross-entropy %s checked" % (rank, dtype), flush=True)

    # more rows than a shard has classes (the weighted kernel's blocks); bad labels
    for dtype in (torch.float32, torch.bfloat16):
        x = (randn(260, 200) * 2).to(dtype)
        t = labels(260, 200)
        start, size, _ = shard_of(200, "even")
        leaf = x[:, start:start + size].clone().requires_grad_()
        loss = softmax_tune.vocab_parallel_cross_entropy(leaf, t, z_loss=1e-3)
        loss.backward()
        ref = ref_ce(B, x, t, None, start, size, dtype, z_loss=1e-3)
        close(loss, *ref["loss"], dtype, "vp ce 260 rows of 100 classes a shard %s loss" % dtype)
        close(leaf.grad, *ref["g"], dtype, "vp ce 260 rows of 100 classes a shard %s grad" % dtype)
    x = randn(40, 1000)
    t = labels(40, 1000)
    t[7] = 1000
    leaf = x[:, rank * 500:(rank + 1) * 500].clone().requires_grad_()
    rows = softmax_tune.vocab_parallel_cross_entropy(leaf, t, reduction="none")
    rows.sum().backward()
    keep = torch.arange(40, device="cuda") != 7
    expect(bool(torch.isnan(rows[7])) and not torch.isnan(rows[keep]).any(), "vp ce bad label: not a NaN loss for its "
                                                                              "row alone")
    expect(not leaf.grad[7].any(), "vp ce bad label: its row's gradient is not zero")
    try:
        softmax_tune.check_labels()
        expect(False, "vp ce bad label: check_labels() did not raise")
    except ValueError:
        pass

    # ---- linear cross-entropy with the classifier's rows sharded ----
    n, d, v = 300, 64, 5000
    lcases = [({}, "even"), ({"label_smoothing": 0.1}, "uneven"), ({"z_loss": 1e-3, "softcap": 5.0}, "even"),
              ({"label_smoothing": 0.1, "softcap": 5.0}, "even"), ({"class_weight": True, "bias": True}, "uneven")]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for opts, how in lcases:
            for reduction in ("none", "mean"):
                kw = dict(opts, reduction=reduction)
                if kw.pop("class_weight", False):
                    kw["class_weight"] = torch.rand(v, generator=gen).cuda() + 0.5
                h = randn(n, d).to(dtype)
                w = (randn(v, d) * 0.3).to(dtype)
                b = (randn(v) * 0.5).to(dtype) if kw.pop("bias", False) else None
                t = labels(n, v)
                go = randn(n) if reduction == "none" else torch.tensor(0.37, device="cuda")
                what = "vp lce %s %s %s %s" % (dtype, opts, how, reduction)
                try:
                    start, size, total = shard_of(v, how)
                    hl = h.clone().requires_grad_()
                    wl = w[start:start + size].clone().requires_grad_()
                    bl = b[start:start + size].clone().requires_grad_() if b is not None else None
                    loss = softmax_tune.vocab_parallel_linear_cross_entropy(
                        hl, wl, t, bias=bl, vocab_start=start if how != "even" else None, vocab_size=total,
                        chunk_rows=128, **kw)
                    loss.backward(go.to(dtype))
                    ref = B.reference(h, w, t, b, go=go.to(dtype), chunk=128, dtype=dtype, shard=size, **kw)
                    what = "vp lce %s %s %s %s" % (dtype, opts, how, reduction)
                    close(loss, *ref["loss"], dtype, what + " loss")
                    close(hl.grad, *ref["gh"], dtype, what + " grad hidden")
                    close(wl.grad, ref["gw"][0][start:start + size], ref["gw"][1][start:start + size], dtype,
                          what + " grad weight")
                    if b is not None:
                        close(bl.grad, ref["gb"][0][start:start + size], ref["gb"][1][start:start + size], dtype,
                              what + " grad bias")
                    if reduction == "mean" and how == "even":   # the single-GPU op, within the same bound
                        hw, ww = h.clone().requires_grad_(), w.clone().requires_grad_()
                        lw = softmax_tune.linear_cross_entropy(hw, ww, t, b, chunk_rows=128, **kw)
                        lw.backward(go.to(dtype))
                        close(lw, *ref["loss"], dtype, what + " single-GPU loss")
                        close(ww.grad[start:start + size], ref["gw"][0][start:start + size],
                              ref["gw"][1][start:start + size], dtype, what + " single-GPU grad weight")
                except Exception as e:  # noqa: BLE001  (the other cases still run)
                    expect(False, "%s: %s: %s" % (what, type(e).__name__, str(e)[:500]))
        print("rank %d: vp linear cross-entropy %s checked" % (rank, dtype), flush=True)

    dist.barrier()
    dist.destroy_process_group()
    out.put((rank, pyharness.failures))


def ref_ce(B, x, t, go, start, size, dtype, class_weight=None, ignore_index=-100, reduction="mean",
           label_smoothing=0.0, z_loss=0.0, softcap=None):
    """The reference of cross-entropy of whole logits x (as the linear one's with hidden = x, weight = I) and the
    shard [start, start + size) of its gradient, with bounds for given logits (no matmul): the kernel's float32
    steps, the gradient rounded, the shard's factor exp(lse_shard - lse) (lse's float32 error, relative
    2^-20 (1 + |lse|)), and for label smoothing the second pass's rounding of the kernel's (p - 1/V_r)."""
    u = B.U[dtype]
    n, v = x.shape
    z = x.double()
    cd = torch.ones_like(z)
    if softcap:
        th = torch.tanh(z / softcap)
        z, cd = softcap * th, 1.0 - th * th
    lse = torch.logsumexp(z, 1)
    p = torch.exp(z - lse[:, None])
    t1 = t.long()
    valid = (t1 != ignore_index).double()
    tc = t1.clamp(0, v - 1)
    eps = label_smoothing
    wy = (class_weight.double()[tc] if class_weight is not None else torch.ones_like(lse)) * valid
    coef = ((1 - eps) * wy + eps + 2 * z_loss * lse) * valid
    onehot = torch.zeros_like(z).scatter_(1, tc[:, None], 1.0)
    zy = z.gather(1, tc[:, None])[:, 0]
    gu = (coef[:, None] * p - eps / v - ((1 - eps) * wy)[:, None] * onehot) * valid[:, None]
    rows = ((1 - eps) * wy * (lse - zy) + eps * (lse - z.mean(1)) + z_loss * lse * lse) * valid
    divisor = wy.sum()
    g0 = 1.0 if go is None else go.double().reshape(-1)
    if reduction == "none":
        loss, sg = rows, g0 * torch.ones_like(lse)
    elif reduction == "sum":
        loss, sg = rows.sum(), g0 * torch.ones_like(lse)
    else:
        loss, sg = rows.sum() / divisor, g0 / divisor * torch.ones_like(lse)
    dz = sg[:, None] * gu * cd
    terms0 = sg.abs()[:, None] * (coef.abs()[:, None] * p + eps / v + ((1 - eps) * wy)[:, None] * onehot)
    terms = terms0 * cd
    rel = 2.0 ** -20 * (1 + lse.abs())[:, None]
    e = (B.KERNEL + rel) * terms + 2 * u * dz.abs()   # rounded once, and the single-GPU op's scale_ once more
    if softcap and dtype != torch.float32:   # the 16-bit kernels' tanh errs by 16 u absolute (verify.h vr_tanh_err):
        te = 16 * 2.0 ** -24                 # cap te on each z (so relatively on p), 2 te on 1 - t^2
        e = e + softcap * te * terms + 2 * te * terms0
    if eps > 0:
        e = e + (u + B.KERNEL) * sg.abs()[:, None] * coef.abs()[:, None] * (p + 1.0 / size) * cd
    e = e * valid[:, None]
    el = (B.KERNEL + 2.0 ** -20) * ((1 - eps) * wy * (lse.abs() + zy.abs()) + eps * (lse.abs() + z.abs().mean(1))
                                    + z_loss * lse * lse) * valid
    eloss = B.loss_error(el, u, rows, loss, reduction, divisor)
    return {"loss": (loss, eloss), "g": (dz[:, start:start + size], e[:, start:start + size])}


def main():
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, port, out)) for r in range(WORLD)]
    for p in procs:
        p.start()
    results = {}
    deadline = time.time() + 1500
    while len(results) < WORLD and time.time() < deadline:
        try:
            r, f = out.get(timeout=5)
            results[r] = f
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                break
    for p in procs:
        p.join(60)
        if p.is_alive():
            p.terminate()
    failures = 0
    for r, p in enumerate(procs):
        if p.exitcode != 0 or r not in results:
            print("FAIL: rank %d exited %s without its results" % (r, p.exitcode))
            failures += 1
        else:
            failures += results[r]
    print("backend: %s" % ("nccl, a GPU a rank" if torch.cuda.device_count() >= WORLD else "gloo, both ranks on one GPU"))
    print("test_python_vocab_parallel: %d failures" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
