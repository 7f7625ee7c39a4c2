#!/usr/bin/env bash
# pytorch/examples distributed/ddp/run_example.sh for nnrepl: runs an example of this folder on
# one node with N ranks, nnrepl's launcher in torchrun's place (NNREPL: the binary, default nnrepl).
#   bash run_example.sh [file_to_run.lua] [nprocs]   (defaults: example.lua, 2)
here=$(cd "$(dirname "$0")" && pwd)
echo "Launching ${1:-example.lua} with ${2:-2} gpus"
exec "${NNREPL:-nnrepl}" --nnodes=1 --nproc_per_node="${2:-2}" --master-addr localhost --master-port 5972 "$here/${1:-example.lua}"
