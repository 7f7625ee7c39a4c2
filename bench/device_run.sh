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

echo "== printing parity with PyTorch"
python3 tests/parity/print_cases.py > "$OUT/print_torch.txt" 2>&1
"$root/.devbuild/tests/test_format" --dump > "$OUT/print_nnrepl.txt" 2>&1
if diff "$OUT/print_torch.txt" "$OUT/print_nnrepl.txt" > "$OUT/print_diff.txt"; then echo "print parity: identical ($(grep -c '^===' "$OUT/print_torch.txt") cases)"
else echo "print parity: DIFFERENT"; head -40 "$OUT/print_diff.txt"; fi

echo "== host cost of a + b (4-element CPU tensors)"
ours=$("$nn" bench/host_overhead.lua | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
theirs=$(python3 bench/host_overhead.py | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
python3 -c "print(f'a+b host cost: nnrepl {$ours:.3f} us, pytorch {$theirs:.3f} us, ratio pytorch/nnrepl {$theirs/$ours:.2f}x')"

echo "== CUDA tests"
for t in .devbuild/tests/test_cuda_*; do [ -x "$t" ] && echo "$(basename "$t"): $("$t" 2>"$OUT/$(basename "$t").err" | tail -n 1)"; done

echo "== MLP step on the GPU"
ours=$("$nn" bench/mlp_gpu.lua 2>&1 | tee /dev/stderr | sed -nE 's/.*median ([0-9.]+) ms.*/\1/p')
theirs=$(python3 bench/mlp_gpu.py 2>&1 | tee /dev/stderr | sed -nE 's/.*median ([0-9.]+) ms.*/\1/p')
[ -n "$ours" ] && [ -n "$theirs" ] && python3 -c "print(f'mlp step: nnrepl {$ours:.4f} ms, pytorch {$theirs:.4f} ms, nnrepl/pytorch {$ours/$theirs:.2f}x')"
