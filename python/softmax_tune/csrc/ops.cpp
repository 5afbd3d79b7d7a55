/*
** ops.cpp — softmax_tune._C, the C++ ops of the PyTorch binding (python/setup.py builds it):
**
**   softmax_tune::softmax(Tensor x, bool log) -> Tensor
**   softmax_tune::softmax_backward(Tensor y, Tensor dy, bool log) -> Tensor
**   softmax_tune::softmax_out(Tensor x, bool log, Tensor(a!) out) -> ()
**
** over the last dim, registered with TORCH_LIBRARY: CUDA (and CPU: torch's own) kernels, autograd in C++
** (torch::autograd::Function; the backward op's own backward raises: no double backward); their
** fake kernels are Python's (softmax_tune/_native.py). Plus two plain calls for eager use,
** softmax(x, dim, log) and softmax_out(x, dim, log, out), that skip the dispatcher when no
** gradient is needed and return None for anything unusual (Python's path then decides); and
** cross_entropy_forward (st_cross_entropy) for cross_entropy.py's run(): its custom ops for
** torch.compile and its bad-label flag check stay in Python; cross_entropy_train, its eager
** training call with the autograd in C++ (the backward through st_cross_entropy_scale);
** cross_entropy_call, the whole eager call (cross_entropy.py's checks too: its host time); and
** attention_forward and attention_backward (st_attention_softmax[_backward]) for attention.py's
** run_forward and run_backward: its option checks, autograd and custom ops stay in Python.
**
** The C runtime is the library softmax_tune/_lib.py loaded (its look-up rules), called through
** the entry points _native.py hands over with each device's st_ctx (_lib's own contexts: one
** list of untuned problems, one log callback). Contexts are cached here, one per device.
*/
#include <torch/extension.h>
#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "softmax_tune.h"

namespace py = pybind11;

