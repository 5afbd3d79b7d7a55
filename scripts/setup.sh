#!/usr/bin/env bash
# setup.sh — installs what building softmax-tune needs, from Debian packages, where missing:
# a C compiler, CMake, Lua 5.4 (linked statically into the binary) and SQLite 3. The CUDA
# toolkit (nvcc, NVRTC, headers) must be there already: it is not a Debian package here.
set -euo pipefail

want=(build-essential cmake pkg-config liblua5.4-dev libsqlite3-dev)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null; then
    echo "setup: please install ${missing[*]} (no apt-get on this machine)" >&2
    exit 1
  fi
  sudo=
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: no CUDA toolkit found (nvcc, NVRTC and cuda.h are needed; the GPU driver is not)." >&2
  echo "setup: install the CUDA toolkit 12 or 13 and put its bin/ on PATH." >&2
  exit 1
fi
echo "setup: ready"
