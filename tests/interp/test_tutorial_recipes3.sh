#!/usr/bin/env bash
# The last PyTorch recipes' ports (scripts/tutorials/recipes/): benchmark, timer_quick_start,
# tuning_guide, inspecting_model_parameters and calculating_layer_output_dimensions, at small
# sizes. Times cannot be compared, so the checks are on structure: the Measurement printouts'
# lines as torch/utils/benchmark/utils/common.py writes them, the IQR against its quartiles
# (IQR = p75 - p25 to the two decimals printed), the Compare tables' rows (the product of the
# sizes, grouped by thread count), their title as wide as the header (the centring rule), the
# env column padded to the longest env, the fuzzed sizes within the fuzzer's element limits; the
# tuning guide's counts worked out from the model (16 samples in batches of 8 = 2; conv without
# bias + BatchNorm + Linear = 5 parameters); the parameter counts from the layers' sizes; the
# output-size formula against the layers' own shapes.
# Usage: bash tests/interp/test_tutorial_recipes3.sh build/nnrepl
bin=${1:?usage: test_tutorial_recipes3.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/recipes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- benchmark: x 1000 x 64, Compare over sizes {1, 64}^2 and threads {1, 2}, 3 fuzzed inputs ----
out=$(cd "$tmp" && RECIPE_BENCH_ROWS=1000 RECIPE_BENCH_SIZES=1,64 RECIPE_BENCH_THREADS=1,2 RECIPE_BENCH_MIN_RUN_TIME=0.02 \
  RECIPE_BENCH_TAKE=3 RECIPE_BENCH_MAX_ELEMENTS=100000 "$bin" "$dir/benchmark.lua" 2>"$tmp/err")
check "benchmark: exit 0 (the json round trip's assert included)" [ $? -eq 0 ] || cat "$tmp/err"
check "benchmark: timeit lines" [ "$(count "$out" '^(mul_sum|bmm)\(x, x\): +[0-9]+\.[0-9] us$')" -ge 2 ]
nm=6; [ "$(device_of "$bin")" = cuda ] && nm=8
check "benchmark: $nm Measurement printouts" [ "$(count "$out" '^<torch\.utils\.benchmark\.utils\.common\.Measurement object at 0x[0-9a-f]+>$')" -eq "$nm" ]
check "benchmark: timeit's printout" has "$out" $'batched_dot_mul_sum(x, x)\n'
check "benchmark: one block of 100 runs" matches "$out" '^  1 measurement, 100 runs , 1 thread$'
threads=$(sed -n 's/^Benchmarking on \([0-9]*\) threads$/\1/p' <<<"$out")
th="thread"; [ "${threads:-1}" -gt 1 ] && th="threads"
check "benchmark: the title and num_threads ($threads)" has "$out" $'Multithreaded batch dot: Implemented using bmm\n'
check "benchmark: num_threads in the printout" matches "$out" "^  1 measurement, 100 runs , $threads $th\$"
check "benchmark: blocked_autorange's count line" matches "$out" "^  [0-9]+ measurements?, [0-9]+ runs (per measurement,|,) $threads $th\$"
mean=$(sed -n 's/^Mean: *\([0-9.]*\) us$/\1/p' <<<"$out"); median=$(sed -n 's/^Median: *\([0-9.]*\) us$/\1/p' <<<"$out")
check "benchmark: mean and median printed ($mean, $median)" [ -n "$mean" ] && [ -n "$median" ]
# the Compare tables: 2 (plain, trimmed and coloured) of 4 rows per thread group
check "benchmark: thread groups" [ "$(count "$out" '^1 threads: -+$')" -eq 5 ] && [ "$(count "$out" '^2 threads: -+$')" -eq 2 ]
rows=$(grep -E '^      \[(1|64), (1|64)\] +\|' <<<"$out" | sed 's/ *|.*//; s/^ *//' | tr '\n' ' ')
check "benchmark: rows in product order, per thread group ($rows)" [ "$rows" = "[1, 1] [1, 64] [64, 1] [64, 64] [1, 1] [1, 64] [64, 1] [64, 64] [1, 1] [1, 64] [64, 1] [64, 64] [1, 1] [1, 64] [64, 1] [64, 64] " ]
title_ok=$(awk '/^\[-+ Batched dot -+\]$/ { t = length($0); getline; if (length($0) != t) bad = 1; n++ } END { print (n >= 4 && !bad) ? "yes" : "no " n }' <<<"$out")
check "benchmark: each title as wide as its header ($title_ok)" [ "$title_ok" = yes ]
check "benchmark: the header" matches "$out" '^ +\|  mul/sum  \|  +bmm +$'
check "benchmark: units line" [ "$(count "$out" '^Times are in (nanoseconds \(ns\)|microseconds \(us\)|milliseconds \(ms\))\.$')" -eq 5 ]
check "benchmark: colorize's escapes" has "$out" $'\e[92m\e[1m'
check "benchmark: A/B columns" matches "$out" '^ +\|  \[1, 1\]  \|  \[1024, 10000\]  \|  \[10000, 1\]$'
check "benchmark: env A row" matches "$out" '^  \(environment A: mul/sum\)  batched_dot\(x, x\)  \|'
check "benchmark: env B row padded to env A's width" matches "$out" '^  \(environment B: bmm\)      batched_dot\(x, x\)  \|'
fz=$(awk '/^      [0-9]+ +x [0-9]+/ { print $1 * $3 }' <<<"$out")
check "benchmark: 6 fuzzed rows" [ "$(wc -l <<<"$fz")" -eq 6 ]
inrange=$(head -n 3 <<<"$fz" | awk '$1 < 128 || $1 > 100000 { bad = 1 } END { print bad ? "no" : "yes" }')
check "benchmark: the first fuzzer's sizes within 128..100000 elements" [ "$inrange" = yes ]

# ---- timer_quick_start ----
out=$(cd "$tmp" && RECIPE_TIMER_MIN_RUN_TIME=0.1 "$bin" "$dir/timer_quick_start.lua" 2>"$tmp/err")
check "timer: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "timer: stmt and the dedented setup, a blank line after" has "$out" $'x * y\nsetup:\n  x = torch.ones(128)\n  y = torch.ones(128)\n\n  Median: '
check "timer: count line" matches "$out" '^  [0-9]+ measurements, [0-9]+ runs per measurement, 1 thread$'
iqr=$(sed -n 's/^  IQR: *\([0-9.]*\) [nu]s (\([0-9.]*\) to \([0-9.]*\))$/\1 \2 \3/p' <<<"$out" | head -n 1)
read -r a b c <<<"$iqr"
nmeas=$(sed -n 's/^  \([0-9]*\) measurements, [0-9]* runs per measurement, 1 thread$/\1/p' <<<"$out" | head -n 1)
if [ "${nmeas:-0}" -ge 4 ]; then # PyTorch prints the IQR from four measurements on
  check "timer: IQR = p75 - p25 ($iqr)" awk_true "\"$a\" != \"\" && ($a - ($c - $b)) ^ 2 <= 0.015 ^ 2"
else
  check "timer: no IQR line for $nmeas measurements" [ -z "$iqr" ]
fi
check "timer: the footnote's implied torch" has "$out" $'torch.empty({})\n'

# ---- tuning_guide: ResNet-50 on 2 images of 64 pixels ----
out=$(cd "$tmp" && RECIPE_TUNING_BATCH=2 RECIPE_TUNING_SIZE=64 "$bin" "$dir/tuning_guide.lua" 2>"$tmp/err")
check "tuning: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tuning: 16 samples in batches of 8" has "$out" "DataLoader with 2 workers: 2 batches"
check "tuning: no graph under no_grad" has "$out" "no_grad: requires_grad=false, grad_fn=nil"
check "tuning: torchvision's convolutions have no bias" has "$out" "resnet18: conv1 bias nil, layer1[0].conv1 bias nil"
check "tuning: grad = nil on all 5 parameters" has "$out" "grad = nil: 5 of 5 parameters without a gradient"
d=$(sed -n 's/^compiled gelu vs F.gelu: max difference \(.*\)$/\1/p' <<<"$out")
check "tuning: the gelu formula is F.gelu's ($d)" below "$d" 1e-5
check "tuning: channels_last" has "$out" "channels_last: weight true, input true, output torch.Size([16, 10])"
d=$(sed -n 's/^checkpoint: conv gradient vs without checkpointing: max difference \(.*\)$/\1/p' <<<"$out")
check "tuning: checkpointed gradient = plain ($d)" below "$d" 1e-6
check "tuning: anomaly detection off" has "$out" "anomaly detection: false"
check "tuning: the traced ResNet-50" has "$out" "oneDNN fusion true; resnet50 traced: torch.Size([2, 1000])"
check "tuning: bfloat16 inference" matches "$out" '^bfloat16 autocast: torch\.bfloat16, top-1 agrees with float32 on [0-2] of 2$'
check "tuning: the GPU switches" has "$out" "matmul precision high, cudnn.benchmark true"

# ---- inspecting_model_parameters: counts from the layers' sizes ----
# MLP: 784*512+512 = 401,920; 512*512+512 = 262,656; 512*10+10 = 5,130; total 669,706; with the
# first weight (401,408) frozen 268,298. CNN: 1*32*9+32 = 320; 32*64*9+64 = 18,496;
# 9216*128+128 = 1,179,776 (9216 = 64 * 12 * 12: 28 -> 26 -> 24 -> pooled 12); 128*10+10 = 1,290
out=$(cd "$tmp" && "$bin" "$dir/inspecting_model_parameters.lua" 2>"$tmp/err")
check "inspecting: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "inspecting: shapes" has "$out" "[torch.Size([512, 784]), torch.Size([512]), torch.Size([512, 512]), torch.Size([512]), torch.Size([10, 512]), torch.Size([10])]"
check "inspecting: named shapes" has "$out" $'linear_relu_stack.0.weight torch.Size([512, 784])\nlinear_relu_stack.0.bias torch.Size([512])'
check "inspecting: the numel line" has "$out" "name='linear_relu_stack.0.weight', param.size()=torch.Size([512, 784]), param.numel()=401408"
check "inspecting: total" has "$out" "Total model params: 669,706"
check "inspecting: trainable after freezing" has "$out" $'linear_relu_stack.0.weight\', param.size()=torch.Size([512, 784]), param.numel()=401408, param.requires_grad=False'
check "inspecting: 669,706 - 401,408" has "$out" "Total model trainable params: 268,298"
check "inspecting: the CNN's total" has "$out" "Total model trainable params: 1,199,882"
check "inspecting: the CNN's flattened features" has "$out" "(1): Linear(in_features=9216, out_features=128, bias=True)"
check "inspecting: per layer (MLP)" has "$out" $'name=\'linear_relu_stack.0\' total_params=401,920\nname=\'linear_relu_stack.2\' total_params=262,656\nname=\'linear_relu_stack.4\' total_params=5,130'
check "inspecting: per layer (CNN)" has "$out" $'name=\'features.0\' total_params=320\nname=\'features.2\' total_params=18,496\nname=\'classifier.1\' total_params=1,179,776\nname=\'classifier.3\' total_params=1,290'

# ---- calculating_layer_output_dimensions: (28 + 0 - 1*(3-1) - 1)/1 + 1 = 26, then 24, pooled
# (24 - 1*(2-1) - 1)/2 + 1 = 12: the formula's shapes equal the layers' own output shapes ----
out=$(cd "$tmp" && "$bin" "$dir/calculating_layer_output_dimensions.lua" 2>"$tmp/err")
check "dimensions: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "dimensions: the guess 64*10*10 fails on 9216 features" matches "$out" '^Error occured: .*\[1, 9216\].*6400'
check "dimensions: one error only (the fixed model runs)" [ "$(count "$out" '^Error occured')" -eq 1 ]
check "dimensions: the formula" has "$out" $'Input shape (c, h, w) : (1, 28, 28)\nPost Conv2d.0 shape   : (32, 26, 26)\nPost Conv2d.1 shape   : (64, 24, 24)\nPost MaxPool2d.0 shape: (64, 12, 12)'
check "dimensions: the layers agree" has "$out" $'after conv1 shape: torch.Size([1, 32, 26, 26])\nafter conv2 shape: torch.Size([1, 64, 24, 24])\nafter pool shape: torch.Size([1, 64, 12, 12])'
check "dimensions: Sequential features" has "$out" "post features shape: torch.Size([1, 64, 12, 12])"
check "dimensions: the final Net" has "$out" "(extra) Net's output: torch.Size([1, 10])"

finish
