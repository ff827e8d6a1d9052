#!/usr/bin/env bash
# One device call that fits the device's 600 s limit (what stop 41 ran):
# scripts/device-run.sh's STEPS (default "build prepare"), then bench/run.sh
# for as long as LIMIT seconds from the start allow (BENCH_ONLY / BENCH_KEEP
# pass through; NO_BENCH=1 skips it), then the table of the results so far.
# $OUT keeps at most eight files (the device's limit): the logs go into
# logs.tgz beside run.txt, table.txt, results.tsv, ctest-gpu.log and env_ab.txt.
#
#   OUT=/tmp/out STEPS="build gputests envab" AB_MODELS=q4km AB_ENVS="..." bash scripts/device-call.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/aph-out}
mkdir -p "$OUT"
LIMIT=${LIMIT:-585}
CACHE=/tmp/aph-bench-models
bash scripts/device-run.sh ${STEPS:-build prepare} > "$OUT/run.txt" 2>&1
echo "[${SECONDS}s] steps done" >> "$OUT/run.txt"
export APH_PLUGIN_DIR=$PWD/build-device/plugins APH_BIN_DIR=$PWD/build-device/bin
left=$((LIMIT - SECONDS))
if [ "$left" -gt 30 ] && [ "${NO_BENCH:-0}" != 1 ]; then
  OUT=$OUT timeout "$left" bash bench/run.sh "$CACHE" > "$OUT/bench_run.txt" 2>&1
  echo "[${SECONDS}s] bench rc $?" >> "$OUT/run.txt"
fi
bash bench/run.sh "$CACHE" table > "$OUT/table.txt" 2>&1
cp "$CACHE/results.tsv" "$OUT/" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz --exclude=table.txt --exclude=run.txt --exclude=results.tsv . 2>/dev/null)
(cd "$OUT" && find . -maxdepth 1 -type f ! -name logs.tgz ! -name table.txt ! -name run.txt ! -name results.tsv \
   ! -name ctest-gpu.log ! -name env_ab.txt -delete)
tail -40 "$OUT/run.txt"
cat "$OUT/table.txt"
