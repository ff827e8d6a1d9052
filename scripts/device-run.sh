#!/usr/bin/env bash
# Everything one device call does, on the GPU machine (device time is scarce:
# steps in the order their results matter, each under a timeout, logs and a
# short table in $OUT):
#
#   OUT=/tmp/out bash scripts/device-run.sh [STEP ...]
#
# Steps (default: build gputests samplers decodeops gguf engine):
#   build      the CUDA build (scripts/device-build.sh, .devdeps carried)
#   hfref      HF transformers reference fixtures (make_reference.py) into
#              $OUT/fixtures and the tree, then the CPU oracle test on them
#   gputests   every GPU test (ctest -L gpu) but the speed test
#   samplers   bench_sampler_chain (64 rows x 128k vocab x 8k history)
#   decodeops  aph_bench_decode_ops (8B bf16 linears one by one; again under
#              each AB_ENV setting, e.g. AB_ENV="APH_GEMV_SPLIT=4")
#   gguf       aph_bench_gguf_matvec (GGUF matvec per type and shape)
#   attention  aph_bench_attention (gguf and attention: again under each
#              setting of AB_ENV, e.g. AB_ENV="APH_GGUF_TILE_GROUPS=0")
#   engine     aph_bench_engine: random 135M Q4_0, 8B bf16 (APH_PDL on/off)
#   smol       the random 135M Q4_0 decode512 alone (and under each AB_ENV)
#   priceab    the every-stage price of the sampler plugin as carried, under
#              each of PRICE_ENVS, and patched with each of PRICE_PATCHES
#              alone: interleaved runs
#   price      bench/samplers/price_chain.sh on the 8B Q4_K_M (bench/run.sh's cache)
#   q4km       the 8B Q4_K_M alone (bench/run.sh's cache): engine decode512,
#              ctx8k and batch64, then price_chain.sh's greedy / default
#              chain / every stage on it (issues 4, 5 and 7's Q4_K_M rows)
#   profile    a 4-layer model of the 8B shape in Q4_K_M: ncu kernel times of
#              decode steps at batch 1 and 64 (bench/engine/kernel_table.py);
#              PROFILE_MODEL=smol: the 30-layer SmolLM2-135M shape in Q4_0,
#              batch 1; PROFILE_MODEL=chain: the 4-layer model at batch 1
#              sampling with every stage (bench/samplers/chains.sh)
#              AB_ENV="VAR=value ...": the 135M and 8B Q4_K_M decode512 cases
#              again under each of those settings (e.g. APH_GGUF_CTA_QUANT=0)
#   stalls     on profile's 4-layer Q4_K_M model, every stage: ncu's
#              speed-of-light and warp-stall sections of the sampler kernels
#              named by STALL_KERNELS (a regex; default the dense ones), with
#              a 1 GiB KV cache: with the default 0.9 utilization, ncu backed
#              up the device memory (mostly KV cache) for its kernel replays
#              and profiled 3 kernels in 240 s (stop 18); 0.05 left no room
#              for a KV cache at all (stop 19); SOURCE_KERNELS="k1 k2": also
#              each one's SASS with executed counts and stall samples
#              (sass_K.csv), summarized by bench/engine/sass_table.py
#              (sass_K.txt: instructions, stall reasons, hot loops)
#   phases     APH_STEP_PHASES=1 on the 135M decode512: the engine thread's
#              time per step (schedule, forward, sample, output, loop)
#   realmodel  the real SmolLM2-135M-Instruct Q4_1 (models/, when present):
#              its GPU tests, greedy text on CUDA, decode512 tok/s
#   trace      kernel timelines through CUPTI (bench/engine/kernel_trace.cpp,
#              graphs included, nothing serialized): the 135M Q4_0 decode512
#              and the 8B Q4_K_M cases in TRACE_CASES (default decode512 ctx8k
#              batch64), TRACE_BF16=1 also the 8B bf16 decode512; each
#              summarized by bench/engine/trace_table.py into trace_LABEL.txt
#              (per kernel: busy and idle advance of the step's end)
#   engineab   each of ENGINE_PATCHES applied alone (v1, v2, ...) against the
#              tree as carried (v0): aph_bench_engine AB_CASES (default
#              decode512) on AB_MODELS
#              ("smol", "q4km", "real", "bf16" or several; default smol), the builds' runs
#              interleaved over AB_ROUNDS rounds (engine_ab.txt; a patch is
#              the reverse of the change under test, `git diff -R`, or an
#              experiment; only aph_bench_engine, which holds the core, and
#              the GGUF plugin are rebuilt for it)
#   envab      the build as carried under each setting of AB_ENVS (space
#              separated VAR=value, several joined by commas; e.g.
#              "APH_GGUF_PRELOAD=1 APH_GGUF_PRELOAD=0,APH_PDL=0"; AB_KV a
#              --kv-cache-dtype, e.g. fp16 as bench/run.sh's rows),
#              aph_bench_engine AB_CASES on AB_MODELS,
#              runs interleaved over AB_ROUNDS rounds (env_ab.txt, medians)
#   prepare    bench/run.sh's models only (8B bf16, Q4_K_M, Q8_0, 135M)
#   bench      bench/run.sh: the issue-5 table (models from `prepare`)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/aph-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
STEPS=${*:-build gputests samplers decodeops gguf engine}
t0=$SECONDS
summary=()
step() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*"; }
record() {  # name rc log
  if [ "$2" = 0 ]; then summary+=("PASS $1"); else summary+=("FAIL $1 (rc $2, $3)"); tail -25 "$OUT/$3"; fi
}
want() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
BIN=build-device/bin
export APH_PLUGIN_DIR=$PWD/build-device/plugins APH_BIN_DIR=$PWD/build-device/bin
CACHE=/tmp/aph-bench-models

