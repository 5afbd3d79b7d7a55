#!/usr/bin/env bash
# apex_fetch.sh [REPO] — copy the Apex sources bench/apex_build.py compiles (csrc/type_shim.h, the
# Megatron fused softmax kernels, Apex's LICENSE) from a git repository of NVIDIA/apex (REPO: a
# clone or a bare mirror; default: a fresh shallow clone, which needs the network) into
# .peers/apex/ (git-ignored), with the commit in .peers/apex/COMMIT for the tables' headers.
# Carry .peers/apex to the GPU machine; build there with python3 bench/apex_build.py.
set -eu
cd "$(dirname "$0")/.."
repo=${1:-}
if [ -z "$repo" ]; then
  repo=$(mktemp -d)/apex
  git clone --depth 1 https://github.com/NVIDIA/apex "$repo"
fi
git -C "$repo" rev-parse --verify -q HEAD >/dev/null || { echo "apex_fetch: $repo is not a git repository" >&2; exit 1; }
rm -rf .peers/apex
for f in LICENSE csrc/type_shim.h csrc/megatron/scaled_upper_triang_masked_softmax.cpp \
         csrc/megatron/scaled_upper_triang_masked_softmax.h csrc/megatron/scaled_upper_triang_masked_softmax_cuda.cu \
         csrc/megatron/scaled_masked_softmax.cpp csrc/megatron/scaled_masked_softmax.h csrc/megatron/scaled_masked_softmax_cuda.cu; do
  mkdir -p ".peers/apex/$(dirname "$f")"
  git -C "$repo" show "HEAD:$f" >".peers/apex/$f" || { echo "apex_fetch: $f not in $repo" >&2; exit 1; }
done
git -C "$repo" rev-parse HEAD >.peers/apex/COMMIT
echo "apex_fetch: .peers/apex at $(cat .peers/apex/COMMIT)"