namespace {

constexpr int kMaxDevices = 64;
std::atomic<st_ctx *> contexts[kMaxDevices];
/* The library's entry points: set once, before the first context is published (so a reader that
** saw a context sees them), under bind_lock. */
decltype(&st_softmax) lib_forward;
decltype(&st_softmax_backward) lib_backward;   // NULL: a library built before the backward
decltype(&st_error) lib_error;
decltype(&st_cross_entropy) lib_ce;            // NULL: a library built before cross-entropy
decltype(&st_cross_entropy_scale) lib_ce_scale;   // NULL: before the backward's scaling (Python's autograd then)
decltype(&st_attention_softmax) lib_attn;      // both NULL: a library built before the attention
decltype(&st_attention_softmax_backward) lib_attn_bw;   // kernels' backward (_lib's test)
std::string no_backward;   // the error for a gradient without lib_backward
std::mutex bind_lock;
py::object *opener;        // _native._open(device) -> (ctx, st_softmax, st_softmax_backward, st_error, message,
                           //                          st_cross_entropy, st_attention_softmax[_backward],
                           //                          st_cross_entropy_scale)

bool supported(const at::Tensor &x) {
  at::ScalarType t = x.scalar_type();
  return x.is_cuda() && (t == at::kFloat || t == at::kHalf || t == at::kBFloat16);
}

st_dtype dtype_of(const at::Tensor &x) {
  switch (x.scalar_type()) {
    case at::kHalf: return ST_F16;
    case at::kBFloat16: return ST_BF16;
    default: return ST_F32;
  }
}

/* Entry i of the opener's tuple, 0 past its end (a _native.py older than this file). */
uintptr_t entry_at(const py::tuple &t, size_t i) {
  return t.size() > i ? t[i].cast<uintptr_t>() : 0;
}

/* The first call on a device: Python opens (or finds) its context; no lock held meanwhile (the
** opener takes the GIL and _lib's lock, and gives the same context to every caller). */
st_ctx *open_context(int device) {
  uintptr_t ctx, fwd, bwd, err, ce, attn, attn_bw, ce_scale;
  std::string message;
  {
    py::gil_scoped_acquire gil;
    if (opener == nullptr)
      throw std::runtime_error("softmax_tune: the C++ ops were loaded without the package (import softmax_tune)");
    try {
      py::tuple t = (*opener)(device);
      ctx = t[0].cast<uintptr_t>(), fwd = t[1].cast<uintptr_t>(), bwd = t[2].cast<uintptr_t>();
      err = t[3].cast<uintptr_t>(), message = t[4].cast<std::string>();
      ce = entry_at(t, 5), attn = entry_at(t, 6), attn_bw = entry_at(t, 7), ce_scale = entry_at(t, 8);
    } catch (py::error_already_set &e) {   // the library not found, st_open failed: Python's message
      throw std::runtime_error(py::str(e.value()).cast<std::string>());
    }
  }
  if (ctx == 0 || fwd == 0 || err == 0)   // never publish what a call would jump through as NULL
    throw std::runtime_error("softmax_tune: no context or no st_softmax/st_error from the library for CUDA device " +
                             std::to_string(device) + " (softmax_tune/_native.py _open)");
  std::lock_guard<std::mutex> lock(bind_lock);
  if (lib_forward == nullptr) {
    lib_forward = reinterpret_cast<decltype(&st_softmax)>(fwd);
    lib_backward = reinterpret_cast<decltype(&st_softmax_backward)>(bwd);
    lib_error = reinterpret_cast<decltype(&st_error)>(err);
    lib_ce = reinterpret_cast<decltype(&st_cross_entropy)>(ce);
    lib_ce_scale = reinterpret_cast<decltype(&st_cross_entropy_scale)>(ce_scale);
    lib_attn = reinterpret_cast<decltype(&st_attention_softmax)>(attn);
    lib_attn_bw = reinterpret_cast<decltype(&st_attention_softmax_backward)>(attn_bw);
    no_backward = message;
  }
  contexts[device].store(reinterpret_cast<st_ctx *>(ctx), std::memory_order_release);
  return reinterpret_cast<st_ctx *>(ctx);
}

st_ctx *context(int device) {
  if (device < 0 || device >= kMaxDevices)
    throw std::runtime_error("softmax_tune: CUDA device " + std::to_string(device) + " is beyond the C++ ops' 64");
  st_ctx *ctx = contexts[device].load(std::memory_order_acquire);
  return ctx != nullptr ? ctx : open_context(device);
}

void check(int rc, st_ctx *ctx) {
  if (rc != ST_OK)
    throw std::runtime_error(std::string("softmax_tune: ") + lib_error(ctx));
}

struct CUstream_st *stream_of(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

int cuda_ordinal(const at::Tensor &x) {
  return static_cast<int>(x.get_device());
}

/* ---- the plain calls' plumbing (cross-entropy, attention: one library call each) ---- */

/* x's device's context, or nullptr when the library lacks `entry` (read once that device's first
** call has bound the entry points: hence a reference). */
template <typename Fn>
st_ctx *bound(const at::Tensor &x, const Fn &entry) {
  st_ctx *ctx = context(cuda_ordinal(x));
  return entry != nullptr ? ctx : nullptr;
}

/* fn(ctx, args..., torch's current stream on x's device); a failure raised with st_error's message. */
template <typename Fn, typename... Args>
void launch(Fn fn, st_ctx *ctx, const at::Tensor &x, Args... args) {
  check(fn(ctx, args..., stream_of(cuda_ordinal(x))), ctx);
}

/* An optional tensor absent (None or undefined), or of `type`, contiguous, on x's device. */
bool fits(const std::optional<at::Tensor> &t, const at::Tensor &x, at::ScalarType type) {
  return !t.has_value() || !t->defined() ||
         (t->scalar_type() == type && t->is_contiguous() && t->device() == x.device());
}

/* The data of an optional tensor that fits(), NULL when absent. */
template <typename T>
T *data_or_null(const std::optional<at::Tensor> &t) {
  return t.has_value() && t->defined() ? t->data_ptr<T>() : nullptr;
}

/* y = softmax (log_softmax) of x over its last dim: both contiguous CUDA tensors, same shape. */
void run_forward(const at::Tensor &x, const at::Tensor &y, bool log) {
  int device = cuda_ordinal(x);
  st_ctx *ctx = context(device);
  int64_t cols = x.size(-1);
  check(lib_forward(ctx, dtype_of(x), log ? ST_LOG_SOFTMAX : ST_SOFTMAX, x.data_ptr(), y.data_ptr(), x.numel() / cols,
                    cols, stream_of(device)), ctx);
}

/* ---- the ops' kernels (CUDA; anything the library does not take is torch's) ---- */

/* torch's own kernels, for what the library does not take: ATen ops only, so a CPU tensor (or
** float64, empty, 0-d) never reaches the library nor re-enters a softmax_tune:: op. */
at::Tensor torch_softmax(const at::Tensor &x, bool log) {
  at::Tensor xc = x.contiguous();
  return log ? at::_log_softmax(xc, -1, false) : at::_softmax(xc, -1, false);
}

at::Tensor torch_backward(const at::Tensor &y, const at::Tensor &dy, bool log) {
  return log ? at::_log_softmax_backward_data(dy.contiguous(), y, -1, y.scalar_type())
             : at::_softmax_backward_data(dy.contiguous(), y, -1, y.scalar_type());
}

void check_shapes(const at::Tensor &y, const at::Tensor &dy) {
  TORCH_CHECK(dy.sizes() == y.sizes(), "softmax_tune: softmax_backward: dy of shape ", dy.sizes(), ", y of ",
              y.sizes());
}

at::Tensor softmax_kernel(const at::Tensor &x, bool log) {
  if (!supported(x) || x.dim() == 0 || x.numel() == 0)
    return torch_softmax(x, log);
  at::Tensor xc = x.contiguous();
  at::Tensor y = at::empty(xc.sizes(), xc.options());
  run_forward(xc, y, log);
  return y;
}

at::Tensor backward_kernel(const at::Tensor &y_, const at::Tensor &dy, bool log) {
  at::Tensor y = y_.contiguous();
  check_shapes(y, dy);
  if (!supported(y) || y.dim() == 0 || y.numel() == 0)
    return torch_backward(y, dy, log);
  int device = cuda_ordinal(y);
  st_ctx *ctx = context(device);   // the entry points bound
  if (lib_backward == nullptr)
    throw std::runtime_error(no_backward);
  at::Tensor dyc = dy.to(y.scalar_type()).contiguous();
  at::Tensor dx = dyc.data_ptr() != dy.data_ptr() ? dyc : at::empty(y.sizes(), y.options());   // our copy: overwrite it
  int64_t cols = y.size(-1);
  check(lib_backward(ctx, dtype_of(y), log ? ST_LOG_SOFTMAX : ST_SOFTMAX, y.data_ptr(), dyc.data_ptr(), dx.data_ptr(),
                     y.numel() / cols, cols, stream_of(device)), ctx);
  return dx;
}

/* out= checks: x a non-empty contiguous CUDA float32/float16/bfloat16 tensor, out like it. */
bool takes_out(const at::Tensor &x, const at::Tensor &out) {
  return supported(x) && x.dim() > 0 && x.numel() > 0 && x.is_contiguous() && out.sizes() == x.sizes() &&
         out.scalar_type() == x.scalar_type() && out.device() == x.device() && out.is_contiguous();
}

void out_kernel(const at::Tensor &x, bool log, at::Tensor &out) {
  TORCH_CHECK(takes_out(x, out), "softmax_tune: softmax_out takes a non-empty contiguous CUDA float32/float16/bfloat16 "
              "x and a contiguous out like it, got x ", x.device(), " ", x.scalar_type(), " ", x.sizes(), ", out ",
              out.device(), " ", out.scalar_type(), " ", out.sizes());
  run_forward(x, out, log);
}

/* The CPU kernels: torch's, never the library (a CUDA tensor here is a dispatch error). */
at::Tensor cpu_softmax(const at::Tensor &x, bool log) {
  TORCH_CHECK(!x.is_cuda(), "softmax_tune: the CPU kernel got a CUDA tensor");
  return torch_softmax(x, log);
}

at::Tensor cpu_backward(const at::Tensor &y, const at::Tensor &dy, bool log) {
  TORCH_CHECK(!y.is_cuda() && !dy.is_cuda(), "softmax_tune: the CPU kernel got a CUDA tensor");
  check_shapes(y, dy);
  return torch_backward(y.contiguous(), dy, log);
}

/* ---- autograd ---- */

at::Tensor call_softmax(const at::Tensor &x, bool log) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("softmax_tune::softmax", "")
                     .typed<at::Tensor(const at::Tensor &, bool)>();
  return op.call(x, log);
}

at::Tensor call_backward(const at::Tensor &y, const at::Tensor &dy, bool log) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("softmax_tune::softmax_backward", "")
                     .typed<at::Tensor(const at::Tensor &, const at::Tensor &, bool)>();
  return op.call(y, dy, log);
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Softmax : public torch::autograd::Function<Softmax> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, bool log) {
    at::AutoDispatchBelowADInplaceOrView below;
    at::Tensor y = call_softmax(x, log);
    ctx->saved_data["log"] = log;
    ctx->save_for_backward({y});   // dx needs only the output
    return y;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    at::Tensor y = ctx->get_saved_variables()[0];
    return {call_backward(y, grads[0], ctx->saved_data["log"].toBool()), at::Tensor()};
  }
};

