#!/usr/bin/env bash
# The serving benchmark on the GPU machine, one command:
#
#   bash bench/run.sh [MODEL_CACHE_DIR] [prepare|table]   (default /tmp/aph-bench-models)
#
# "prepare" only generates and quantizes the models (the slow part of a first
# run, so a device call with a time limit can do it alone); a second run
# reuses the cache. "table" only prints the table of the results so far (a run
# cut off by a device call's limit leaves them in the cache). BENCH_ONLY=regex
# runs only the rows whose label matches; BENCH_KEEP=1 adds to the results
# so far instead of starting over: a table can be finished over two calls.
#
# Generates random-weight models once into the cache (Llama-3-8B shape bf16
# safetensors; GGUF Q4_K_M and Q8_0 from it through aphrodite-quantize; the
# SmolLM2-135M shape), measures the card's copy bandwidth and bf16 GEMM rate,
# runs aph_bench_engine on each model and prints one table: case, tokens/s,
# fraction of the measured ceiling, target (issue 5; issue 4 item 8 in
# brackets). Binaries come from .devpack/ (scripts/device-pack.sh) or build/.
set -uo pipefail
cd "$(dirname "$0")/.."
# APH_BENCH_SMOKE=1: the same pipeline with tiny models on the CPU, to check
# the script itself on a machine without a GPU (the figures mean nothing).
SMOKE=${APH_BENCH_SMOKE:-0}
BIG=llama3-8b SMALL=smollm2-135m DEVICE=auto MAXLEN=8192 KV16=fp16 KV8=fp8
[ "$SMOKE" = 1 ] && BIG=tiny SMALL=tiny DEVICE=cpu MAXLEN=1024 KV16=auto KV8=auto
CACHE=${1:-${APH_BENCH_CACHE:-/tmp/aph-bench-models}}
mkdir -p "$CACHE"
LOG=${OUT:-$CACHE}/bench-engine.log
: > "$LOG"

if [ -x .devpack/bin/aph_bench_engine ]; then
  BIN=.devpack/bin PLUGINS=.devpack/plugins
  export LD_LIBRARY_PATH="$PWD/.devpack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
else
  BIN=${APH_BIN_DIR:-build/bin} PLUGINS=${APH_PLUGIN_DIR:-build/plugins}
fi
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
BENCH="$BIN/aph_bench_engine"
[ -x "$BENCH" ] || { echo "bench/run.sh: $BENCH is missing (build aph_bench_engine first)" >&2; exit 1; }

stamp() { date +%H:%M:%S; }
RESULTS=$CACHE/results.tsv
[ "${BENCH_KEEP:-0}" = 1 ] || [ "${2:-}" = table ] || : > "$RESULTS"
touch "$RESULTS"
note() { printf 'NOTE\t%s\n' "$*" >> "$RESULTS"; echo "[$(stamp)] $*" >&2; }

# ---- models (cached: config.json / the .gguf is written last) ----
gen() {  # shape dtype dir
  [ -f "$3/config.json" ] && return 0
  echo "[$(stamp)] generating $1 $2 -> $3" >&2
  $PY bench/engine/make_model.py --shape "$1" --dtype "$2" --out "$3" >> "$LOG" 2>&1
}
quantize() {  # src_dir type out.gguf pre-tokenizer
  [ -s "$3" ] && return 0
  local q="$BIN/aphrodite-quantize"
  if [ ! -x "$q" ]; then note "$(basename "$3"): $q missing, GGUF rows skipped"; return 1; fi
  echo "[$(stamp)] quantizing $1 -> $3 ($2)" >&2
  local partial="${3%.gguf}.partial.gguf"
  # --pre: the names llama.cpp gives these models' pre-tokenizers.
  if ! "$q" --type "$2" --pre "$4" "$1" "$partial" >> "$LOG" 2>&1; then
    note "$(basename "$3"): aphrodite-quantize failed (see $LOG)"; rm -f "$partial"; return 1
  fi
  mv "$partial" "$3"
}
if [ "${2:-}" != table ]; then  # everything but the table
# A row BENCH_ONLY leaves out needs no model: a short device call spends
# its minutes on the rows it measures, not on making models. wanted: any of
# the labels given is to run.
wanted() {
  [ -z "${BENCH_ONLY:-}" ] && return 0
  local label
  for label; do [[ "$label" =~ $BENCH_ONLY ]] && return 0; done
  return 1
}
wanted 8B-bf16 8B-bf16-fp8kv 8B-Q4_K_M 8B-Q8_0 && gen $BIG bf16 "$CACHE/$BIG-bf16"
gen $SMALL bf16 "$CACHE/$SMALL-bf16"
HAVE_Q4KM=0 HAVE_Q8=0
wanted 8B-Q4_K_M && quantize "$CACHE/$BIG-bf16" Q4_K_M "$CACHE/$BIG-Q4_K_M.gguf" llama-bpe && HAVE_Q4KM=1
wanted 8B-Q8_0 && quantize "$CACHE/$BIG-bf16" Q8_0 "$CACHE/$BIG-Q8_0.gguf" llama-bpe && HAVE_Q8=1
SMOL_Q41=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ "${2:-}" = prepare ]; then
  [ -f "$SMOL_Q41" ] || quantize "$CACHE/$SMALL-bf16" Q4_1 "$CACHE/$SMALL-Q4_1.gguf" smollm
  echo "[$(stamp)] models ready in $CACHE" >&2
  exit 0
