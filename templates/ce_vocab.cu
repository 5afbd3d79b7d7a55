// ce_vocab.cu — the row steps of vocab-parallel cross-entropy around the loss kernel (ce.cu) on
// one rank's shard of the classes, [start, start + cols) of total (python/softmax_tune/
// vocab_parallel.py; docs/linear-cross-entropy.md). Part of ce_steps.cu's module (one a dtype, no
// knob); each is a thread a row but rescale (a block a row), in double where it forms a factor:
//   st_vp_stats    after the shard's loss-only kernel: a row's (lse of the shard, its label's
//                  logit where the shard owns it, with label smoothing the shard's sum of logits)
//                  for the all-gather; a bad label flagged
//   st_vp_loss     after the all-gather: the row's lse over every shard and its loss
//   st_vp_weights  before the gradient kernel: a, the softmax term's factor on this shard's lse
//                  (sg (A, the row's coefficient) exp(lse_shard - lse)), as the kernel's class
//                  weight of a class a row; the two logits fix wants, read before the kernel
//                  may write over them
//   st_vp_rescale  label smoothing (the kernel ran with smoothing 1): g a + delta, times the
//                  softcap's derivative
//   st_vp_fix      after it: the elements a row where the kernel put a label term (the row's own
//                  class; the true label where the shard owns it) computed again and written over
% include("vocab_params.h")

#define ROWS_LOOP(i) for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < v.rows; i += (i64)gridDim.x * blockDim.x)

struct VpRow {
  i64 yloc;       // the label's column here, clamped into the shard
  double wy;      // its class weight; 0 where the row does not count
  bool good;      // counted: not ignored, within [0, total)
  bool bad;       // not ignored, outside: a NaN loss, no gradient
  bool owned;     // good and this shard's
};

__device__ VpRow vp_row(const VpParams &v, i64 i)
{
  const i64 y = label_of(v.ce, (const void *)v.labels, i);
  const bool valid = y != v.ce.ignore, inside = y >= 0 && y < v.total;
  VpRow r;
  r.good = valid && inside, r.bad = valid && !inside;
  r.owned = r.good && y >= v.start && y < v.start + v.ce.cols;
  r.yloc = min(max(y - v.start, 0ll), v.ce.cols - 1);
  r.wy = !r.good ? 0. : v.ce.weight ? (double)((const float *)v.ce.weight)[y] : 1.;
  return r;
}

__device__ __forceinline__ double logit_at(const VpParams &v, i64 i, i64 j) { return (double)load1((const elem_t *)v.logits + i * v.ce.stride + j); }

// z of logit x under the softcap, and dz/dx into *d (no softcap: x and 1)
__device__ double capped(const VpParams &v, double x, double *d)
{
  *d = 1.;
  if (v.ce.softcap <= 0.f) return x;
  const double c = v.ce.softcap, t = tanh(x / c);
  *d = 1. - t * t;
  return c * t;
}

__device__ __forceinline__ double sg_at(const VpParams &v, i64 i) { return ((const double *)v.sg)[v.sg_rows ? i : 0]; }

extern "C" __global__ void __launch_bounds__(256) st_vp_stats(VpParams v)
{
  const int k = v.ce.smoothing > 0.f ? 3 : 2;
  float *st = (float *)v.stats;
  ROWS_LOOP(i) {
    const VpRow r = vp_row(v, i);
    const float lse = ((const float *)v.lse_local)[i];
    double d;
    st[i * k] = lse;
    st[i * k + 1] = r.owned ? (float)capped(v, logit_at(v, i, r.yloc), &d) : 0.f;
    if (k == 3) st[i * k + 2] = (float)(v.ce.cols * ((double)lse - (double)((const float *)v.loss_local)[i]));
    if (r.bad && v.ce.flag) *(int *)v.ce.flag = 1;
  }
}