/* The backward op under a graph of its own (create_graph=True): its gradient raises when used. */
struct SoftmaxBackward : public torch::autograd::Function<SoftmaxBackward> {
  static at::Tensor forward(AutogradContext *, const at::Tensor &y, const at::Tensor &dy, bool log) {
    at::AutoDispatchBelowADInplaceOrView below;
    return call_backward(y, dy, log);
  }
  static variable_list backward(AutogradContext *, variable_list) {
    throw std::runtime_error("softmax_tune: no double backward (softmax_tune's backward has no gradient)");
  }
};

at::Tensor softmax_autograd(const at::Tensor &x, bool log) {
  if (at::GradMode::is_enabled() && x.requires_grad())
    return Softmax::apply(x, log);
  at::AutoDispatchBelowADInplaceOrView below;
  return call_softmax(x, log);
}

at::Tensor backward_autograd(const at::Tensor &y, const at::Tensor &dy, bool log) {
  if (at::GradMode::is_enabled() && (y.requires_grad() || dy.requires_grad()))
    return SoftmaxBackward::apply(y, dy, log);
  at::AutoDispatchBelowADInplaceOrView below;
  return call_backward(y, dy, log);
}

/* ---- the eager calls (Python's softmax_tune.softmax; undefined tensors come back as None) ---- */