if want hfref; then
  step "HF references in the background"
  (timeout 300 python3 tests/oracle/model/make_reference.py --out "$OUT/fixtures" > "$OUT/make_reference.log" 2>&1
   echo "exit $?" >> "$OUT/make_reference.log") &
  ref_pid=$!
fi
if want build; then
  step "build"
  # BUILD_TARGETS="a b": only those (a full build takes minutes of device time).
  timeout 420 bash scripts/device-build.sh ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0 > "$OUT/build.log" 2>&1
  record build $? build.log
fi
if want samplers; then
  timeout 120 $BIN/bench_sampler_chain > "$OUT/bench_samplers.txt" 2>&1
  record bench_sampler_chain $? bench_samplers.txt
  # SAMPLERS_AB="VAR=value ...": the bench again under each setting.
  for ab in ${SAMPLERS_AB:-}; do
    echo "==== with $ab" >> "$OUT/bench_samplers.txt"
    (export "$ab"; timeout 120 $BIN/bench_sampler_chain >> "$OUT/bench_samplers.txt" 2>&1)
    record "bench_sampler_chain $ab" $? bench_samplers.txt
  done
fi
# A bench binary as built, then again under each setting of the variable
# named ENVS_VAR if it is set (GGUF_AB_ENV, ATTENTION_AB_ENV, DECODEOPS_AB_ENV:
# one list per step keeps a call's runs within the device's limit), else of
# AB_ENV (space separated VAR=value), all into $OUT/OUTFILE.
bench_under_envs() {
  local bin=$1 out=$2 limit=$3 envs_var=$4
  local envs=${!envs_var-${AB_ENV:-}}
  timeout "$limit" "$BIN/$bin" > "$OUT/$out" 2>&1
  record "$bin" $? "$out"
  for ab in $envs; do
    echo "==== with $ab" >> "$OUT/$out"
    (export "$ab"; timeout "$limit" "$BIN/$bin" >> "$OUT/$out" 2>&1)
    record "$bin $ab" $? "$out"
  done
}
if want decodeops; then
  bench_under_envs aph_bench_decode_ops bench_decode_ops.txt 120 DECODEOPS_AB_ENV
