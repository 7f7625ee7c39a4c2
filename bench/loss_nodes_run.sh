#!/usr/bin/env bash
# The pointwise losses' forward + backward, nnrepl and PyTorch on the same GPU in one run, and the
# ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/loss_nodes_run.sh NNREPL [cpu]   (cpu: on the CPU; LOSS_THREADS for both sides' threads)
exec bash "$(dirname "$0")/ratio_run.sh" loss_nodes "$@"