/* dim as an index of x's dims, or -1 when out of range or x is 0-d. */
int64_t dim_of(const at::Tensor &x, int64_t dim) {
  int64_t n = x.dim();
  return n > 0 && dim >= -n && dim < n ? (dim + n) % n : -1;
}

at::Tensor eager_softmax(const at::Tensor &x, int64_t dim, bool log) {
  dim = dim_of(x, dim);
  if (dim < 0 || !supported(x) || x.numel() == 0)
    return at::Tensor();
  bool last = dim == x.dim() - 1;
  at::Tensor xt = last ? x : x.movedim(dim, -1);
  at::Tensor y;
  if (at::GradMode::is_enabled() && x.requires_grad()) {
    y = call_softmax(xt, log);   // through autograd
  } else {
    xt = xt.contiguous();
    y = at::empty(xt.sizes(), xt.options());
    run_forward(xt, y, log);
  }
  return last ? y : y.movedim(-1, dim);
}

at::Tensor eager_softmax_out(const at::Tensor &x, int64_t dim, bool log, const at::Tensor &out) {
  if (dim_of(x, dim) != x.dim() - 1 || !takes_out(x, out) || (at::GradMode::is_enabled() && x.requires_grad()))
    return at::Tensor();
  run_forward(x, out, log);
  return out;
}

/* ---- cross-entropy's eager call (cross_entropy.py run(); undefined tensors come back as None) ---- */

using CeResult = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

/* Whether logits x [N, V] (unit column stride, a row stride allowed), labels t [N] (contiguous
** int32 or int64 on x's device), weight (float32 [V] contiguous, or absent), reduction and flag
** (the int the kernel sets on a bad label: pinned host memory, cross_entropy.py's _Flag, or on
** x's device) are for st_cross_entropy. */
bool ce_fits(const at::Tensor &x, const at::Tensor &t, const std::optional<at::Tensor> &weight, int64_t reduction,
             const at::Tensor &flag) {
  bool labels = (t.scalar_type() == at::kInt || t.scalar_type() == at::kLong) && t.is_contiguous() &&
                t.device() == x.device();
  return supported(x) && x.dim() == 2 && x.stride(1) == 1 && labels && reduction >= ST_REDUCE_NONE &&
         reduction <= ST_REDUCE_MEAN && flag.scalar_type() == at::kInt &&
         (flag.is_cuda() ? flag.device() == x.device() : flag.is_pinned()) &&
         fits(weight, x, at::kFloat);
}

/* (the loss in x's dtype (f32_loss: float32, as torch.autocast's), reduced as asked: [N] for none,
** 0-d else; the gradient [N, V] or undefined; lse [N] float32) of what ce_fits() took, through
** st_cross_entropy on ctx, on the current stream, no host sync. inplace: the gradient into x
** (contiguous). used, where not NULL and the gradient is a sum's or a mean's: the factor the
** gradient was written with (st_ce_options.grad_scale: the grad_output predicted), a float32 [1]
** after lse in lse's storage (no allocation of its own), for scale_grad. */
CeResult ce_run(st_ctx *ctx, const at::Tensor &x, const at::Tensor &t, const std::optional<at::Tensor> &weight,
                int64_t ignore_index, int64_t reduction, double label_smoothing, double z_loss, double softcap,
                bool want_grad, bool inplace, const at::Tensor &flag, bool f32_loss, at::Tensor *used = nullptr) {
  int64_t n = x.size(0), v = x.size(1);
  at::TensorOptions f32 = x.options().dtype(at::kFloat);
  bool predict = used != nullptr && want_grad && reduction != ST_REDUCE_NONE;
  at::Tensor loss = at::empty({n}, f32), lse_used = at::empty({predict ? n + 1 : n}, f32), lse = lse_used.narrow(0, 0, n);
  at::Tensor grad = !want_grad ? at::Tensor() : inplace ? x : at::empty({n, v}, x.options());
  at::Tensor reduced = reduction == ST_REDUCE_NONE ? at::Tensor() : at::empty(at::IntArrayRef(), f32_loss ? f32 : x.options());
  st_ce_options o{};   // a field added later: 0
  o.ignore_index = ignore_index;
  o.reduction = static_cast<st_reduction>(reduction);
  o.label_smoothing = static_cast<float>(label_smoothing);
  o.z_loss = static_cast<float>(z_loss);
  o.softcap = static_cast<float>(softcap);
  o.weight = data_or_null<float>(weight);
  o.row_stride = x.stride(0);
  o.bad_label = flag.data_ptr<int>();   // pinned host memory: its address is the GPU's too
  o.reduced = reduced.defined() ? reduced.data_ptr() : nullptr;
  o.reduced_in_dtype = f32_loss ? 0 : 1;
  if (predict) {
    *used = lse_used.narrow(0, n, 1);
    o.grad_scale = used->data_ptr<float>();
  }
  launch(lib_ce, ctx, x, dtype_of(x), x.data_ptr(), t.data_ptr(), t.scalar_type() == at::kInt ? ST_I32 : ST_I64,
         grad.defined() ? grad.data_ptr() : nullptr, loss.data_ptr<float>(), lse.data_ptr<float>(), n, v, &o);
  // the library reduced the loss as torch does (mean: over the rows not ignored, weighted), in x's dtype
  // or float32; the rows' losses are float32 already
  return CeResult(reduced.defined() ? reduced : f32_loss ? loss : loss.to(x.scalar_type()), grad, lse);
}

