#!/usr/bin/env bash
# Here: splits the default model into .modelparts/a and .modelparts/b (both
# git-ignored) so the GPU machine can get it in two calls: a call carries at
# most 64 MiB with the tree, and the file is 98 MB. The first call carries
# .modelparts/a (with .devdeps) and copies it to /tmp/q41/a; the second,
# made while the machine is still warm, carries .modelparts/b and joins them:
#   cat /tmp/q41/a .modelparts/b > models/SmolLM2-135M-Instruct.Q4_1.gguf
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -s "$MODEL" ] || bash scripts/fetch-default-model.sh
FIRST=40000000  # with .devdeps (16 MB) and the tree (6 MB), under 64 MiB
mkdir -p .modelparts
head -c "$FIRST" "$MODEL" > .modelparts/a
tail -c +"$((FIRST + 1))" "$MODEL" > .modelparts/b
cat .modelparts/a .modelparts/b | cmp - "$MODEL"
ls -l .modelparts
