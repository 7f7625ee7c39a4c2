#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .devbuild/ (git-ignored; pass it in
# the device tool's `carry`): the nnrepl binary and test programs of a build, and the
# shared libraries they load that the GPU machine lacks (it has no Debian packages).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.devbuild
rm -rf "$out" && mkdir -p "$out/lib" "$out/tests"
cp "$root/$build/nnrepl" "$out/"
cp "$root/$build"/tests/test_* "$out/tests/" 2>/dev/null || true
for bin in "$out/nnrepl" "$out"/tests/*; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' | grep -vE 'libcu|libnccl|libnv' \
  | while read -r lib; do cp -L "$lib" "$out/lib/"; done
du -sh "$out"