/* ce_run's result, all undefined when the library lacks st_cross_entropy or the tensors are not
** for it: Python's ctypes path then runs. */
CeResult eager_cross_entropy(const at::Tensor &x, const at::Tensor &t, const std::optional<at::Tensor> &weight,
                             int64_t ignore_index, int64_t reduction, double label_smoothing, double z_loss,
                             double softcap, bool want_grad, bool inplace, const at::Tensor &flag, bool f32_loss) {
  st_ctx *ctx = ce_fits(x, t, weight, reduction, flag) ? bound(x, lib_ce) : nullptr;
  if (ctx == nullptr)
    return CeResult();
  return ce_run(ctx, x, t, weight, ignore_index, reduction, label_smoothing, z_loss, softcap, want_grad, inplace, flag,
                f32_loss);
}

/* ---- cross-entropy's training call: the loss with its autograd in C++ (cross_entropy.py, eager
** calls with a gradient and no inplace): no Python on the backward's way ---- */

/* cross_entropy_train's arguments other than the logits x (the graph's one input), checked. */
struct CeCall {
  st_ctx *ctx;
  at::Tensor x2, t, flag;
  std::optional<at::Tensor> weight;
  int64_t ignore_index, reduction;
  double label_smoothing, z_loss, softcap;
  bool f32_loss;
};

/* grad [N, V] (contiguous) *= grad_output: a scalar (an expanded one too) or one value a row; in
** grad's dtype, else float32 (a float32 loss's, under autocast: not rounded to grad's first). used:
** ce_run's (the gradient was written times it; no pass when grad_output equals it), or undefined. */
void scale_grad(const at::Tensor &grad, const at::Tensor &go, const at::Tensor &used) {
  at::Tensor g = go.reshape({-1});
  bool per_row = g.numel() > 1 && g.stride(0) != 0;
  bool f32 = g.scalar_type() != grad.scalar_type();
  g = (per_row ? g : g.slice(0, 0, 1)).to(f32 ? at::kFloat : grad.scalar_type()).contiguous();
  st_ctx *ctx = context(cuda_ordinal(grad));
  launch(lib_ce_scale, ctx, grad, dtype_of(grad), grad.data_ptr(), static_cast<const void *>(g.data_ptr()),
         used.defined() && !per_row ? used.data_ptr<float>() : nullptr, (per_row ? 1 : 0) | (f32 ? ST_GO_FLOAT32 : 0),
         grad.size(0), grad.size(1));
}

/* The forward computes the gradient (one kernel) and keeps it; the backward scales it in place by
** grad_output and hands it over: one backward only. The gradient is written times the stream's
** predicted grad_output (the last one its backward saw), so a steady one costs no pass. */
struct CrossEntropy : public torch::autograd::Function<CrossEntropy> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const CeCall &a) {
    at::AutoDispatchBelowADInplaceOrView below;
    at::Tensor used;
    CeResult r = ce_run(a.ctx, a.x2, a.t, a.weight, a.ignore_index, a.reduction, a.label_smoothing, a.z_loss, a.softcap,
                        true, false, a.flag, a.f32_loss, &used);
    ctx->saved_data["grad"] = std::get<1>(r);
    if (used.defined())
      ctx->saved_data["used"] = used;
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["live"] = true;
    return std::get<0>(r);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    if (!ctx->saved_data["live"].toBool())
      throw std::runtime_error("softmax_tune.cross_entropy: backward through it a second time (retain_graph): the "
                               "gradient it kept was consumed by the first");
    at::Tensor grad = ctx->saved_data["grad"].toTensor();
    ctx->saved_data["live"] = false;
    ctx->saved_data["grad"] = at::IValue();   // the caller's now
    auto used = ctx->saved_data.find("used");
    scale_grad(grad, grads[0], used == ctx->saved_data.end() ? at::Tensor() : used->second.toTensor());
    return {grad.view(ctx->saved_data["sizes"].toIntVector()), at::Tensor()};
  }
};

