#!/usr/bin/env python3
"""apex_build.py — build Apex's Megatron fused softmax kernels (a peer of attention_softmax) from
their source, for bench/attention_softmax.py --apex. Apex is not installable on the GPU machines;
its sources are (a copy of NVIDIA/apex's csrc/type_shim.h and csrc/megatron/scaled_*softmax*, with
the commit in DIR/COMMIT: bench/apex_fetch.sh makes it). This script is ours: it compiles those
files into two Python extension modules, for this GPU's architecture only.

    python3 bench/apex_build.py [--src .peers/apex]     # modules land in SRC/build_st/

    scaled_upper_triang_masked_softmax_cuda   causal, Q == K (3-D scores), K <= 16384
    scaled_masked_softmax_cuda                a mask tensor [B or 1, 1, Q, K], K <= 16384
                                              (its backward: K <= 4096)
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = {
    "scaled_upper_triang_masked_softmax_cuda": "scaled_upper_triang_masked_softmax",
    "scaled_masked_softmax_cuda": "scaled_masked_softmax",
}


def extensions(src):
    """The two CUDAExtensions over SRC's files (the flags Apex's own setup.py gives them)."""
    from torch.utils.cpp_extension import CUDAExtension
    nvcc = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "--expt-relaxed-constexpr",
            "--expt-extended-lambda"]
    out = []
    for name, stem in MODULES.items():
        files = [os.path.join(src, "csrc", "megatron", stem + ext) for ext in (".cpp", "_cuda.cu")]
        for f in files:
            if not os.path.exists(f):
                raise SystemExit("apex_build: %s is missing (run bench/apex_fetch.sh first)" % f)
        out.append(CUDAExtension(name=name, sources=files, include_dirs=[os.path.join(src, "csrc")],
                                 extra_compile_args={"cxx": ["-O3"], "nvcc": nvcc}))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.environ.get("APEX_PATH", os.path.join(HERE, "..", ".peers", "apex")))
    args = ap.parse_args()
    import torch
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension
    if not torch.cuda.is_available():
        raise SystemExit("apex_build: no GPU (the modules are built for this machine's GPU)")
    major, minor = torch.cuda.get_device_capability()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "%d.%d" % (major, minor))
    src = os.path.abspath(args.src)
    out = os.path.join(src, "build_st")
    t0 = time.time()
    setup(name="apex_fused_softmax_st", ext_modules=extensions(src), cmdclass={"build_ext": BuildExtension},
          script_args=["build_ext", "--build-lib", out, "--build-temp", os.path.join(out, "tmp")])
    print("apex_build: %s in %.0f s (sm_%d%d)" % (out, time.time() - t0, major, minor))


if __name__ == "__main__":
    sys.exit(main())