fi
if want gguf; then
  bench_under_envs aph_bench_gguf_matvec bench_gguf_matvec.txt 120 GGUF_AB_ENV
fi
if want hfref; then
  step "waiting for the HF references"
  wait $ref_pid
  tail -3 "$OUT/make_reference.log"
  [ -d "$OUT/fixtures/hf" ] && cp -r "$OUT/fixtures/hf" tests/oracle/model/fixtures/
  (cd build-device && timeout 120 ctest -R oracle_model_cpu_test --output-on-failure) > "$OUT/oracle-cpu.log" 2>&1
  record "oracle_model_cpu_test (numpy + HF fixtures)" $? oracle-cpu.log
fi
if want gputests; then
  step "GPU tests"
  # model_speed_test times the GPU: it runs alone, after the others.
  # GPU_TESTS=regex: only those; GPU_TEST_JOBS: tests at once (the six long
  # attention tests, ~110 s each, are mostly their CPU references).
  (cd build-device && timeout 330 ctest -L gpu -E model_speed_test ${GPU_TESTS:+-R "$GPU_TESTS"} -j "${GPU_TEST_JOBS:-4}" --timeout 300 \
     --output-on-failure) \
    > "$OUT/ctest-gpu.log" 2>&1
  record "ctest -L gpu (but the speed test)" $? ctest-gpu.log
  grep -E "tests passed|\*\*\*|Failed|Passed" "$OUT/ctest-gpu.log" | tail -30
fi
if want attention; then
  bench_under_envs aph_bench_attention bench_attention.txt 90 ATTENTION_AB_ENV
fi
# The RESULT lines' bandwidth column needs the copy ceiling (measured once)
# and the bytes a step reads (bench/engine/read_bytes.py, from make_model.py's
# shape; "-" for a model of no such shape, which gets no column).
engine_case() {  # label model shape cases extra-args...
  local label=$1 model=$2 shape=$3 cases=$4
  shift 4
  local util=() rb=""
  if [ "$shape" != - ]; then
    [ -n "${COPY_GBPS:-}" ] ||
      COPY_GBPS=$(timeout 60 $BIN/aph_bench_engine --ceilings 2>> "$OUT/bench_engine.log" | awk '$2=="copy_gbps"{print $3}')
    rb=$(python3 bench/engine/read_bytes.py "$model" "$shape" 2>> "$OUT/bench_engine.log")
    [ -n "$COPY_GBPS" ] && [ -n "$rb" ] && util=(--copy-gbps "$COPY_GBPS" --weight-read-bytes "${rb%% *}")
  fi
  timeout 150 $BIN/aph_bench_engine --model "$model" --label "$label" --cases "$cases" \
    --plugins "$APH_PLUGIN_DIR" "${util[@]}" "$@" >> "$OUT/bench_engine.txt" 2>> "$OUT/bench_engine.log"
  record "engine $label" $? bench_engine.log
}
SMOL=/tmp/aph-models/smol-q4_0.gguf
# Since stop 31 its tied embedding (the LM head) is Q8_0, as llama-quant makes
# it (aphrodite-quantize's output rule), not Q4_0: 30 MB instead of 16 a step,
# so its tok/s are not comparable with earlier stops' smol figures.
smol_model() {  # the random SmolLM2-135M in Q4_0 at $SMOL, made once per machine
  local bf16=/tmp/aph-models/smol-bf16
  mkdir -p "$(dirname $SMOL)"
  [ -f $bf16/config.json ] ||
    python3 bench/engine/make_model.py --shape smollm2-135m --dtype bf16 --out $bf16 >> "$OUT/bench_engine.log" 2>&1
  [ -s $SMOL ] || $BIN/aphrodite-quantize --type Q4_0 --pre smollm $bf16 $SMOL >> "$OUT/bench_engine.log" 2>&1
}
smol_ab() {  # the 135M decode512 again under each AB_ENV setting
  for ab in ${AB_ENV:-}; do export "$ab"; engine_case "smol-q4_0-$ab" $SMOL smollm2-135m decode512; unset "${ab%%=*}"; done
}
if want smol; then
  step "engine: random 135M Q4_0 decode512"
  smol_model
  engine_case smol-q4_0 $SMOL smollm2-135m decode512
  smol_ab
