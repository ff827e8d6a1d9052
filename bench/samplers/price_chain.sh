#!/usr/bin/env bash
# What the sampler chain costs a single stream, on the GPU machine: batch-1
# decode of a random-weight model (default: the Llama-3-8B shape, bf16) with
# greedy selection, with the default chain's samplers (DRY, penalties, XTC,
# min-p, temperature), and with every stage that runs beside the others
# (mirostat replaces selection, so it is left out). Issue 7's bound: <= 5 %
# slower than greedy.
#
#   bash bench/samplers/price_chain.sh [MODEL_DIR_OR_GGUF]
#
# PRICE_AB="VAR=value ...": every stage again under each setting (e.g.
# APH_SAMPLER_LIVE_LIST=0), against the same greedy baseline.
#
# Binaries from build-device/ (scripts/device-build.sh) unless APH_BIN_DIR and
# APH_PLUGIN_DIR say otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${APH_BIN_DIR:-build-device/bin}
PLUGINS=${APH_PLUGIN_DIR:-build-device/plugins}
MODEL=${1:-/tmp/aph-models/8b-bf16}
if [ ! -e "$MODEL/config.json" ] && [ ! -f "$MODEL" ]; then
  python3 bench/engine/make_model.py --shape llama3-8b --dtype bf16 --out "$MODEL" >&2
fi
source bench/samplers/chains.sh  # DEFAULT_CHAIN, EVERY_STAGE
run() {  # label sampling-json
  "$BIN/aph_bench_engine" --model "$MODEL" --label "$1" --cases decode512 --plugins "$PLUGINS" \
    --sampling "$2" | awk -F'\t' '$1=="RESULT"{print $4}' || echo 0
}
# The baseline runs first and last, and counts as their mean: the first run of
# a series came out 2-3 % slower than later ones on the H200 (clocks, caches),
# which would flatter the chains.
greedy1=$(run greedy '{"temperature": 0}')
chain=$(run default-chain "$DEFAULT_CHAIN")
every=$(run every-stage "$EVERY_STAGE")
greedy2=$(run greedy '{"temperature": 0}')
awk -v g1="$greedy1" -v g2="$greedy2" -v c="$chain" -v e="$every" 'BEGIN {
  g = (g1 + g2) / 2
  printf "batch-1 decode, tok/s: greedy %.1f (runs: %.1f first, %.1f last) | default chain %.1f (%+.1f%%) | every stage %.1f (%+.1f%%)  (bound: >= -5%%)\n",
    g, g1, g2, c, 100 * (c / g - 1), e, 100 * (e / g - 1) }'
for ab in ${PRICE_AB:-}; do
  v=$(export "$ab"; run "every-stage-$ab" "$EVERY_STAGE")
  awk -v g1="$greedy1" -v g2="$greedy2" -v e="$v" -v ab="$ab" 'BEGIN {
    g = (g1 + g2) / 2
    printf "every stage with %s: %.1f tok/s (%+.1f%%)\n", ab, e, 100 * (e / g - 1) }'
done
