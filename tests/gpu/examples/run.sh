#!/usr/bin/env bash
# Parity of the ported pytorch/examples programs (scripts/examples/) with PyTorch, on the GPU
# machine: for each tests/gpu/examples/<name>.py, PyTorch prepares the initial weights and
# batches and trains K steps, nnrepl trains the same steps with the port's own model classes
# (<name>.lua), and the .py compares the two (one or more "parity <name>...: PASS|FAIL" lines each).
#   bash tests/gpu/examples/run.sh NNREPL [device] [names...]
# PARITY_DIR=folder: the pairs of another folder with the same protocol (tests/gpu/tutorials/run.sh).
set -uo pipefail
nn=${1:?usage: run.sh NNREPL [device] [names...]}
nn=$(cd "$(dirname "$nn")" && pwd)/$(basename "$nn")
dev=${2:-cuda}
shift $(( $# >= 2 ? 2 : 1 ))
here=${PARITY_DIR:-$(cd "$(dirname "$0")" && pwd)}
cd "$(dirname "$0")/../../.."
work=$(mktemp -d /tmp/nnrepl-examples.XXXXXX)
trap 'rm -rf "$work"' EXIT
names=("$@")
if [ ${#names[@]} -eq 0 ]; then # every example with a parity pair (example_parity.* and _*.* are shared harnesses)
  for f in "$here"/*.py; do n=$(basename "$f" .py); [ "$n" != example_parity ] && [ "${n#_}" = "$n" ] && names+=("$n"); done
fi
status=0
for n in "${names[@]}"; do
  log=$work/$n.log
  if ! timeout 300 python3 "$here/$n.py" prepare "$work" --device "$dev" >"$log" 2>&1; then
    echo "parity $n: FAIL (PyTorch's side failed)"; tail -n 8 "$log" | sed 's/^/    /'; status=1; continue
  fi
  if ! timeout 300 "$nn" "$here/$n.lua" "$work" "$dev" >>"$log" 2>&1; then
    echo "parity $n: FAIL (nnrepl's side failed)"; tail -n 8 "$log" | sed 's/^/    /'; status=1; continue
  fi
  lines=$(python3 "$here/$n.py" compare "$work" 2>&1 | grep '^parity ')
  echo "${lines:-parity $n: FAIL (no result line)}"
  if [ -z "$lines" ] || grep -qv ': PASS$' <<<"$lines"; then status=1; tail -n 8 "$log" | sed 's/^/    /'; fi
done
exit $status
