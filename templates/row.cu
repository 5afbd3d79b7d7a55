// row.cu — the row family (split=1): a group of G = threads/rows threads owns one row, a block
// owns `rows` rows at once, and blocks loop over the grid when rows exceed it.
// Knobs: threads, rows (rows per block: G <= 32 is part of a warp per row, G > 32 several
//        warps), items, vec, reduce (shfl | smem), passes, hold (reg | packed | smem | none), hint.
// One reduction per row, of (max, sum) pairs: each thread sums relative to its own max.
// Regime: every shape. passes=1 hold=reg: the row fits in the group's registers, one read;
//         hold=packed (f16, bf16): as raw 16-bit words, so twice the row fits.
//         passes=1 hold=smem: a medium row staged in shared memory, one read.
//         passes=2: long rows, an online max/sum pass, then a normalize pass reading again.
% team = G
% include("common.cu")
#define R $(R)

extern "C" __global__ void __launch_bounds__($(threads)$(minb > 1 and ", " .. minb or ""))
$(kernel)(const elem_t *in, elem_t *out, i64 rows, i64 cols, void *ws)
{
  const int lane = threadIdx.x % $(G), grp = threadIdx.x / $(G);
% if hold == "smem" then
  // each thread reads back only the vectors it staged, so the stage needs no barrier
  extern __shared__ __align__(16) unsigned char stage[];
  elem_t *const st = (elem_t *)stage + grp * $(STAGE);
% end
  const i64 nblocks = (rows + R - 1) / R;
  for (i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    const i64 row = blk * R + grp;
    const bool live = row < rows;   // dead groups still take part in the block's barriers
    const elem_t *x = in + (live ? row : 0) * COLS;
    elem_t *y = out + (live ? row : 0) * COLS;
    const Geo g = geometry(x, COLS);
    float e[EDGE_SLOTS];
    edge_load(x, g, lane, live, e);
% if hold == "reg" or hold == "packed" then
    held_t v[HELD];
    hold_load<true>(x + g.h, 0, g.nv, lane, live, v);
    const MS mine = hold_pair(v, e);
    hold_out(y, g, 0, g.nv, lane, live, true, v, e, mine, group_reduce(mine, OpMS()));
% elseif hold == "smem" then
    MS mine = { max_of<EDGE>(e, NEG_INF), 0.f };
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<false, true>(x + g.h, base, g.nv, lane, live, v);
      store_step<true>(st, base, g.nv, lane, live, v);
      mine.m = max_of<ITEMS * VEC>(v, mine.m);
    }
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<true, false>(st, base, g.nv, lane, live, v);
      mine.s += exp_sum<ITEMS * VEC, false>(v, mine.m);
    }
    mine.s += exp_sum<EDGE, false>(e, mine.m);
    const MS all = group_reduce(mine, OpMS());
    normalize<true>(st, y + g.h, 0, g.nv, lane, live, all.m, edges_out(y, g, lane, live, e, all));
% else
    const MS all = group_reduce(with_edges(online_stats(x + g.h, 0, g.nv, lane, live), e), OpMS());
    normalize(x + g.h, y + g.h, 0, g.nv, lane, live, all.m, edges_out(y, g, lane, live, e, all));
% end
  }
}
