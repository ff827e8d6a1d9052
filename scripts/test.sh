#!/usr/bin/env bash
# Every test a machine without a GPU can run: the release build's unit,
# oracle and end-to-end tests; the same unit tests under ASan+UBSan; and each
# fuzzer for a short fixed time.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}

bash scripts/install-deps.sh
bash scripts/fetch-default-model.sh

echo "== release build (CUDA compiled when nvcc exists)"
bash scripts/build.sh
(cd build && ctest --output-on-failure -LE gpu -j "$JOBS" --timeout 1200)

echo "== sanitizer build (ASan + UBSan, CPU only)"
BUILD_DIR=build-asan BUILD_TYPE=Debug bash scripts/build.sh -DAPH_SANITIZE=ON -DAPH_ENABLE_CUDA=OFF -DAPH_WERROR=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -L unit -LE "gpu|slow" -j "$JOBS" --timeout 1200)

echo "== fuzzers (${FUZZ_SECONDS}s each)"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPH_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DAPH_ENABLE_CUDA=OFF -DAPH_WERROR=OFF >/dev/null
cmake --build build-fuzz -j "$JOBS" --target aph_fuzzers
shopt -s nullglob
for fuzzer in build-fuzz/fuzz/*; do
  name=$(basename "$fuzzer")
  corpus=tests/fuzz/corpus/$name
  mkdir -p fuzz-corpus-tmp/$name
  echo "-- $name"
  if ! APH_PLUGIN_DIR=build-fuzz/plugins "$fuzzer" -max_total_time="$FUZZ_SECONDS" -max_len=65536 \
      -timeout=10 -rss_limit_mb=4096 fuzz-corpus-tmp/$name $( [ -d "$corpus" ] && echo "$corpus" ) \
      > "fuzz-corpus-tmp/$name.log" 2>&1; then
    tail -60 "fuzz-corpus-tmp/$name.log"
    echo "fuzzer $name found a crash (input saved by libFuzzer in the working directory)"
    exit 1
  fi
  tail -1 "fuzz-corpus-tmp/$name.log"
done
echo "== all tests passed"