/* The loss of logits x ([N, V] or [B, T, V]; x2 its rows, detached, unit column stride) with its
** gradient function, or undefined when the call is not for the C++ path (Python's then runs). */
at::Tensor eager_cross_entropy_train(const at::Tensor &x, const at::Tensor &x2, const at::Tensor &t,
                                     const std::optional<at::Tensor> &weight, int64_t ignore_index, int64_t reduction,
                                     double label_smoothing, double z_loss, double softcap, const at::Tensor &flag,
                                     bool f32_loss) {
  st_ctx *ctx = ce_fits(x2, t, weight, reduction, flag) ? bound(x2, lib_ce) : nullptr;
  if (ctx == nullptr || lib_ce_scale == nullptr)
    return at::Tensor();
  return CrossEntropy::apply(x, CeCall{ctx, x2, t, flag, weight, ignore_index, reduction, label_smoothing, z_loss,
                                       softcap, f32_loss});
}

/* ---- cross-entropy's whole eager call: cross_entropy.py's checks, rows and call in one C++ call;
** undefined (None) for anything unusual, and Python's path then decides, warns or raises ---- */

/* st_reduction of a reduction's name, or -1. */
int64_t reduction_of(const std::string &r) {
  return r == "none" ? ST_REDUCE_NONE : r == "sum" ? ST_REDUCE_SUM : r == "mean" ? ST_REDUCE_MEAN : -1;
}

/* Whether the options pass cross_entropy.py's checks and are not for its fallback (class weights
** with label smoothing). */
bool ce_plain_options(double ls, double z, const std::optional<double> &softcap, bool weighted) {
  bool cap = !softcap.has_value() || (std::isfinite(*softcap) && *softcap > 0.);
  return ls >= 0. && ls <= 1. && std::isfinite(z) && z >= 0. && cap && !(weighted && ls > 0.);
}

/* Whether logits x ([N, V] or [B, T, V], a row at least, 2 classes) and class indices t (x's shape
** less its last dim, int32 or int64, on x's device) are cross_entropy.py's own form. */
bool ce_plain_shapes(const at::Tensor &x, const at::Tensor &t) {
  if (!supported(x) || (x.dim() != 2 && x.dim() != 3) || t.dim() != x.dim() - 1 || x.size(-1) < 2 || x.numel() == 0)
    return false;
  for (int64_t i = 0; i < t.dim(); i++)
    if (t.size(i) != x.size(i))
      return false;
  return (t.scalar_type() == at::kInt || t.scalar_type() == at::kLong) && t.device() == x.device();
}

/* The loss of cross_entropy(x, t, weight, ...) with its gradient function where x requires one
** (CrossEntropy), else loss-only; undefined where the call is not for this path: options or shapes
** Python checks or hands to torch, a bad label flagged by an earlier call (Python raises it), a
** gradient written in place, a library without the entries. flag: cross_entropy.py's _Flag tensor
** of x's device (pinned: not asked here, a CUDA call). */
at::Tensor eager_cross_entropy_call(const at::Tensor &x, const at::Tensor &t, const std::optional<at::Tensor> &weight,
                                    int64_t ignore_index, const std::string &reduction, double label_smoothing,
                                    double z_loss, const std::optional<double> &softcap, bool inplace,
                                    const at::Tensor &flag) {
  int64_t red = reduction_of(reduction);
  bool weighted = weight.has_value() && weight->defined();
  if (red < 0 || !ce_plain_options(label_smoothing, z_loss, softcap, weighted) || !ce_plain_shapes(x, t) ||
      flag.is_cuda() || flag.scalar_type() != at::kInt || *flag.data_ptr<int>() != 0)
    return at::Tensor();
  int64_t v = x.size(-1);
  std::optional<at::Tensor> w;
  if (weighted) {
    if (!weight->is_floating_point() || weight->dim() != 1 || weight->size(0) != v || weight->device() != x.device())
      return at::Tensor();
    w = weight->to(at::kFloat).contiguous();
  }
  bool grad = at::GradMode::is_enabled() && x.requires_grad();
  st_ctx *ctx = bound(x, lib_ce);
  if (ctx == nullptr || (grad && (inplace || lib_ce_scale == nullptr)))
    return at::Tensor();
  at::Tensor x2 = (grad ? x.detach() : x).reshape({-1, v});
  if (x2.stride(1) != 1 || x2.stride(0) < v)
    x2 = x2.contiguous();
  at::Tensor t1 = t.reshape({-1}).contiguous();
  bool f32 = x.scalar_type() != at::kFloat && at::autocast::is_autocast_enabled(at::kCUDA);   // as autocast_f32()
  double cap = softcap.value_or(0.);
  at::Tensor loss =
      grad ? CrossEntropy::apply(x, CeCall{ctx, x2, t1, flag, w, ignore_index, red, label_smoothing, z_loss, cap, f32})
           : std::get<0>(ce_run(ctx, x2, t1, w, ignore_index, red, label_smoothing, z_loss, cap, false, false, flag, f32));
  return red == ST_REDUCE_NONE ? loss.reshape(t.sizes()) : loss;
}

