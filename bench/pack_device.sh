#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .devbuild/pack.tar.xz (git-ignored;
# pass .devbuild in the device tool's `carry`, 64 MiB at most, hence xz): the nnrepl
# binary and test programs of a build, and the shared libraries they load that the
# GPU machine lacks (it has no Debian packages). bench/device_run.sh unpacks it.
set -euo pipefail
shopt -s nullglob
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.devbuild
stage=$(mktemp -d)
mkdir -p "$stage/lib" "$stage/tests" "$stage/bench"
cp "$root/$build/nnrepl" "$stage/"
# the gloo backend's shim, loaded from beside nnrepl (engine/dist/gloo.c), for the CPU collectives
[ -f "$root/$build/libnnrepl_gloo.so" ] && cp "$root/$build/libnnrepl_gloo.so" "$stage/"
# PACK_TESTS="test_cuda_nn test_amp ...": only those test programs (the carry limit is 64 MiB)
set -f; patterns=(${PACK_TESTS:-test_*}); set +f # globs of the build's tests folder, not of this one
for t in "${patterns[@]}"; do
  for f in "$root/$build"/tests/$t; do cp "$f" "$stage/tests/"; done
done
cp "$root/$build"/bench/bench_cuda_* "$stage/bench/" 2>/dev/null || true
for bin in "$stage/nnrepl" "$stage"/libnnrepl_gloo*.so "$stage"/tests/* "$stage"/bench/*; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libmvec|libpthread|libdl|librt|ld-linux)[.-]' | grep -vE 'libcu|libnccl|libnv' \
  | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
rm -rf "$out" && mkdir -p "$out"
# -9: the largest window finds the fatbins' repeats (about half the size of xz's default level)
XZ_OPT=${XZ_OPT:--9 -T2} tar -C "$stage" -cJf "$out/pack.tar.xz" .
rm -rf "$stage"
du -sh "$out/pack.tar.xz"