fi
bf16_model() {  # the random 8B in bf16 safetensors, made once per machine
  [ -f "$CACHE/llama3-8b-bf16/config.json" ] ||
    timeout 300 python3 bench/engine/make_model.py --shape llama3-8b --dtype bf16 --out $CACHE/llama3-8b-bf16 \
      >> "$OUT/bf16_model.log" 2>&1
}
if want engine; then
  step "engine: random-weight models"
  smol_model
  engine_case smol-q4_0 $SMOL smollm2-135m decode512,batch64
  APH_PDL=0 engine_case smol-q4_0-nopdl $SMOL smollm2-135m decode512
  smol_ab
  bf16_model
  engine_case 8b-bf16 $CACHE/llama3-8b-bf16 llama3-8b decode512,ctx8k
  APH_PDL=0 engine_case 8b-bf16-nopdl $CACHE/llama3-8b-bf16 llama3-8b decode512
fi
if want phases; then
  # Where the engine thread's time goes at batch 1 (APH_STEP_PHASES=1,
  # core/engine/step_phases.hpp): the host work the device waits through.
  step "step phases (135M Q4_0 decode512)"
  smol_model
  APH_STEP_PHASES=1 engine_case smol-q4_0-phases $SMOL smollm2-135m decode512 --log-level info
  grep -h "step phases" "$OUT/bench_engine.log" | tail -3 | tee "$OUT/phases.txt"
fi
if want realmodel; then
  # The real default model (models/, assembled from carried parts by the
  # caller: it is more than one call carries): its GPU tests (CUDA against
  # the CPU linears, bf16 logits against the transformers fixture), greedy
  # text on CUDA, and its batch-1 decode speed.
  REAL=models/SmolLM2-135M-Instruct.Q4_1.gguf
  if [ -s $REAL ]; then
    step "real SmolLM2-135M-Instruct Q4_1"
    (cd build-device && timeout 200 ctest -R "oracle_model_gpu|gguf_cuda_model" --output-on-failure) \
      > "$OUT/real-model.log" 2>&1
    record "real Q4_1 file: GPU tests" $? real-model.log
    # Which fixtures ran (ctest's summary does not say a case skipped).
    build-device/bin/oracle_model_gpu_test --gtest_filter='*smollm2*' 2>&1 | grep -E "^\[ +(OK|SKIPPED|FAILED)" |
      tee -a "$OUT/real-model.log"
    timeout 60 $BIN/aphrodited generate --model $REAL --device cuda --chat --max-tokens 48 \
      --prompt "What is the capital of France?" > "$OUT/real-generate.txt" 2>&1
    record "real Q4_1 file: generate on CUDA" $? real-generate.txt
    cat "$OUT/real-generate.txt"
    engine_case real-q4_1 $REAL - decode512
  else
    summary+=("SKIP realmodel ($REAL absent)")
  fi
