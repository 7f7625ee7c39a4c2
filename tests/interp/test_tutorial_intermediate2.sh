#!/usr/bin/env bash
# The torch.func / mixed precision / memory format / attention / gradient tutorials of
# pytorch/tutorials ported to scripts/tutorials/intermediate2/, end to end on tiny settings:
# per-sample gradients (the vmap(grad) ones equal the loop's), Jacobians (the printed row
# checked against float64 finite differences, the Hessian-vector product against its closed
# form), the vmap ensemble, the NTK both ways, forward AD (each jvp against its closed form, a
# custom Function's jvp through gradcheck's finite differences),
# mixed precision (float16 autocast on the CPU, the losses fall), channels-last strides (the
# tutorial's expected outputs), SDPA (the causal bias masks) and the gradient flow table.
# Usage: bash tests/interp/test_tutorial_intermediate2.sh build/nnrepl
bin=${1:?usage: test_tutorial_intermediate2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/intermediate2
source "$root/tests/interp/lib.sh"

# ---- per_sample_grads ----
out=$(PSG_TIMEIT=1 PSG_BATCH=4 "$bin" "$dir/per_sample_grads.lua" 2>&1)
check "per_sample_grads: exit 0" [ $? -eq 0 ]
check "per_sample_grads: one conv1 gradient per sample" [ "$(sed -n 1p <<<"$out")" = "torch.Size([4, 32, 1, 3, 3])" ]
check "per_sample_grads: vmap(grad) equals the loop" has "$out" "per-sample gradients match: true"
check "per_sample_grads: no mismatch report" lacks "$out" "mismatch"
check "per_sample_grads: the timings and the delta" matches "$out" '^Performance delta: [0-9]+\.[0-9]{4} percent improvement with vmap $'
check "per_sample_grads: Timer measurements" [ "$(count "$out" '^Per-sample-grads with(out)? vmap <torch.utils.benchmark.utils.common.Measurement object at')" -eq 2 ]

# ---- jacobians_hessians ----
out=$(JH_TIMEIT=1 JH_HESS_DIN=8 "$bin" "$dir/jacobians_hessians.lua" 2>&1)
check "jacobians_hessians: exit 0" [ $? -eq 0 ]
check "jacobians_hessians: jacobian shape" [ "$(sed -n 1p <<<"$out")" = "torch.Size([16, 16])" ]
# row 0 of d tanh(W x + b) / dx by central differences in float64, from the same seed
fd=$("$bin" -e '
torch.manual_seed(0)
local D = 16
local w, b, x = torch.randn(D, D):double(), torch.randn(D):double(), torch.randn(D):double()
local h, row = 1e-6, {}
for j = 0, D - 1 do
  local e = torch.zeros(D, {dtype = torch.float64}); e[j] = h
  local f = function(v) return torch.tanh(w:matmul(v) + b)[0]:item() end
  row[#row + 1] = string.format("%.10e", (f(x + e) - f(x - e)) / (2 * h))
end
print(table.concat(row, " "))')
printed=$(sed -n '2,/])$/p' <<<"$out" | grep -oE -- '-?[0-9]+\.[0-9]+e[-+][0-9]+' | tr '\n' ' ')
check "jacobians_hessians: 16 printed entries" [ "$(wc -w <<<"$printed")" -eq 16 ]
# each entry is (1 - tanh(z0)^2) w[0][j] with tanh(z0) ~ 0.99972: float32's tanh, good to an ulp
# (6e-8), leaves 1 - tanh^2 ~ 5.6e-4 good to ~2e-4 of itself; 1e-3 keeps a margin
ok=1; i=1
for want in $fd; do
  got=$(cut -d' ' -f$i <<<"$printed"); i=$((i + 1))
  awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= 1e-3 * m + 1e-8) }' || ok=0
done
check "jacobians_hessians: jacobian[0] equals float64 finite differences" [ $ok -eq 1 ]
check "jacobians_hessians: the tall weight" has "$out" "torch.Size([2048, 32])"
check "jacobians_hessians: hessian api equals jacfwd(jacfwd)" [ "$(grep -cx true <<<"$out")" -eq 1 ]
check "jacobians_hessians: batch weight" has "$out" "weight shape = torch.Size([33, 31])"
check "jacobians_hessians: batch Hessian shape" has "$out" "torch.Size([64, 33, 31, 31])"
check "jacobians_hessians: hvp is -sin(x) t" has "$out" "hvp is -sin(x) * tangent: true"
check "jacobians_hessians: 3 deltas" [ "$(count "$out" '^ Performance delta: [0-9]+\.[0-9]{4} percent improvement with (vmap|jacrev|jacfwd) $')" -eq 3 ]

# ---- ensembling ----
out=$(ENS_TIMEIT=1 "$bin" "$dir/ensembling.lua" 2>&1)
check "ensembling: exit 0" [ $? -eq 0 ]
check "ensembling: leading num_models dims" [ "$(sed -n 1p <<<"$out")" = "[10, 10, 10, 10, 10, 10]" ]
check "ensembling: vmap matches both loops" has "$out" "vmap predictions match the loop: torch.Size([10, 64, 10]) torch.Size([10, 64, 10])"
check "ensembling: timings" [ "$(count "$out" '^Predictions with(out)? vmap <torch.utils.benchmark')" -eq 2 ]

# ---- neural_tangent_kernels ----
# (on a GPU, cuDNN's TF32 convolutions would part the two methods by more than the 1e-5 the
# tutorial asserts: NVIDIA_TF32_OVERRIDE=0 turns TF32 off; nothing changes on the CPU)
out=$(NVIDIA_TF32_OVERRIDE=0 NTK_TRAIN=2 NTK_TEST=1 "$bin" "$dir/neural_tangent_kernels.lua" 2>&1)
check "ntk: exit 0" [ $? -eq 0 ]
check "ntk: full and trace shapes" [ "$(sed -n 1,2p <<<"$out" | tr '\n' ' ')" = "torch.Size([2, 1, 10, 10]) torch.Size([2, 1]) " ]
check "ntk: Jacobian contraction equals NTK-vector products" has "$out" "both methods agree: torch.Size([1, 2, 10, 10])"
check "ntk: traces agree" [ "$(tail -n 1 <<<"$out")" = true ]

# ---- forward_ad_usage ----
out=$("$bin" "$dir/forward_ad_usage.lua" 2>&1)
check "forward_ad: exit 0" [ $? -eq 0 ]
for line in "jvp of x^2 + y^2 is 2 x t: true" "module jvp is x dW^T + db: true" "functional_call jvp matches: true" \
  "custom Function jvp is t exp(x): true" "gradcheck: true" "ft.jvp: true" "partial jvp: true" "model jvp: true"; do
  check "forward_ad: $line" has "$out" "$line"
done

# ---- mixed_precision_tutorial ----
out=$(MP_BATCH=16 MP_SIZE=32 MP_LAYERS=3 MP_BATCHES=4 MP_EPOCHS=20 "$bin" "$dir/mixed_precision_tutorial.lua" 2>&1)
check "mixed_precision: exit 0" [ $? -eq 0 ]
check "mixed_precision: both timed phases" [ "$(count "$out" '^Total execution time = [0-9]+\.[0-9]{3} sec$')" -eq 2 ]
check "mixed_precision: memory lines" [ "$(count "$out" '^Max memory used by tensors = [0-9]+ bytes$')" -eq 2 ]
l() { sed -nE "s/^$1: mean loss of the last epoch //p" <<<"$out"; }
check "mixed_precision: autocast keeps lowering the loss ($(l 'default precision') > $(l autocast))" less "$(l autocast)" "$(l 'default precision')"
check "mixed_precision: GradScaler keeps lowering it ($(l 'autocast and GradScaler'))" less "$(l 'autocast and GradScaler')" "$(l autocast)"
check "mixed_precision: a fresh net lowers it with clipping ($(l 'all together') > $(l 'with clipping'))" less "$(l 'with clipping')" "$(l 'all together')"
check "mixed_precision: the scale never dropped (no inf)" has "$out" "scale: 65536.0"

# ---- memory_format_tutorial ----
out=$("$bin" "$dir/memory_format_tutorial.lua" 2>&1)
check "memory_format: exit 0" [ $? -eq 0 ]
want="(3072, 1024, 32, 1)
torch.Size([10, 3, 32, 32])
(3072, 1, 96, 3)
(3072, 1024, 32, 1)
(3072, 1, 96, 3)
true
true
true
(3072, 1, 96, 3)
(3072, 1, 96, 3)"
check "memory_format: the tutorial's expected outputs" [ "$(head -n 10 <<<"$out")" = "$want" ]
check "memory_format: the conv output is channels_last" has "$out" "(3072, 1, 96, 3)"$'\n'"true"
check "memory_format: the checked model keeps channels_last" has "$out" "checked model output is channels_last: true"

# ---- scaled_dot_product_attention_tutorial ----
out=$(SDPA_BATCH=1 SDPA_SEQ=8 "$bin" "$dir/scaled_dot_product_attention_tutorial.lua" 2>&1)
check "sdpa: exit 0" [ $? -eq 0 ]
check "sdpa: 4 kernel timings" [ "$(count "$out" '^The (default|math|flash attention|memory efficient) implementation runs in [0-9]+\.[0-9]{3} microseconds$')" -eq 4 ]
check "sdpa: the module prints" has "$out" "CausalSelfAttention("$'\n'"  (c_attn): Linear(in_features=512, out_features=1536, bias=False)"
check "sdpa: two profiler tables" [ "$(count "$out" '^Self CPU time total: ')" -eq 2 ]
check "sdpa: CausalBias class" [ "$(count "$out" "^<class 'torch.nn.attention.bias.CausalBias'>$")" -eq 2 ]
check "sdpa: upper-left mask" has "$out" "tensor([[ True, False, False, False, False, False, False, False, False, False],"$'\n'"        [ True,  True, False, False, False, False, False, False, False, False]])"
check "sdpa: lower-right mask" has "$out" "tensor([[ True,  True,  True,  True,  True,  True,  True,  True,  True, False],"$'\n'"        [ True,  True,  True,  True,  True,  True,  True,  True,  True,  True]])"
check "sdpa: upper left is is_causal" has "$out" "upper-left bias equals is_causal: true"

# ---- visualizing_gradients ----
out=$(VG_EPOCHS=3 "$bin" "$dir/visualizing_gradients/main.lua" 2>&1)
check "visualizing_gradients: exit 0" [ $? -eq 0 ]
check "visualizing_gradients: the BatchNorm block" has "$out" "  (1): BatchNorm1d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
check "visualizing_gradients: the Identity block" has "$out" "  (1): Identity()"
rows=$(sed -n '/^Layer depth/,$p' <<<"$out" | tail -n +2)
check "visualizing_gradients: 10 layer rows" [ "$(count "$rows" '^[0-9] +[0-9.e+-]+ +[0-9.e+-]+ *$')" -eq 10 ]
first_nobn=$(awk 'NR == 1 { print $3 }' <<<"$rows") last_nobn=$(awk 'NR == 10 { print $3 }' <<<"$rows")
first_bn=$(awk 'NR == 1 { print $2 }' <<<"$rows")
check "visualizing_gradients: without BatchNorm the gradient vanishes toward the input ($first_nobn << $last_nobn)" awk_true "$first_nobn * 20 < $last_nobn"
check "visualizing_gradients: BatchNorm keeps it larger at the input ($first_bn > $first_nobn)" awk_true "$first_bn > 5 * $first_nobn"

finish
