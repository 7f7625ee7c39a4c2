#!/usr/bin/env bash
# The fused activations' forward + backward, nnrepl and PyTorch on the same GPU in one run, and the
# ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/activations_run.sh NNREPL
exec bash "$(dirname "$0")/ratio_run.sh" activations "$@"
