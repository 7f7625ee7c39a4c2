#!/usr/bin/env bash
# Parity of the ported PyTorch tutorials (scripts/tutorials/) with PyTorch on the GPU machine:
# tests/gpu/examples/run.sh's protocol over this folder's <name>.py / <name>.lua pairs.
#   bash tests/gpu/tutorials/run.sh NNREPL [device] [names...]
PARITY_DIR=$(cd "$(dirname "$0")" && pwd) exec bash "$(dirname "$0")/../examples/run.sh" "$@"
