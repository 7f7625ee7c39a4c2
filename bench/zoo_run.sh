#!/usr/bin/env bash
# Training steps of common torchvision models, nnrepl and PyTorch on the same GPU in one run,
# and the ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/zoo_run.sh NNREPL [B] [steps reps warmup] [models]
set -uo pipefail
nn=$1; B=${2:-32}; timing=${3:-"5 5 3"}
models=${4:-resnet18,resnet50,mobilenet_v3_large,efficientnet_b0,convnext_tiny,vit_b_16,swin_t,densenet121,regnet_y_400mf,shufflenet_v2_x1_0,vgg16}
here=$(cd "$(dirname "$0")" && pwd)
res=$(mktemp)
for prec in fp32 amp; do
  timeout 280 "$nn" "$here/zoo_step.lua" $prec "$B" $timing "$models" 2>&1 | tee -a "$res" | grep -v '^model ' | tail -n 5 | sed 's/^/nnrepl: /'
  timeout 280 python3 "$here/zoo_step.py" $prec "$B" $timing "$models" 2>&1 | sed 's/^model /torch /' | tee -a "$res" | grep -v '^torch ' | tail -n 5 | sed 's/^/pytorch: /'
done
python3 - "$res" <<'PY'
import sys
t = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) > 7 and w[0] in ("model", "torch"):
        t[w[0], w[1], w[3]] = (float(w[7]), w[9])
print(f"{'model':20} {'prec':5} {'nnrepl ms':>10} {'torch ms':>10} {'ratio':>6}  losses (nnrepl | torch)")
for (side, name, prec), (ms, loss) in sorted(t.items(), key=lambda kv: (kv[0][2], kv[0][1])):
    if side != "model": continue
    o = t.get(("torch", name, prec))
    print(f"{name:20} {prec:5} {ms:10.3f} {o[0] if o else float('nan'):10.3f} {ms / o[0] if o else float('nan'):6.2f}  {loss} | {o[1] if o else '-'}")
PY
