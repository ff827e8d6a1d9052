#!/usr/bin/env bash
# Runs on the GPU machine over a pack made by scripts/device-pack.sh: every GPU
# test, then the benchmarks; prints a short table last. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/aph-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.devpack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export APH_SOURCE_DIR=$PWD APH_BUILD_DIR=$PWD/.devpack APH_PLUGIN_DIR=$PWD/.devpack/plugins
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
summary=()
while read -r t; do
  [ -n "$t" ] || continue
  if timeout 300 ".devpack/bin/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1; then
    summary+=("PASS $t")
  else
    summary+=("FAIL $t (see $t.log)"); tail -30 "$OUT/$t.log"
  fi
done < .devpack/gpu-tests.txt
for script in ${APH_GPU_EXTRA:-}; do
  echo "== $script"; bash "$script" 2>&1 | tee "$OUT/$(basename "$script").log"
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
