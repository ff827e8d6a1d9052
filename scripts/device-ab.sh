#!/usr/bin/env bash
# A code change measured against the code before it on ONE GPU machine, on
# the GPU machine:
#
#   bash scripts/device-ab.sh PATCH COMMAND [ARG ...]
#
# Builds the tree as carried (scripts/device-build.sh), runs COMMAND (label
# "A: as carried"), applies PATCH with `patch -p1` (e.g. the reverse of the
# change: `git diff HEAD HEAD~1 -- plugins/x > .ab/revert.patch`, carried in
# an ignored folder), rebuilds what it touched, and runs COMMAND again ("B:
# patched"). Why on one machine: two builds of the random 135M that differed
# only in how a weight staging buffer was counted measured 1480.8 and 1350.9
# tok/s (decode512) on the fresh machines of two calls of one session, more
# than most changes move it; the two halves of a same-machine A/B of the 8B
# sampler-chain price agreed on greedy within 0.4 %. COMMAND runs with
# APH_BIN_DIR and APH_PLUGIN_DIR set to the build.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || [ ! -f "$1" ]; then
  echo "usage: $0 PATCH COMMAND [ARG ...]  (PATCH: a file for patch -p1)" >&2
  exit 2
fi
patch_file=$1
shift
export APH_BIN_DIR=$PWD/build-device/bin APH_PLUGIN_DIR=$PWD/build-device/plugins
build() {
  if ! bash scripts/device-build.sh > /tmp/aph-ab-build.log 2>&1; then
    tail -30 /tmp/aph-ab-build.log
    echo "device-ab: the build failed ($1)" >&2
    exit 1
  fi
}
build "as carried"
echo "==== A: as carried"
"$@"
a=$?
if ! patch -p1 --forward < "$patch_file"; then
  echo "device-ab: $patch_file does not apply" >&2
  exit 1
fi
build "patched"
echo "==== B: patched with $patch_file"
"$@"
b=$?
echo "==== device-ab: A exit $a, B exit $b"
[ $a = 0 ] && [ $b = 0 ]
