#!/usr/bin/env bash
# One call on the GPU machine: every check and timing that needs it, in one run.
# Run `bash bench/pack_device.sh` here first and carry .devbuild. Prints a table last.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
LOG=$(mktemp -d) # per-test logs stay on the machine: $OUT brings back only a few files
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/^/gpu: /'
lscpu | grep 'Model name' | sed 's/^ *//'
python3 -c 'import torch; print("torch", torch.__version__)'

# most important first: the run may be cut short. SECTIONS="cuda lua mlp ab amp seqops api seq gpu
# doc001 scripts io docs" picks some (default: all).
want() { [ -z "${SECTIONS:-}" ] || [[ " $SECTIONS " == *" $1 "* ]]; }
# ops_pair NAME: bench/NAME.lua and bench/NAME.py ("op <name> <us> us" lines) side by side
ops_pair() {
timeout 150 "$nn" "bench/$1.lua" > "$LOG/$1_nn.txt" 2>&1
timeout 150 python3 "bench/$1.py" > "$LOG/$1_pt.txt" 2>&1
python3 - "$LOG/$1_nn.txt" "$LOG/$1_pt.txt" <<'PY'
import re, sys
def read(path):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"op (\S+)\s+([0-9.]+) us", open(path).read())}
n, p = read(sys.argv[1]), read(sys.argv[2])
for k in n:
    print(f"{k:34} nnrepl {n[k]:9.2f}  pytorch {p.get(k, float('nan')):9.2f}  ratio {n[k] / p.get(k, float('nan')):.2f}x")
PY
}

if want cuda; then
echo "== CUDA tests (C)"
for t in .devbuild/tests/test_cuda_*; do
  [ -x "$t" ] || continue
  b=$(basename "$t"); timeout 120 "$t" >"$LOG/$b.out" 2>"$LOG/$b.err"
  echo "$b: $(tail -n 1 "$LOG/$b.out")"; grep -h -m5 FAIL "$LOG/$b.out" "$LOG/$b.err"
done
fi

if want lua; then
echo "== Lua tests that use the GPU"
for f in test_cuda_graph test_data_device_loader test_types test_amp test_backends test_indexing test_nn_utils test_gather_sort test_more_ops test_functional test_bitwise_math test_profiler test_profiler_memory test_shape_more test_dropout_fused test_complex test_fft test_tensor_random; do
  timeout 120 "$nn" tests/lua/run.lua $f > "$LOG/lua_$f.log" 2>&1; tail -n 1 "$LOG/lua_$f.log" | sed "s/^/$f: /"
  grep -m5 FAIL "$LOG/lua_$f.log"
done
fi

if want mlp; then
echo "== MLP step on the GPU (eager, then a captured CUDA graph)"
timeout 90 "$nn" bench/mlp_gpu.lua > "$LOG/mlp_nn.txt" 2>&1; cat "$LOG/mlp_nn.txt"
timeout 90 python3 bench/mlp_gpu.py > "$LOG/mlp_pt.txt" 2>&1; cat "$LOG/mlp_pt.txt"
python3 - "$LOG/mlp_nn.txt" "$LOG/mlp_pt.txt" <<'PY'
import re, sys
def get(path, kind):
    m = re.search(kind + r" step: median ([0-9.]+) ms", open(path).read())
    return float(m.group(1)) if m else None
ne, ng, pe, pg = get(sys.argv[1], "mlp"), get(sys.argv[1], "mlp graph"), get(sys.argv[2], "mlp"), get(sys.argv[2], "mlp graph")
if ne and pe: print(f"mlp step eager: nnrepl {ne:.4f} ms, pytorch {pe:.4f} ms, nnrepl/pytorch eager {ne/pe:.3f}x")
if ng and pe: print(f"mlp step graph: nnrepl {ng:.4f} ms, pytorch graph {pg} ms, nnrepl graph/pytorch eager {ng/pe:.3f}x")
PY
fi