fi

# ---- ceilings ----
if [ "$SMOKE" = 1 ]; then
  # The ceilings are a GPU measurement; the smoke run's fractions mean
  # nothing, so any positive numbers do (a CUDA build without a GPU, as in
  # CI, cannot measure them).
  COPY=1 TFLOPS=1
else
  "$BENCH" --ceilings > "$CACHE/ceilings.txt" 2>> "$LOG" || { echo "ceiling measurement failed" >&2; exit 1; }
  COPY=$(awk '$2=="copy_gbps"{print $3}' "$CACHE/ceilings.txt")
  TFLOPS=$(awk '$2=="bf16_tflops"{print $3}' "$CACHE/ceilings.txt")
fi
note "measured ceilings: copy ${COPY} GB/s (read+write), bf16 GEMM ${TFLOPS} TFLOP/s"

# Bytes one decode step reads and the parameters in matmuls
# (bench/engine/read_bytes.py).
read_bytes() {  # file_or_dir shape
  $PY bench/engine/read_bytes.py "$1" "$2"
}

run_bench() {  # label model shape kv cases timeout
  wanted "$1" || return 0
  local rb
  rb=$(read_bytes "$2" "$3") || return
  set -- "$@" $rb
  echo "[$(stamp)] $1: $5" >&2
  if ! timeout "$6" "$BENCH" --model "$2" --label "$1" --kv-cache-dtype "$4" --cases "$5" \
      --plugins "$PLUGINS" --device "$DEVICE" --max-model-len "$MAXLEN" --copy-gbps "$COPY" --bf16-tflops "$TFLOPS" \
      --weight-read-bytes "$7" --matmul-params "$8" >> "$RESULTS" 2>> "$LOG"; then
    note "$1 ($5) failed or timed out; see $LOG"
    tail -5 "$LOG" >&2
  fi
}

run_bench 8B-bf16 "$CACHE/$BIG-bf16" $BIG $KV16 decode512,prefill512,ctx8k,batch8,batch32,batch64,batch128 200
run_bench 8B-bf16-fp8kv "$CACHE/$BIG-bf16" $BIG $KV8 ctx8k 90
[ $HAVE_Q4KM = 1 ] && run_bench 8B-Q4_K_M "$CACHE/$BIG-Q4_K_M.gguf" $BIG $KV16 decode512,ctx8k,batch64 120
[ $HAVE_Q8 = 1 ] && run_bench 8B-Q8_0 "$CACHE/$BIG-Q8_0.gguf" $BIG $KV16 decode512 80
if [ -f "$SMOL_Q41" ] && [ "$SMOKE" != 1 ]; then
  run_bench 135M-Q4_1 "$SMOL_Q41" smollm2-135m fp16 decode512,batch64 60
elif quantize "$CACHE/$SMALL-bf16" Q4_1 "$CACHE/$SMALL-Q4_1.gguf" smollm; then
  # The real Q4_1 file is not on this machine (it is not in git): random
  # weights of its shape in its types (layers Q4_1, the tied embedding Q8_0).
  note "$SMOL_Q41 absent: 135M row uses random weights in Q4_1 (the real file's types)"
  run_bench 135M-Q4_1-random "$CACHE/$SMALL-Q4_1.gguf" $SMALL $KV16 decode512,batch64 60
fi
run_bench 135M-bf16 "$CACHE/$SMALL-bf16" $SMALL $KV16 decode512 60

fi

# ---- one table ----
$PY - "$RESULTS" <<'PYEOF'
import sys
targets = {
    ("8B-bf16", "decode512"): "≥240 [≥200]",
    ("8B-bf16", "prefill512"): "≥30000",
    ("8B-bf16", "batch128"): "≥12000",
    ("8B-Q4_K_M", "decode512"): "≥600 [≥400]",
    ("8B-Q4_K_M", "ctx8k"): "≥90% of decode512",
    ("8B-Q4_K_M", "batch64"): "≥8000",
    ("135M-Q4_1", "decode512"): "≥2500 [≥1500]",
    ("135M-Q4_1-random", "decode512"): "≥2500 [≥1500]",
    ("8B-bf16-fp8kv", "ctx8k"): "≤3% slower than fp16 KV",
}
rows, notes, got = [], [], {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "RESULT":
        got[(f[1], f[2])] = float(f[3])
        rows.append(f[1:])
    elif f[0] == "NOTE":
        notes.append(f[1])
def derived(label, case):
    if (label, case) == ("8B-Q4_K_M", "ctx8k") and ("8B-Q4_K_M", "decode512") in got:
        return f" ({100 * got[(label, case)] / got[('8B-Q4_K_M', 'decode512')]:.0f}% of short)"
    if (label, case) == ("8B-bf16-fp8kv", "ctx8k") and ("8B-bf16", "ctx8k") in got:
        return f" (fp8 KV runs at {100 * got[(label, case)] / got[('8B-bf16', 'ctx8k')]:.1f}% of fp16 KV)"
    return ""
print(f"{'case':<30} {'tokens/s':>10}  {'of ceiling':<20} target")
for label, case, tps, util in rows:
    t = targets.get((label, case), "")
    print(f"{label + ' ' + case:<30} {float(tps):>10.1f}  {util:<20} {t}{derived(label, case)}")
for n in notes:
    print("# " + n)
PYEOF