/* ---- attention_softmax's eager calls (attention.py run_forward, run_backward; undefined tensors
** come back as None: the ctypes path then runs, and gives its result or its error) ---- */

/* st_attn_options.bias_type of a bias tensor's dtype: float32, float16, bfloat16 or bool; -1 other. */
int bias_type_of(const at::Tensor &t) {
  switch (t.scalar_type()) {
    case at::kFloat: return ST_F32;
    case at::kHalf: return ST_F16;
    case at::kBFloat16: return ST_BF16;
    case at::kBool: return ST_ATTN_BIAS_BOOL;
    default: return -1;
  }
}

/* A bias tensor as attention.py's _additive makes it: [B, H, Q, K] of x's shape on its device, of
** a bias_type_of dtype, a key stride of 1 (an expanded view: strides 0 where it broadcasts); or absent. */
bool bias_fits(const std::optional<at::Tensor> &t, const at::Tensor &x) {
  return !t.has_value() || !t->defined() ||
         (bias_type_of(*t) >= 0 && t->device() == x.device() && t->sizes() == x.sizes() && t->stride(3) == 1);
}

/* The options as attention.py's ctypes path fills them (_lib.AttnOptions); kl int32 [B] and slopes
** float32 [H] that fits(), a bias that bias_fits(), or absent. */
st_attn_options attn_options(const std::optional<at::Tensor> &kl, const std::optional<at::Tensor> &slopes,
                             double scale, double softcap, bool causal, int64_t window, int64_t offset,
                             const std::optional<at::Tensor> &bias = std::nullopt) {
  st_attn_options o{};   // a field added later: 0
  o.scale = static_cast<float>(scale);
  o.softcap = static_cast<float>(softcap);
  o.causal = causal ? 1 : 0;
  o.causal_offset = offset;
  o.window = window;
  o.key_lengths = data_or_null<int>(kl);
  o.alibi_slopes = data_or_null<float>(slopes);
  if (bias.has_value() && bias->defined()) {
    o.bias = bias->data_ptr();
    o.bias_type = bias_type_of(*bias);
    o.bias_stride_b = bias->stride(0);
    o.bias_stride_h = bias->stride(1);
    o.bias_stride_q = bias->stride(2);
  }
  return o;
}

/* y of scores x [B, H, Q, K] (copied when not contiguous) and the additive bias tensor (or
** none) through st_attention_softmax on the current stream, no host sync; undefined when the
** library lacks it or the tensors are not for it. */
at::Tensor eager_attention(const at::Tensor &x, const std::optional<at::Tensor> &kl,
                           const std::optional<at::Tensor> &slopes, double scale, double softcap, bool causal,
                           int64_t window, int64_t offset, const std::optional<at::Tensor> &bias) {
  if (!supported(x) || x.dim() != 4 || !fits(kl, x, at::kInt) || !fits(slopes, x, at::kFloat) || !bias_fits(bias, x))
    return at::Tensor();
  st_ctx *ctx = bound(x, lib_attn);
  if (ctx == nullptr)
    return at::Tensor();
  at::Tensor xc = x.contiguous();
  at::Tensor y = at::empty_like(xc);
  st_attn_options o = attn_options(kl, slopes, scale, softcap, causal, window, offset, bias);
  launch(lib_attn, ctx, xc, dtype_of(xc), &o, xc.data_ptr(), y.data_ptr(), xc.size(0), xc.size(1), xc.size(2),
         xc.size(3));
  return y;
}

