#!/usr/bin/env bash
# Builds the CUDA tree here (nothing CUDA runs on this machine) and packs what
# the GPU machine needs into .devpack/: executables, plugins, GPU tests and the
# Debian shared libraries they link that the GPU image lacks. The GPU machine
# then runs scripts/gpu-check.sh against the pack (carry: .devpack).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-device}
BUILD_DIR=$BUILD_DIR BUILD_TYPE=Release bash scripts/build.sh -DAPH_WERROR=OFF "$@"

rm -rf .devpack
mkdir -p .devpack/bin .devpack/plugins .devpack/lib
cp "$BUILD_DIR"/bin/* .devpack/bin/ 2>/dev/null || true
cp "$BUILD_DIR"/plugins/*.so .devpack/plugins/ 2>/dev/null || true
# ctest's list of GPU tests, so the device runs exactly those.
(cd "$BUILD_DIR" && ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p') > .devpack/gpu-tests.txt
# Drop the CPU-only unit tests: CI runs them, and they make the pack large.
(cd "$BUILD_DIR" && ctest -N -LE gpu | sed -n 's/^ *Test *#[0-9]*: //p') > .devpack/cpu-tests.txt
while read -r t; do
  grep -qx "$t" .devpack/gpu-tests.txt || rm -f ".devpack/bin/$t"
done < .devpack/cpu-tests.txt
strip --strip-debug .devpack/bin/* .devpack/plugins/*.so 2>/dev/null || true
for f in .devpack/bin/* .devpack/plugins/*.so; do
  ldd "$f" 2>/dev/null | awk '/=>/ {print $3}' |
    grep -E 'spdlog|fmt|boost|pcre2|xxhash|gtest|gmock|curl|nghttp|ssh|psl|rtmp|idn|brotli|ldap|lber|sasl|gssapi|krb5|k5crypto|keyutils|unistring|ssl|crypto|zstd' || true
done | sort -u | while read -r lib; do cp -L "$lib" .devpack/lib/; done
du -sh .devpack