fi
Q4KM=$CACHE/llama3-8b-Q4_K_M.gguf
q4km_model() {  # the random 8B in Q4_K_M at $Q4KM, made once per machine
  [ -s "$Q4KM" ] && return
  bf16_model
  step "quantizing"
  timeout 400 $BIN/aphrodite-quantize --type Q4_K_M --pre llama-bpe $CACHE/llama3-8b-bf16 $CACHE/q4km.partial.gguf \
    >> "$OUT/q4km.log" 2>&1 && mv $CACHE/q4km.partial.gguf "$Q4KM"
  record "Q4_K_M model" $? q4km.log
}
if want q4km; then
  step "8B Q4_K_M"
  q4km_model
  if [ -s "$Q4KM" ]; then
    engine_case 8b-q4km "$Q4KM" llama3-8b decode512,ctx8k,batch64
    # AB_CASES: the cases run under each AB_ENV setting (default decode512).
    for ab in ${AB_ENV:-}; do export "$ab"; engine_case "8b-q4km-$ab" "$Q4KM" llama3-8b ${AB_CASES:-decode512}; unset "${ab%%=*}"; done
    # Q4KM_TILES="16 32": batch64 again with those dequantization tile sizes.
    for mb in ${Q4KM_TILES:-}; do APH_GGUF_TILE_MB=$mb engine_case 8b-q4km-tile$mb "$Q4KM" llama3-8b batch64; done
    # Q4KM_PRICE=0 leaves the sampler-chain price out (about 2 minutes).
    if [ "${Q4KM_PRICE:-1}" = 1 ]; then
      timeout 200 bash bench/samplers/price_chain.sh "$Q4KM" > "$OUT/price_chain.txt" 2>&1
      record price_chain $? price_chain.txt
    fi
  fi
fi
if want priceab; then
  # The every-stage price of the sampler plugin as carried (v0), under each
  # of PRICE_ENVS ("VAR=value ..."), and with each of PRICE_PATCHES applied
  # alone (v1, v2, ...), runs interleaved over AB_ROUNDS rounds
  # (bench/samplers/price_ab.sh).
  step "sampler price A/B (8B Q4_K_M)"
  q4km_model
  rm -rf /tmp/aph-ab && mkdir -p /tmp/aph-ab && cp -r build-device/plugins /tmp/aph-ab/v0
  builds=(/tmp/aph-ab/v0)
  for e in ${PRICE_ENVS:-}; do builds+=("/tmp/aph-ab/v0@$e"); done
  n=0
  for p in ${PRICE_PATCHES:-}; do
    v=/tmp/aph-ab/v$((++n))
    if patch -p1 --forward < "$p" >> "$OUT/price_ab.log" 2>&1 &&
       bash scripts/device-build.sh --target aph_samplers >> "$OUT/price_ab.log" 2>&1; then
      cp -r build-device/plugins $v && builds+=($v)
      echo "$v: $p" >> "$OUT/price_ab.txt"
    else
      record "price A/B: $p" 1 price_ab.log
    fi
    patch -p1 -R < "$p" >> "$OUT/price_ab.log" 2>&1
  done
  bash scripts/device-build.sh --target aph_samplers >> "$OUT/price_ab.log" 2>&1  # the tree as carried again
  AB_LOG=$OUT/price_ab.log timeout 500 bash bench/samplers/price_ab.sh "$Q4KM" "${AB_ROUNDS:-3}" "${builds[@]}" \
    >> "$OUT/price_ab.txt" 2>&1
  record "price A/B" $? price_ab.txt
