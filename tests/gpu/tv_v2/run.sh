#!/usr/bin/env bash
# transforms.v2 against torchvision on the GPU machine: each pair's Lua side writes nnrepl's
# outputs for fixed inputs, its Python side recomputes them with torchvision 0.26 and prints
# PASS / FAIL per case. Usage: bash tests/gpu/tv_v2/run.sh NNREPL [DEVICE] [names...]
# (names: kernels_geometry geometry more; all by default). Exit status 0 when every pair passed.
set -uo pipefail
nn=${1:?usage: run.sh NNREPL [DEVICE] [names...]}
dev=${2:-cuda}
shift $(( $# >= 2 ? 2 : 1 ))
names=${*:-kernels_geometry geometry more}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for n in $names; do
  dir=$(mktemp -d /tmp/nnrepl-tv_v2.XXXXXX)
  if ! "$nn" "$here/$n.lua" "$dir" "$dev" > "$dir/lua.log" 2>&1; then
    echo "tv_v2 $n: the Lua side failed"; tail -5 "$dir/lua.log"; status=1
  elif ! python3 "$here/$n.py" "$dir" "$dev" > "$dir/py.log" 2>&1; then
    echo "tv_v2 $n: FAIL"; grep -v PASS "$dir/py.log" | tail -20; status=1
  else
    echo "tv_v2 $n: $(tail -1 "$dir/py.log")"
  fi
  rm -rf "$dir"
done
exit $status
