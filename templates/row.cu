// row.cu — the row family (split=1): a group of G = threads/rows threads owns one row, a block
// owns `rows` rows at once, and blocks loop over the grid when rows exceed it.
// Knobs: threads, rows (rows per block: G <= 32 is part of a warp per row, G > 32 several
//        warps), items, vec, reduce (shfl | smem), passes, hold (reg | smem | none).
// Regime: every shape. passes=1 hold=reg: the row fits in the group's registers, one read.
//         passes=1 hold=smem: a medium row staged in shared memory, one read.
//         passes=2: long rows, an online max/sum pass, then a normalize pass reading again.
% team = G
% include("common.cu")
#define R $(R)

extern "C" __global__ void __launch_bounds__($(threads))
$(kernel)(const elem_t *in, elem_t *out, i64 rows)
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
    const Geo g = geometry(x);
    MS t = { NEG_INF, 0.f };
% if EDGE > 0 then
    float e[EDGE];
    edge_load(x, g, lane, live, e);
% end
% if hold == "reg" then
    float v[ITEMS * VEC];
    load_step(x + g.h, 0, g.nv, lane, live, v);
    t.m = max_of<ITEMS * VEC>(v, t.m);
% elseif hold == "smem" then
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step(x + g.h, base, g.nv, lane, live, v);
      store_step<true>(st, base, g.nv, lane, live, v);
      t.m = max_of<ITEMS * VEC>(v, t.m);
    }
% else
    t = online_stats(x + g.h, 0, g.nv, lane, live);
% end
% if EDGE > 0 then
%   if passes == 1 then
    t.m = max_of<EDGE>(e, t.m);
%   else
    { MS te = { max_of<EDGE>(e, NEG_INF), 0.f }; te.s = exp_sum<EDGE, false>(e, te.m); t = combine(t, te); }
%   end
% end
% if passes == 1 then
    t.m = group_reduce(t.m, OpMax());
%   if hold == "reg" then
    t.s = exp_sum<ITEMS * VEC, $(op == "softmax")>(v, t.m);
%   else
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<true>(st, base, g.nv, lane, live, v);
      t.s += exp_sum<ITEMS * VEC, false>(v, t.m);
    }
%   end
%   if EDGE > 0 then
    t.s += exp_sum<EDGE, false>(e, t.m);
%   end
    t.s = group_reduce(t.s, OpSum());
% else
    t = group_reduce(t, OpMS());
% end
    const float k = row_k(t);
% if EDGE > 0 then
    finish_all<EDGE>(e, t.m, k);
    edge_store(y, g, lane, live, e);
% end
% if hold == "reg" then
%   if op == "softmax" then
    // v already holds exp(x - m)
    #pragma unroll
    for (int i = 0; i < ITEMS * VEC; i++) v[i] *= k;
%   else
    finish_all<ITEMS * VEC>(v, t.m, k);
%   end
    store_step(y + g.h, 0, g.nv, lane, live, v);
% elseif hold == "smem" then
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<true>(st, base, g.nv, lane, live, v);
      finish_all<ITEMS * VEC>(v, t.m, k);
      store_step(y + g.h, base, g.nv, lane, live, v);
    }
% else
    normalize(x + g.h, y + g.h, 0, g.nv, lane, live, t.m, k);
% end
  }
}
