#!/usr/bin/env bash
# Installs everything aphrodited needs on a fresh Debian 12 machine. Idempotent:
# apt skips what is present, the venv is reused, the model download is cached.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  clang libclang-rt-14-dev
  libboost1.81-dev libboost-json1.81-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libcurl4-openssl-dev
  libgtest-dev libgmock-dev libpcre2-dev libxxhash-dev
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python tools for the tests live in a venv: the python3 first on PATH may be a
# separate build that cannot see Debian's python3-* packages.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r scripts/requirements-test.txt