fi
P=/tmp/aph-profile
four_layer_q4km() {  # $P/q4km.gguf: a 4-layer model of the 8B shape in Q4_K_M
  mkdir -p $P
  [ -f $P/bf16/config.json ] ||
    python3 bench/engine/make_model.py --shape llama3-8b --layers 4 --dtype bf16 --out $P/bf16 >> "$OUT/profile.log" 2>&1
  [ -s $P/q4km.gguf ] ||
    $BIN/aphrodite-quantize --type Q4_K_M --pre llama-bpe $P/bf16 $P/q4km.gguf >> "$OUT/profile.log" 2>&1
}
if want profile; then
  mkdir -p $P
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ "${PROFILE_MODEL:-8b}" = smol ]; then
    # PROFILE_MODEL=smol: the random SmolLM2-135M in Q4_0 (30 layers), batch 1.
    step "kernel profile (SmolLM2-135M shape, Q4_0)"
    [ -f $P/smol-bf16/config.json ] ||
      python3 bench/engine/make_model.py --shape smollm2-135m --dtype bf16 --out $P/smol-bf16 > "$OUT/profile.log" 2>&1
    [ -s $P/smol-q4_0.gguf ] ||
      $BIN/aphrodite-quantize --type Q4_0 --pre smollm $P/smol-bf16 $P/smol-q4_0.gguf >> "$OUT/profile.log" 2>&1
    model=$P/smol-q4_0.gguf cases=decode512 skip_decode=20000 count=500 sampling=()
  else
    step "kernel profile (4-layer 8B shape, Q4_K_M)"
    four_layer_q4km
    model=$P/q4km.gguf cases="decode512 batch64" skip_decode=3000 count=300 sampling=()
    if [ "${PROFILE_MODEL:-8b}" = chain ]; then
      source bench/samplers/chains.sh
      cases=decode512 count=400 sampling=(--sampling "$EVERY_STAGE")
    fi
  fi
  engine_case profiled "$model" - "${cases// /,}"
  for c in $cases; do
    # Launches past start-up and prefill (64 prompts of 256 are a long
    # prefill); ncu serializes them (no overlap).
    skip=$skip_decode
    [ $c = batch64 ] && skip=7000
    timeout 150 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
      --launch-skip $skip --launch-count $count \
      $BIN/aph_bench_engine --model "$model" --label prof --cases $c --plugins "$APH_PLUGIN_DIR" "${sampling[@]}" \
      > "$OUT/ncu_$c.csv" 2>> "$OUT/profile.log"
    python3 bench/engine/kernel_table.py "$OUT/ncu_$c.csv" --tail $((count / 2)) > "$OUT/kernels_$c.txt" 2>&1
    record "ncu $c" $? "kernels_$c.txt"
    rm -f "$OUT/ncu_$c.csv"  # large; the table has what matters
  done
