#!/usr/bin/env bash
# Runs ON the GPU machine (Ubuntu image with CUDA, no network): unpacks the
# Debian dev packages carried in .devdeps/ (scripts/device-deps.sh fetched
# them) into a private sysroot and builds the CUDA tree with all cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SYSROOT=/tmp/aph-sysroot
if [ ! -d "$SYSROOT/usr/include/boost" ]; then
  mkdir -p "$SYSROOT"
  for deb in .devdeps/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
fi
ARCHLIB=$SYSROOT/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$ARCHLIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DAPH_WERROR=OFF \
  -DCMAKE_PREFIX_PATH="$SYSROOT/usr" -DCMAKE_INCLUDE_PATH="$SYSROOT/usr/include" \
  -DCMAKE_LIBRARY_PATH="$ARCHLIB" -DCMAKE_BUILD_RPATH="$ARCHLIB" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DAPH_PYTHON=python3 >/dev/null
cmake --build build-device -j "$(nproc)" "$@"
