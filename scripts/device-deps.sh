#!/usr/bin/env bash
# Here (Debian 12): downloads the dev packages the GPU machine lacks into
# .devdeps/ (git-ignored), to be carried to it for scripts/device-build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devdeps && cd .devdeps
apt-get download libboost1.81-dev libboost-json1.81-dev libboost-json1.81.0 \
  libboost-container1.81-dev libboost-container1.81.0 libboost-system1.81-dev libboost-system1.81.0 \
  libboost-filesystem1.81-dev libboost-filesystem1.81.0 libboost-atomic1.81-dev libboost-atomic1.81.0 \
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libtomlplusplus-dev libtomlplusplus3 libgtest-dev libgmock-dev \
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libxxhash-dev libxxhash0