/* dx of the forward's output y, its gradient dy (converted to y's dtype, copied when not
** contiguous: that copy becomes dx) and, under a softcap only, the scores x, through
** st_attention_softmax_backward; undefined as eager_attention's. */
at::Tensor eager_attention_backward(const std::optional<at::Tensor> &x, const at::Tensor &y_, const at::Tensor &dy,
                                    const std::optional<at::Tensor> &kl, double scale, double softcap, bool causal,
                                    int64_t window, int64_t offset) {
  bool cap = softcap > 0;
  bool scores = !cap || (x.has_value() && x->defined() && x->scalar_type() == y_.scalar_type() &&
                         x->sizes() == y_.sizes() && x->device() == y_.device());
  if (!supported(y_) || y_.dim() != 4 || dy.sizes() != y_.sizes() || dy.device() != y_.device() || !scores ||
      !fits(kl, y_, at::kInt))
    return at::Tensor();
  st_ctx *ctx = bound(y_, lib_attn_bw);
  if (ctx == nullptr)
    return at::Tensor();
  at::Tensor y = y_.contiguous();
  at::Tensor dyc = dy.to(y.scalar_type()).contiguous();
  at::Tensor dx = dyc.data_ptr() != dy.data_ptr() ? dyc : at::empty_like(y);   // our copy: overwrite it
  at::Tensor xc = cap ? x->contiguous() : at::Tensor();
  st_attn_options o = attn_options(kl, std::nullopt, scale, softcap, causal, window, offset);
  launch(lib_attn_bw, ctx, y, dtype_of(y), &o, xc.defined() ? xc.data_ptr() : nullptr, y.data_ptr(), dyc.data_ptr(),
         dx.data_ptr(), y.size(0), y.size(1), y.size(2), y.size(3));
  return dx;
}

void set_opener(py::object fn) {
  py::object *old = opener;
  opener = new py::object(std::move(fn));   // kept to the end of the process
  delete old;
}

}  // namespace

TORCH_LIBRARY(softmax_tune, m) {
  m.def("softmax(Tensor x, bool log) -> Tensor");
  m.def("softmax_backward(Tensor y, Tensor dy, bool log) -> Tensor");
  m.def("softmax_out(Tensor x, bool log, Tensor(a!) out) -> ()");
}

TORCH_LIBRARY_IMPL(softmax_tune, CUDA, m) {
  m.impl("softmax", &softmax_kernel);
  m.impl("softmax_backward", &backward_kernel);
  m.impl("softmax_out", &out_kernel);
}

TORCH_LIBRARY_IMPL(softmax_tune, CPU, m) {
  m.impl("softmax", &cpu_softmax);
  m.impl("softmax_backward", &cpu_backward);
}

TORCH_LIBRARY_IMPL(softmax_tune, Autograd, m) {
  m.impl("softmax", &softmax_autograd);
  m.impl("softmax_backward", &backward_autograd);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "softmax_tune's C++ ops (torch.ops.softmax_tune) and their eager calls";
  /* Without the GIL, as torch's own calls: the library may call its log callback (Python) while
  ** another thread waits on it. */
  m.def("softmax", &eager_softmax, "softmax (log) of x over dim through the library, or None: not for it",
        py::call_guard<py::gil_scoped_release>());
  m.def("softmax_out", &eager_softmax_out, "the same into out (last dim, no autograd), or None",
        py::call_guard<py::gil_scoped_release>());
  m.def("cross_entropy_forward", &eager_cross_entropy,
        "(loss, gradient or None, lse) of logits [N, V] and labels [N] through st_cross_entropy, or Nones: not "
        "for it (cross_entropy.py run())", py::call_guard<py::gil_scoped_release>());
  m.def("cross_entropy_train", &eager_cross_entropy_train,
        "the loss of logits x with its autograd in C++ (the gradient from the forward's kernel, scaled by "
        "st_cross_entropy_scale), or None: not for it (cross_entropy.py)", py::call_guard<py::gil_scoped_release>());
  m.def("cross_entropy_call", &eager_cross_entropy_call,
        "softmax_tune.cross_entropy's whole eager call (loss-only, or with its autograd in C++), or None: not for "
        "it (cross_entropy.py then checks, warns or raises)", py::call_guard<py::gil_scoped_release>());
  m.def("attention_forward", &eager_attention,
        "y of scores [B, H, Q, K] through st_attention_softmax, or None: not for it (attention.py run_forward)",
        py::call_guard<py::gil_scoped_release>());
  m.def("attention_backward", &eager_attention_backward,
        "dx from (x under a softcap), y, dy through st_attention_softmax_backward, or None: not for it "
        "(attention.py run_backward)", py::call_guard<py::gil_scoped_release>());
  m.def("_set_opener", &set_opener, "the Python call that opens a device's context");
  m.attr("ce_f32_loss") = true;     // the cross-entropy calls take f32_loss
  m.attr("ce_grad_scale") = true;   // and st_cross_entropy_scale grad_scale (0.3.0; a build before: cross_entropy.py's ctypes path)
}
