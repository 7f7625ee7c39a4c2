#!/usr/bin/env bash
# One call on the GPU machine: every check and timing that needs it, in one run.
# Run `bash bench/pack_device.sh` here first and carry .devbuild. Prints a table last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f .devbuild/pack.tar.xz ] && tar -C .devbuild -xJf .devbuild/pack.tar.xz
export LD_LIBRARY_PATH=$root/.devbuild/lib:${LD_LIBRARY_PATH:-}
# Debian's OpenBLAS does not recognise the GPU machine's Xeon and falls back to slow kernels
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
nn=$root/.devbuild/nnrepl
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/^/gpu: /'
lscpu | grep 'Model name' | sed 's/^ *//'
python3 -c 'import torch; print("torch", torch.__version__)'

# most important first: the run may be cut short
echo "== CUDA tests (C)"
for t in .devbuild/tests/test_cuda_*; do [ -x "$t" ] && echo "$(basename "$t"): $(timeout 120 "$t" 2>"$OUT/$(basename "$t").err" | tail -n 1)"; done
echo "== Lua tests that use the GPU"
for f in test_cuda_graph test_data_device_loader test_types test_amp test_backends; do
  timeout 120 "$nn" tests/lua/run.lua $f > "$OUT/lua_$f.log" 2>&1; tail -n 1 "$OUT/lua_$f.log" | sed "s/^/$f: /"
  grep -m5 FAIL "$OUT/lua_$f.log"
done

echo "== MLP step on the GPU (eager, then a captured CUDA graph)"
timeout 90 "$nn" bench/mlp_gpu.lua > "$OUT/mlp_nn.txt" 2>&1; cat "$OUT/mlp_nn.txt"
timeout 90 python3 bench/mlp_gpu.py > "$OUT/mlp_pt.txt" 2>&1; cat "$OUT/mlp_pt.txt"
python3 - "$OUT/mlp_nn.txt" "$OUT/mlp_pt.txt" <<'PY'
import re, sys
def get(path, kind):
    m = re.search(kind + r" step: median ([0-9.]+) ms", open(path).read())
    return float(m.group(1)) if m else None
ne, ng, pe, pg = get(sys.argv[1], "mlp"), get(sys.argv[1], "mlp graph"), get(sys.argv[2], "mlp"), get(sys.argv[2], "mlp graph")
if ne and pe: print(f"mlp step eager: nnrepl {ne:.4f} ms, pytorch {pe:.4f} ms, nnrepl/pytorch eager {ne/pe:.3f}x")
if ng and pe: print(f"mlp step graph: nnrepl {ng:.4f} ms, pytorch graph {pg} ms, nnrepl graph/pytorch eager {ng/pe:.3f}x")
PY

echo "== host cost of a + b on 4-element CUDA tensors"
ours=$(timeout 60 "$nn" bench/host_overhead.lua 100000 5 cuda | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
theirs=$(timeout 60 python3 bench/host_overhead.py 100000 5 cuda | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
python3 -c "print(f'a+b host cost (cuda): nnrepl {$ours:.3f} us, pytorch {$theirs:.3f} us, ratio pytorch/nnrepl {$theirs/$ours:.2f}x')"

echo "== parity, memory and CNN benchmark (tests/gpu)"
GPU_TEST_BUDGET=${GPU_TEST_BUDGET:-150} GPU_TEST_ALEXNET_BENCH=0 timeout 170 bash tests/gpu/run.sh "$nn" 2>&1 | tail -n 30

echo "== document 001 on the GPU, 5 epochs (Fashion-MNIST)"
if [ -d .devdata/fashion-mnist ]; then
  mkdir -p /tmp/fm/FashionMNIST/raw && for f in .devdata/fashion-mnist/*.gz; do gunzip -c "$f" > /tmp/fm/FashionMNIST/raw/$(basename "$f" .gz); done
  timeout 60 "$nn" scripts/train_mnist.lua --device cuda --data-root .devdata/fashion-mnist --seed 0 2>&1 | tail -n 7
  timeout 90 python3 bench/doc001_epoch.py /tmp/fm 2>&1 | tail -n 6
fi

echo "== scripts on the GPU"
timeout 30 "$nn" scripts/doc002_devices.lua 2>&1 | tail -n 25

echo "== checkpoints and TensorBoard files read by PyTorch (and PyTorch's checkpoint read by nnrepl)"
io=$(mktemp -d)
timeout 60 "$nn" tests/parity/io_dump.lua save "$io" >/dev/null && timeout 60 python3 tests/parity/io_parity.py phase1 "$io" 2>&1 | tail -n 15 &&
  timeout 60 "$nn" tests/parity/io_dump.lua load "$io" >/dev/null && timeout 60 python3 tests/parity/io_parity.py phase2 "$io" 2>&1 | tail -n 5

echo "== the docs' examples, GPU parts included"
timeout 120 bash tests/interp/test_docs.sh "$nn" 2>&1 | grep -E "FAIL|passed" | tail -n 12