fi
if want stalls; then
  # STALL_MODEL=smol: the random 135M Q4_0 at batch 1, greedy (kernels
  # matvec_kernel|decode_kernel by default) instead of the 4-layer Q4_K_M
  # sampling with every stage.
  if [ "${STALL_MODEL:-chain}" = smol ]; then
    step "ncu stall reasons (135M Q4_0, greedy)"
    smol_model
    stall_model=$SMOL stall_sampling=() stall_default="matvec_kernel|decode_kernel"
  else
    step "ncu stall reasons of sampler kernels (every-stage chain)"
    four_layer_q4km
    source bench/samplers/chains.sh
    stall_model=/tmp/aph-profile/q4km.gguf stall_sampling=(--sampling "$EVERY_STAGE")
    stall_default="temperature_kernel|threshold_kernel|top_k_kernel"
  fi
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ "${STALL_KERNELS:-}" = - ] ||  # "-": only the SOURCE_KERNELS views
  timeout 240 $NCU --clock-control none --kernel-name "regex:${STALL_KERNELS:-$stall_default}" \
    --launch-skip 60 --launch-count 14 --section SpeedOfLight --section WarpStateStats --section LaunchStats \
    --section SchedulerStats --section Occupancy --section SourceCounters \
    $BIN/aph_bench_engine --model $stall_model --label stalls --cases decode512 \
    --kv-cache-memory $((1 << 30)) --plugins "$APH_PLUGIN_DIR" "${stall_sampling[@]}" \
    > "$OUT/stalls.txt" 2> "$OUT/stalls.log"
  [ "${STALL_KERNELS:-}" = - ] || record "ncu stalls" $? stalls.log
  # SOURCE_KERNELS (regexes over demangled names, template arguments
  # included; none by default): each one's first launch after STALL_SKIP of
  # them (K=N in the list: N for that kernel), SASS line by line (executed
  # instructions, stall samples), caches left warm as in a decode step
  for ks in ${SOURCE_KERNELS:-}; do
    k=${ks%%=*} skip=${STALL_SKIP:-8}
    [ "$k" != "$ks" ] && skip=${ks#*=}
    rm -f /tmp/aph-src.ncu-rep
    timeout 120 $NCU --clock-control none --cache-control none --kernel-name-base demangled \
      --kernel-name "regex:$k" --launch-skip $skip --launch-count 1 \
      --section SourceCounters --section WarpStateStats --import-source no -o /tmp/aph-src \
      $BIN/aph_bench_engine --model $stall_model --label stalls --cases decode512 \
      --kv-cache-memory $((1 << 30)) --plugins "$APH_PLUGIN_DIR" "${stall_sampling[@]}" >> "$OUT/stalls.log" 2>&1
    name=${k%%<*}
    name=${name//[^a-z_]/}
    $NCU -i /tmp/aph-src.ncu-rep --page source --csv --print-source sass > "$OUT/sass_$name.csv" 2>> "$OUT/stalls.log"
    record "ncu source $k" $? stalls.log
    python3 bench/engine/sass_table.py "$OUT/sass_$name.csv" > "$OUT/sass_$name.txt" 2>&1
  done
fi
trace_case() {  # label model case: one engine run under the CUPTI tracer
  local csv=/tmp/aph-trace-$1.csv
  CUDA_INJECTION64_PATH=$PWD/build-device/bench/engine/libaph_kernel_trace.so APH_KERNEL_TRACE=$csv \
    timeout 200 $BIN/aph_bench_engine --model "$2" --label "trace-$1" --cases "$3" --plugins "$APH_PLUGIN_DIR" \
    >> "$OUT/bench_engine.txt" 2>> "$OUT/trace.log"
  record "traced run $1" $? trace.log
  python3 bench/engine/trace_table.py $csv ${TRACE_LIST:+--list $TRACE_LIST} > "$OUT/trace_$1.txt" 2>&1
  record "trace table $1" $? "trace_$1.txt"
  rm -f $csv
}
if want trace; then
  step "kernel timelines"
  smol_model
  trace_case smol $SMOL decode512
  if [ -n "${TRACE_CASES-decode512 ctx8k batch64}" ]; then
    q4km_model
    for c in ${TRACE_CASES-decode512 ctx8k batch64}; do trace_case "q4km-$c" "$Q4KM" $c; done
  fi
  [ "${TRACE_BF16:-0}" = 1 ] && trace_case bf16-decode512 "$CACHE/llama3-8b-bf16" decode512
fi
ab_model() {  # the A/B steps' model names
  case $1 in
    q4km) echo "$Q4KM" ;;
    real) echo models/SmolLM2-135M-Instruct.Q4_1.gguf ;;  # the realmodel step's file
    bf16) echo "$CACHE/llama3-8b-bf16" ;;
    *) echo "$SMOL" ;;
  esac
}
ab_medians() {  # appends each label's median and runs to its RESULT file
  python3 - "$1" <<'PY' >> "$1"
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split("\t")
    if p[0] == "RESULT":
        runs[p[1] + " " + p[2]].append(float(p[3]))
for label, v in sorted(runs.items()):
    print(f"{label:40s} median {statistics.median(v):8.1f} tok/s  runs " + " ".join(f"{x:.1f}" for x in v))
PY
}
if want engineab; then
  step "engine A/B"
  ab_models=${AB_MODELS:-smol}
  smol_model
  [[ " $ab_models " == *" q4km "* ]] && q4km_model
  [[ " $ab_models " == *" bf16 "* ]] && bf16_model
  E=/tmp/aph-eab
  rm -rf $E && mkdir -p $E/v0 && cp -r build-device/plugins $BIN/aph_bench_engine $E/v0/
  variants=(v0)
  n=0
  for p in ${ENGINE_PATCHES:-}; do
    v=v$((++n))
    if patch -p1 --forward < "$p" >> "$OUT/engine_ab.log" 2>&1 &&
       bash scripts/device-build.sh --target aph_bench_engine aph_quant_gguf >> "$OUT/engine_ab.log" 2>&1; then
      mkdir -p $E/$v && cp -r build-device/plugins $BIN/aph_bench_engine $E/$v/ && variants+=($v)
      echo "$v: $p" >> "$OUT/engine_ab.txt"
    else
      record "engine A/B: $p" 1 engine_ab.log
    fi
    patch -p1 -R < "$p" >> "$OUT/engine_ab.log" 2>&1
  done
  # The tree as carried again, for the steps after this one.
  [ -n "${ENGINE_PATCHES:-}" ] &&
    bash scripts/device-build.sh --target aph_bench_engine aph_quant_gguf >> "$OUT/engine_ab.log" 2>&1
  for r in $(seq "${AB_ROUNDS:-3}"); do
    for v in "${variants[@]}"; do
      for mname in $ab_models; do
        timeout 150 $E/$v/aph_bench_engine --model "$(ab_model $mname)" --label "$v-$mname" --cases "${AB_CASES:-decode512}" \
          --plugins $E/$v/plugins 2>> "$OUT/engine_ab.log" | grep RESULT >> "$OUT/engine_ab.txt"
      done
    done
  done
  ab_medians "$OUT/engine_ab.txt"
  record "engine A/B" 0 engine_ab.txt
