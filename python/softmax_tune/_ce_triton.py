"""_ce_triton.py — the Triton kernel cross_entropy's backward scales its saved gradient with, in
place: by one scalar grad_output, read on the device (1: the loop is empty, no pass over the
gradient, no host sync), or by one value a row (reduction='none'). Imported on first use."""

import triton
import triton.language as tl


@triton.jit
def scale(g_ptr, s_ptr, n, cols, nblocks, PER_ROW: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0)
    stop = nblocks
    if not PER_ROW:
        s = tl.load(s_ptr).to(tl.float32)
        stop = tl.where(s == 1.0, 0, nblocks)
    for b in range(pid, stop, step):   # persistent: the grid is a few blocks an SM
        offs = b.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        g = tl.load(g_ptr + offs, mask=m).to(tl.float32)
        if PER_ROW:
            sc = tl.load(s_ptr + offs // cols, mask=m).to(tl.float32)
        else:
            sc = s
        tl.store(g_ptr + offs, (g * sc).to(g_ptr.dtype.element_ty), mask=m)
