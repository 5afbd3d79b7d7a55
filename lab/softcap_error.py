"""softcap_error.py — how far the 16-bit kernels' softcap tanh is from float64, next to torch's.

The kernels (templates/softcap.cu, tanh_cap) compute, for 16-bit elements,
    t = 1 - 2 rcp(1 + ex2(a * 2 log2e))      on ex2.approx.ftz.f32 and rcp.approx.ftz.f32,
and verify.h states its error as vr_tanh_err: 16 u (u = 2^-24) absolute beyond the argument's.
This probe runs the same three lines through torch's jiterator (NVRTC, the same PTX ops) and
reports the largest absolute error of t against float64 tanh, in u, over
  dense: 2^24 arguments evenly spread on [-12, 12] (beyond it t is -1 or 1 exactly), and
  bf16:  every finite bfloat16 logit x divided by the cap (cap 30 and 50), as the kernels' a,
and the variant of lab/patches/softcap-newton-rcp.patch (1 / (1 + E) by three Newton steps from a
bit-trick seed, no rcp.approx), with, in the same units, torch.tanh in float32 (CUDA's tanhf, the float32 kernels' tanh) and the
softcap as eager torch computes it on bfloat16 logits, cap * tanh(x / cap) in bfloat16 (the
error of z = cap t there, divided by cap).
Usage (GPU machine): python3 lab/softcap_error.py [OUT_FILE]
"""
import sys

import torch

U = 2.0 ** -24
CODE = """
template <typename T> T fast_tanh(T a) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a * (2.f * 1.4426950408889634f)));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + e));
  return fmaf(-2.f, r, 1.f);
}
"""
NEWTON = """
template <typename T> T newton_tanh(T a) {
  float y = a * (2.f * 1.4426950408889634f), e;
  y = y > 126.f ? 126.f : y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(y));
  const float s = 1.f + e;
  float r = __uint_as_float(0x7ef311c7u - __float_as_uint(s));
  r = r * fmaf(-s, r, 2.f);
  r = r * fmaf(-s, r, 2.f);
  r = r * fmaf(-s, r, 2.f);
  return fmaf(-2.f, r, 1.f);
}
"""


def max_u(t, a64):
    """The largest |t - tanh(a)| in u, t any dtype, a64 the float64 arguments."""
    return ((t.double() - torch.tanh(a64)).abs().max() / U).item()


def rows(fast, name, a32):
    a64 = a32.double()
    return [(name, "ours (16-bit kernels)", max_u(fast[0](a32), a64)),
            (name, "newton-rcp patch", max_u(fast[1](a32), a64)),
            (name, "torch.tanh float32 (tanhf)", max_u(torch.tanh(a32), a64))]


def bf16_rows(fast, cap):
    bits = torch.arange(-32768, 32768, dtype=torch.int32, device="cuda").to(torch.int16)
    x = bits.view(torch.bfloat16)
    x = x[torch.isfinite(x)]
    icap = torch.tensor(1.0 / cap, dtype=torch.float32)
    a32 = x.float() * icap.item()   # the kernels' a = fl(x fl(1 / cap))
    out = rows(fast, "bf16 logits / %g" % cap, a32)
    zt = cap * torch.tanh(x / cap)  # eager torch in bfloat16
    z64 = cap * torch.tanh(x.double() / cap)
    out.append(("bf16 logits / %g" % cap, "torch bf16 cap*tanh(x/cap), z's error / cap",
                ((zt.double() - z64).abs().max() / cap / U).item()))
    return out


def main():
    fast = (torch.cuda.jiterator._create_jit_fn(CODE), torch.cuda.jiterator._create_jit_fn(NEWTON))
    dense = torch.linspace(-12.0, 12.0, 1 << 24, dtype=torch.float32, device="cuda")
    res = rows(fast, "dense [-12, 12]", dense) + bf16_rows(fast, 30.0) + bf16_rows(fast, 50.0)
    lines = ["# softcap tanh error against float64, in u = 2^-24 absolute; bound stated: 16 u (verify.h vr_tanh_err)",
             "# device: %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__),
             "arguments\tsystem\tmax_abs_err_u"]
    lines += ["%s\t%s\t%.2f" % r for r in res]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").write(text)


if __name__ == "__main__":
    main()