fi
if want envab; then
  step "env A/B"
  smol_model
  [[ " ${AB_MODELS:-smol} " == *" q4km "* ]] && q4km_model
  [[ " ${AB_MODELS:-smol} " == *" bf16 "* ]] && bf16_model
  for r in $(seq "${AB_ROUNDS:-3}"); do
    for setting in ${AB_ENVS:?envab needs AB_ENVS}; do
      for mname in ${AB_MODELS:-smol}; do
        (IFS=, read -ra vars <<< "$setting"  # A=1,B=2: both at once
         export "${vars[@]}"
         timeout 150 $BIN/aph_bench_engine --model "$(ab_model $mname)" --label "$setting-$mname" \
           --cases "${AB_CASES:-decode512}" --plugins "$APH_PLUGIN_DIR" ${AB_KV:+--kv-cache-dtype "$AB_KV"} \
           2>> "$OUT/env_ab.log" | grep RESULT >> "$OUT/env_ab.txt")
      done
    done
  done
  ab_medians "$OUT/env_ab.txt"
  record "env A/B" 0 env_ab.txt
fi
if want prepare; then
  step "bench models"
  timeout 500 bash bench/run.sh "$CACHE" prepare > "$OUT/prepare.log" 2>&1
  record "bench/run.sh prepare" $? prepare.log
fi
if want price; then
  # PRICE_MODEL: the 8B Q4_K_M from `prepare` unless set (e.g. the bf16 model).
  model=${PRICE_MODEL:-$CACHE/llama3-8b-Q4_K_M.gguf}
  step "sampler chain price on $model"
  timeout 200 bash bench/samplers/price_chain.sh "$model" > "$OUT/price_chain.txt" 2>&1
  record price_chain $? price_chain.txt
fi
if want bench; then
  step "bench/run.sh"
  OUT=$OUT timeout 560 bash bench/run.sh "$CACHE" > "$OUT/bench_run.txt" 2>&1
  record "bench/run.sh" $? bench_run.txt
fi

step "done"
for f in phases price_ab engine_ab bench_attention bench_decode_ops bench_samplers bench_gguf_matvec bench_engine price_chain bench_run kernels_decode512 kernels_batch64; do
  [ -s "$OUT/$f.txt" ] && { echo "==== $f"; head -40 "$OUT/$f.txt"; }
done
for f in "$OUT"/trace_*.txt; do [ -s "$f" ] && { echo "==== $f"; head -${TRACE_HEAD:-24} "$f"; }; done
echo "==== summary"; printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