if want ab; then
echo "== host cost of a + b on 4-element CUDA tensors"
ours=$(timeout 60 "$nn" bench/host_overhead.lua 100000 5 cuda | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
theirs=$(timeout 60 python3 bench/host_overhead.py 100000 5 cuda | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
python3 -c "print(f'a+b host cost (cuda): nnrepl {$ours:.3f} us, pytorch {$theirs:.3f} us, ratio pytorch/nnrepl {$theirs/$ours:.2f}x')"
ours=$(timeout 60 "$nn" bench/host_overhead.lua 100000 5 cuda 200 | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
theirs=$(timeout 60 python3 bench/host_overhead.py 100000 5 cuda 200 | tee /dev/stderr | sed -E 's/.*median ([0-9.]+) us.*/\1/')
python3 -c "print(f'a+b host cost (cuda, bursts of 200): nnrepl {$ours:.3f} us, pytorch {$theirs:.3f} us, ratio pytorch/nnrepl {$theirs/$ours:.2f}x')"
echo "-- each op launched on its own (NNREPL_SMALL_OPS=0), and the launch floor"
NNREPL_SMALL_OPS=0 timeout 60 "$nn" bench/host_overhead.lua 100000 5 cuda
NNREPL_SMALL_OPS=0 timeout 60 "$nn" bench/host_overhead.lua 100000 5 cuda 200
timeout 120 .devbuild/bench/bench_cuda_launch_floor
NNREPL_SMALL_OPS=0 timeout 120 .devbuild/bench/bench_cuda_launch_floor | grep engine
fi

if want amp; then
echo "== AlexNet under autocast and GradScaler (bench/amp_alexnet.*)"
timeout 150 "$nn" bench/amp_alexnet.lua 10 3 3 > "$LOG/amp_nn.txt" 2>&1; sed 's/^/nnrepl  /' "$LOG/amp_nn.txt"
timeout 150 python3 bench/amp_alexnet.py 10 3 3 > "$LOG/amp_pt.txt" 2>&1; sed 's/^/pytorch /' "$LOG/amp_pt.txt"
python3 - "$LOG/amp_nn.txt" "$LOG/amp_pt.txt" <<'PY'
import re, sys
def read(path):
    return {m.group(1): (float(m.group(2)), float(m.group(3))) for m in re.finditer(r"mode (\S+)\s+step_ms ([0-9.]+) peak_gib ([0-9.]+)", open(path).read())}
n, p = read(sys.argv[1]), read(sys.argv[2])
for k in n:
    if k in p: print(f"{k}: nnrepl/pytorch {n[k][0] / p[k][0]:.3f}x")
if "autocast_fp16" in n and "fp32" in n:
    a, s, f = n["autocast_fp16"][0], n.get("autocast_fp16_gradscaler", (float("nan"),))[0], n["fp32"][0]
    print(f"nnrepl autocast fp16 / own fp32 {a / f:.3f}x; GradScaler adds {100 * (s / a - 1):+.1f}%; peak autocast/fp32 {n['autocast_fp16'][1] / n['fp32'][1]:.3f}x")
if "autocast_fp16_cl" in n and "fp32_cl" in n:
    a, s = n["autocast_fp16_cl"][0], n.get("autocast_fp16_gradscaler_cl", (float("nan"),))[0]
    print(f"channels_last: autocast fp16 / own fp32 {a / n['fp32_cl'][0]:.3f}x (/ own NCHW fp32 {a / n['fp32'][0]:.3f}x); GradScaler adds {100 * (s / a - 1):+.1f}%")
PY
echo "== the step's other ops one at a time (bench/amp_ops.*), us per call"
ops_pair amp_ops
echo "== first layers: few channels, strided (bench/conv_stem.*), us per call"
ops_pair conv_stem
fi

if want seqops; then
echo "== the transformer step's products and elementwise ops, float32 (bench/seq_ops.*), us per call"
ops_pair seq_ops
fi

if want api; then
echo "== the functions and modules written in Lua, GPU against CPU in float64 (tests/gpu/api_device.lua)"
timeout 180 "$nn" tests/gpu/api_device.lua cuda 2>&1 | tail -n 12
echo "== recurrent layers through cuDNN against the composed form (tests/gpu/rnn_cudnn.lua)"
timeout 180 "$nn" tests/gpu/rnn_cudnn.lua 2>&1 | tail -n 30
fi

if want seq; then
echo "== the newer modules (LSTM, GRU, attention, transformer, conv1d, conv_transpose2d) against PyTorch (bench/module_parity.*)"
timeout 120 bash bench/module_parity.sh "$nn" cuda 2>&1 | tail -n 8
fi

if want gpu; then
echo "== parity, memory and CNN benchmark (tests/gpu)"
GPU_TEST_BUDGET=${GPU_TEST_BUDGET:-150} GPU_TEST_ALEXNET_BENCH=0 timeout 170 bash tests/gpu/run.sh "$nn" 2>&1 | tail -n 30
fi

if want doc001; then
echo "== document 001 on the GPU, 5 epochs (Fashion-MNIST)"
if [ -d .devdata/fashion-mnist ]; then
  mkdir -p /tmp/fm/FashionMNIST/raw && for f in .devdata/fashion-mnist/*.gz; do gunzip -c "$f" > /tmp/fm/FashionMNIST/raw/$(basename "$f" .gz); done
  timeout 60 "$nn" scripts/train_mnist.lua --device cuda --data-root .devdata/fashion-mnist --seed 0 2>&1 | tail -n 7
  timeout 90 python3 bench/doc001_epoch.py /tmp/fm 2>&1 | tail -n 6
fi
fi

if want scripts; then
echo "== scripts on the GPU"
timeout 30 "$nn" scripts/doc002_devices.lua 2>&1 | tail -n 25
fi

if want io; then
echo "== checkpoints and TensorBoard files read by PyTorch (and PyTorch's checkpoint read by nnrepl)"
io=$(mktemp -d)
timeout 60 "$nn" tests/parity/io_dump.lua save "$io" >/dev/null && timeout 60 python3 tests/parity/io_parity.py phase1 "$io" 2>&1 | tail -n 15 &&
  timeout 60 "$nn" tests/parity/io_dump.lua load "$io" >/dev/null && timeout 60 python3 tests/parity/io_parity.py phase2 "$io" 2>&1 | tail -n 5
fi

if want docs; then
echo "== the docs' examples, GPU parts included"
timeout 120 bash tests/interp/test_docs.sh "$nn" 2>&1 | grep -E "FAIL|passed" | tail -n 12
fi
