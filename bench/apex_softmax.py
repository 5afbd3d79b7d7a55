"""apex_softmax.py — Apex's Megatron fused softmax as a system of bench/attention_softmax.py: the
modules bench/apex_build.py builds from .peers/apex (bench/apex_fetch.sh), called as Megatron's
FusedScaleMaskSoftmax calls them.

  causal (Q == K, offset 0): scaled_upper_triang_masked_softmax_cuda on the scores as [B*H, Q, K];
  key padding: scaled_masked_softmax_cuda with a mask tensor [B, 1, Q, K] (True: masked), made once
    outside the timing as a user of it makes one;
  bwd: the module's backward(dy, y, scale) on its own forward's y. It writes dx over dy (its API), so
    it gets a copy of dy made once; the timed calls then run on what the last one wrote.

Its limits are its own: K <= 16384 (the padding backward K <= 4096), 16-bit types, Q == K under
the causal kernel; a problem past them is a comment line of the table, as any system that cannot
run one.
"""
import importlib
import os
import sys

NAMES = ("scaled_upper_triang_masked_softmax_cuda", "scaled_masked_softmax_cuda")


def load(src):
    """(modules by name, or None; the table's header line about Apex)."""
    src = os.path.abspath(src)
    commit_file = os.path.join(src, "COMMIT")
    if not os.path.exists(commit_file):
        return None, "Apex fused softmax: not run (no sources at %s: bench/apex_fetch.sh)." % os.path.basename(src)
    commit = open(commit_file).read().strip()
    sys.path.insert(0, os.path.join(src, "build_st"))
    try:
        mods = {n: importlib.import_module(n) for n in NAMES}
    except ImportError as e:
        return None, "Apex fused softmax (NVIDIA/apex %s): not run (not built here: %s)." % (commit, e)
    finally:
        sys.path.pop(0)
    return mods, ("Apex fused softmax: NVIDIA/apex %s, csrc/megatron's scaled_upper_triang_masked_softmax "
                  "(causal) and scaled_masked_softmax (padding, a [B, 1, Q, K] mask tensor made once), built "
                  "here by bench/apex_build.py; its bwd writes dx over a copy of dy made once." % commit)


def system(mods, direction, x, dy, visible, causal, scale):
    """fn() of one call (fwd: y; bwd: dx), raising where Apex cannot run the problem. x [B, 1, Q, K];
    visible: the bench's boolean mask (True: seen), broadcastable to x."""
    B, _, Q, K = x.shape
    if causal:
        if Q != K:
            raise ValueError("Apex: its causal kernel is upper-triangular, Q == K only (Q %d, K %d)" % (Q, K))
        m = mods["scaled_upper_triang_masked_softmax_cuda"]
        x3 = x.reshape(B, Q, K)
        fwd = (lambda: m.forward(x3, scale).view(B, 1, Q, K))
        bwd = (lambda g, y: m.backward(g, y, scale).view(B, 1, Q, K))
        shape = (B, Q, K)
    else:
        m = mods["scaled_masked_softmax_cuda"]
        hidden = (~visible).expand(B, 1, Q, K).contiguous()
        fwd = (lambda: m.forward(x, hidden, scale))
        bwd = (lambda g, y: m.backward(g, y, scale))
        shape = (B, 1, Q, K)
    if direction == "fwd":
        return fwd
    y = fwd().reshape(shape)
    g = dy.reshape(shape).clone()
    return lambda: bwd(g, y)
