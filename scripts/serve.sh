#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds, fetches the default model and runs
# the server on 127.0.0.1:2242. Extra arguments go to aphrodited.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/fetch-default-model.sh
exec ./build/bin/aphrodited --config aphrodite.toml "$@"
