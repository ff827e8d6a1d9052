#!/usr/bin/env bash
# bench/run.sh end to end on the CPU with tiny models (ctest bench_run_smoke,
# APH_BENCH_SMOKE=1 in its environment), from an empty cache: a full run, then
# one row again added to its results (BENCH_ONLY, BENCH_KEEP), then the table
# alone ("table"), which must hold the first run's rows once and the re-run
# row twice. The re-run must not remake a model only other rows read.
set -euo pipefail
cache=$1
rm -rf "$cache"
bash bench/run.sh "$cache"
q8="$cache/tiny-Q8_0.gguf"
[ -s "$q8" ] || { echo "run_smoke: the full run made no $q8"; exit 1; }
rm "$q8"
BENCH_ONLY='^135M-bf16$' BENCH_KEEP=1 bash bench/run.sh "$cache" > /dev/null
[ ! -e "$q8" ] || { echo "run_smoke: BENCH_ONLY=^135M-bf16$ remade the Q8_0 model"; exit 1; }
table=$(bash bench/run.sh "$cache" table)
echo "$table"
count() { grep -c "^$1 " <<< "$table" || true; }
[ "$(count '8B-bf16 decode512')" = 1 ] || { echo "run_smoke: the kept table lost or repeated 8B-bf16 decode512"; exit 1; }
[ "$(count '135M-bf16 decode512')" = 2 ] || { echo "run_smoke: BENCH_KEEP did not add the re-run row"; exit 1; }
[ "$(count '8B-Q4_K_M decode512')" = 1 ] || { echo "run_smoke: BENCH_ONLY ran a row it does not match"; exit 1; }
