#!/usr/bin/env bash
# The every-stage price (price_chain.sh) of several builds of the sampler
# plugin on ONE GPU machine, their runs interleaved:
#
#   bash bench/samplers/price_ab.sh MODEL ROUNDS BUILD [BUILD ...]
#
# BUILD: a plugin dir, or DIR@VAR=value to run it with that setting (e.g.
# APH_ROW_BLOCKS=8).
# Each round runs greedy (with the first dir) and every stage with each dir,
# the dirs in a rotated order, so a drift of the machine (clocks, a first
# slow run) falls on every build alike. Why: one run of each build, one
# after the other, put a change that made each stage faster alone at -8.0 %
# against -7.1 % without it, a gap the size of the runs' spread.
# The runs' stderr goes to $AB_LOG (default: dropped).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${APH_BIN_DIR:-build-device/bin}
MODEL=$1 ROUNDS=$2
shift 2
dirs=("$@")
source bench/samplers/chains.sh  # EVERY_STAGE
run() {  # build sampling-json
  local dir=${1%%@*} env=()
  [[ $1 == *@* ]] && env=("${1#*@}")
  env "${env[@]}" "$BIN/aph_bench_engine" --model "$MODEL" --label ab --cases decode512 --plugins "$dir" \
    --sampling "$2" 2>> "${AB_LOG:-/dev/null}" | awk -F'\t' '$1=="RESULT"{print $4}' || echo 0
}
results=()  # "dir-index tok/s", greedy as index -1
for ((r = 0; r < ROUNDS; ++r)); do
  results+=("-1 $(run "${dirs[0]}" '{"temperature": 0}')")
  for ((k = 0; k < ${#dirs[@]}; ++k)); do
    i=$(((k + r) % ${#dirs[@]}))
    results+=("$i $(run "${dirs[$i]}" "$EVERY_STAGE")")
  done
done
printf '%s\n' "${results[@]}" | awk -v names="${dirs[*]}" '
  { n[$1]++; s[$1] += $2; runs[$1] = runs[$1] sprintf(" %.1f", $2) }
  END {
    split(names, name, " ")
    g = s[-1] / n[-1]
    printf "greedy: %.1f tok/s (runs:%s)\n", g, runs[-1]
    for (i = 0; i < length(name); ++i)
      printf "every stage, %s: %.1f tok/s (%+.2f%%; runs:%s)  (bound: >= -5%%)\n",
        name[i + 1], s[i] / n[i], 100 * (s[i] / n[i] / g - 1), runs[i]
  }'