extern "C" __global__ void __launch_bounds__(256) st_vp_loss(VpParams v)
{
  const int k = v.ce.smoothing > 0.f ? 3 : 2;
  const float *g = (const float *)v.stats;
  const double eps = v.ce.smoothing, zl = v.ce.zloss;
  ROWS_LOOP(i) {
    const VpRow r = vp_row(v, i);
    double m = -__longlong_as_double(0x7ff0000000000000ll), s = 0., zy = 0., sz = 0.;
    for (i64 w = 0; w < v.world; w++) m = fmax(m, (double)g[(w * v.rows + i) * k]);
    for (i64 w = 0; w < v.world; w++) {
      const float *e = g + (w * v.rows + i) * k;
      s += exp((double)e[0] - m), zy += e[1], sz += k == 3 ? e[2] : 0.f;
    }
    const double lse = isinf(m) ? m : m + log(s);   // every shard -inf (or one +inf): that
    double loss = (1. - eps) * r.wy * (lse - zy);
    if (eps > 0.) loss += eps * (lse - sz / v.total);
    if (zl != 0.) loss += zl * lse * lse;
    ((double *)v.lse)[i] = lse;
    ((double *)v.loss)[i] = r.bad ? __longlong_as_double(0x7ff8000000000000ll) : r.good ? loss : 0.;
  }
}

extern "C" __global__ void __launch_bounds__(256) st_vp_weights(VpParams v)
{
  const double eps = v.ce.smoothing;
  float *sv = (float *)v.saved;
  ROWS_LOOP(i) {
    const VpRow r = vp_row(v, i);
    const double lse = ((const double *)v.lse)[i], sg = sg_at(v, i);
    const double coef = (1. - eps) * r.wy + eps + 2. * (double)v.ce.zloss * lse;
    const double a = r.good ? sg * coef * exp((double)((const float *)v.lse_local)[i] - lse) : 0.;
    ((double *)v.a)[i] = a;
    ((float *)v.w)[i] = (float)a;
    if (eps > 0.) ((float *)v.delta)[i] = r.good ? (float)(a / v.ce.cols - sg * eps / v.total) : 0.f;
    else ((int *)v.lab)[i] = (int)(i % v.ce.cols), sv[i] = (float)logit_at(v, i, i % v.ce.cols);
    sv[v.rows + i] = (float)logit_at(v, i, r.yloc);
  }
}

// g [rows][cols] (the kernel's p_shard - 1/cols) = g w + delta, delta times dz/dx under a softcap
// (float32, as the logits' own derivative); a block a row.
extern "C" __global__ void __launch_bounds__(256) st_vp_rescale(VpParams v)
{
  const float cap = v.ce.softcap;
  for (i64 i = blockIdx.x; i < v.rows; i += gridDim.x) {
    elem_t *g = (elem_t *)v.grad + i * v.ce.cols;
    const elem_t *x = (const elem_t *)v.logits + i * v.ce.stride;
    const float w = ((const float *)v.w)[i], dl = ((const float *)v.delta)[i];
    for (i64 j = threadIdx.x; j < v.ce.cols; j += blockDim.x) {
      float t = cap > 0.f ? tanhf(load1(x + j) / cap) : 0.f;
      store1(g + j, load1(g + j) * w + dl * (1.f - t * t));
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) st_vp_fix(VpParams v)
{
  const double eps = v.ce.smoothing;
  const float *sv = (const float *)v.saved;
  ROWS_LOOP(i) {
    const VpRow r = vp_row(v, i);
    const double a = ((const double *)v.a)[i], lloc = ((const float *)v.lse_local)[i], sg = sg_at(v, i);
    elem_t *g = (elem_t *)v.grad + i * v.ce.cols;
    double d, z;
    if (eps == 0. && r.good) z = capped(v, sv[i], &d), store1(g + i % v.ce.cols, (float)(a * exp(z - lloc) * d));
    if (r.owned) {
      z = capped(v, sv[v.rows + i], &d);
      store1(g + r.yloc, (float)((a * exp(z - lloc) - sg * eps / v.total - sg * (1. - eps) * r.wy) * d));
    }
  }
}
