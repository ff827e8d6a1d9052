#!/usr/bin/env bash
# Everything one device call does, on the GPU machine (device time is scarce:
# one call, steps in the order their results matter, each under a timeout):
#
#   1. HF transformers reference fixtures (tests/oracle/model/make_reference.py)
#      in the background while the tree builds;
#   2. the CUDA build (scripts/device-build.sh, .devdeps carried);
#   3. every GPU test, with the new fixtures in place, and the CPU oracle test
#      against them;
#   4. benches: decode ops op by op, the sampler chain, attention, and the
#      engine on random-weight 135M and 8B models (bf16, batch 1);
#   5. a short table last. Logs and fixtures go to $OUT.
#
#   OUT=/tmp/out bash scripts/device-run.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/aph-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$SECONDS
summary=()
step() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*"; }
record() {  # name rc log
  if [ "$2" = 0 ]; then summary+=("PASS $1"); else summary+=("FAIL $1 (rc $2, $3)"); tail -25 "$OUT/$3"; fi
}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"

step "HF references in the background"
(timeout 300 python3 tests/oracle/model/make_reference.py --out "$OUT/fixtures" > "$OUT/make_reference.log" 2>&1
 echo "exit $?" >> "$OUT/make_reference.log") &
ref_pid=$!

step "build"
timeout 420 bash scripts/device-build.sh -- -k 0 > "$OUT/build.log" 2>&1
record build $? build.log
BIN=build-device/bin
export APH_PLUGIN_DIR=$PWD/build-device/plugins

step "quick benches"
timeout 120 $BIN/aph_bench_decode_ops > "$OUT/bench_decode_ops.txt" 2>&1
record aph_bench_decode_ops $? bench_decode_ops.txt
timeout 120 $BIN/bench_sampler_chain > "$OUT/bench_samplers.txt" 2>&1
record bench_sampler_chain $? bench_samplers.txt

step "waiting for the HF references"
wait $ref_pid
tail -3 "$OUT/make_reference.log"
if [ -d "$OUT/fixtures/hf" ]; then
  cp -r "$OUT/fixtures/hf" tests/oracle/model/fixtures/
  summary+=("HF fixtures: $(ls "$OUT/fixtures/hf" | wc -l) models")
fi

step "GPU tests"
# model_speed_test times the GPU: it runs alone, after the others.
(cd build-device && timeout 330 ctest -L gpu -E model_speed_test -j 4 --timeout 300 --output-on-failure) \
  > "$OUT/ctest-gpu.log" 2>&1
record "ctest -L gpu (but the speed test)" $? ctest-gpu.log
grep -E "tests passed|\*\*\*|Failed|Passed" "$OUT/ctest-gpu.log" | tail -20
(cd build-device && timeout 120 ctest -R oracle_model_cpu_test --output-on-failure) > "$OUT/oracle-cpu.log" 2>&1
record "oracle_model_cpu_test (numpy + HF fixtures)" $? oracle-cpu.log

step "benches"
(cd build-device && timeout 200 ctest -R model_speed_test --output-on-failure) > "$OUT/model_speed.log" 2>&1
record model_speed_test $? model_speed.log
timeout 90 $BIN/aph_bench_attention > "$OUT/bench_attention.txt" 2>&1
record aph_bench_attention $? bench_attention.txt

step "engine: random-weight models"
M=/tmp/aph-models
mkdir -p $M
engine_case() {  # label model cases extra-args...
  local label=$1 model=$2 cases=$3
  shift 3
  timeout 150 $BIN/aph_bench_engine --model "$model" --label "$label" --cases "$cases" \
    --plugins "$APH_PLUGIN_DIR" "$@" >> "$OUT/bench_engine.txt" 2>> "$OUT/bench_engine.log"
  record "engine $label" $? bench_engine.log
}
python3 bench/engine/make_model.py --shape smollm2-135m --dtype bf16 --out $M/smol-bf16 >> "$OUT/bench_engine.log" 2>&1
$BIN/aphrodite-quantize --type Q4_0 --pre smollm $M/smol-bf16 $M/smol-q4_0.gguf >> "$OUT/bench_engine.log" 2>&1
engine_case smol-q4_0 $M/smol-q4_0.gguf decode512,batch64
engine_case smol-q4_0-eager $M/smol-q4_0.gguf decode512 --enforce-eager 1
python3 bench/engine/make_model.py --shape llama3-8b --dtype bf16 --out $M/8b-bf16 >> "$OUT/bench_engine.log" 2>&1
engine_case 8b-bf16 $M/8b-bf16 decode512,ctx8k

step "done"
echo "==== decode ops"; cat "$OUT/bench_decode_ops.txt"
echo "==== samplers"; cat "$OUT/bench_samplers.txt"
echo "==== attention"; tail -12 "$OUT/bench_attention.txt"
echo "==== model_speed_test"; grep -iE "tok/s|OK|FAIL" "$OUT/model_speed.log" | head
echo "==== engine"; cat "$OUT/bench_engine.txt"
echo "==== summary"; printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
