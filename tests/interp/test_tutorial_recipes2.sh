#!/usr/bin/env bash
# More PyTorch recipes' ports (scripts/tutorials/recipes/), run in a scratch folder at small sizes.
# profiler_recipe: call counts worked out from ResNet-18's definition (20 convolutions and batch
# norms; 17 ReLUs: the stem's and two per basic block; 28 adds: 8 residual sums and, in training
# mode, each batch norm's num_batches_tracked += 1), the traces read back as JSON by python3
# (skipped without it), and the schedule's traces where wait=1, warmup=1, active=2 ends a cycle
# (after steps 4 and 8).
# Usage: bash tests/interp/test_tutorial_recipes2.sh build/nnrepl
bin=${1:?usage: test_tutorial_recipes2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/recipes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"
skipped=0

# ---- profiler_recipe: without a GPU the recipe stops after section 3 ----
export RECIPE_PROFILER_BATCH=1 RECIPE_PROFILER_SIZE=64
if [ "$(device_of "$bin")" = cpu ]; then
  out=$(cd "$tmp" && "$bin" "$dir/profiler_recipe.lua" 2>"$tmp/err")
  check "profiler: exit 0 (no GPU)" [ $? -eq 0 ] || cat "$tmp/err"
  check "profiler: stops after two tables" [ "$(count "$out" '^Self CPU time total: ')" -eq 2 ]
  check "profiler: says why" [ "$(tail -n 1 <<<"$out")" = "Neither CUDA nor XPU devices are available to demonstrate profiling on acceleration devices" ]
fi
out=$(cd "$tmp" && RECIPE_PROFILER_DEVICE=cpu "$bin" "$dir/profiler_recipe.lua" 2>"$tmp/err")
check "profiler: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
row() { grep -E "^$1 " <<<"$out" | head -n 1 | awk '{print $NF}'; } # the first table's # of Calls
check "profiler: model_inference once, 100% of CPU total" matches "$out" '^model_inference +[0-9.]+% +[0-9.]+[mu]?s +100\.00% .* 1$'
check "profiler: 20 conv2d" [ "$(row conv2d)" = 20 ]
check "profiler: 20 batch_norm" [ "$(row batch_norm)" = 20 ]
check "profiler: 17 relu" [ "$(row relu)" = 17 ]
check "profiler: 28 add" [ "$(row add)" = 28 ]
check "profiler: the stem's input shapes" matches "$out" '^conv2d .* 1  \[\[1, 3, 64, 64\], \[64, 3, 7, 7\]\]$'
check "profiler: memory columns" has "$out" "CPU Mem  Self CPU Mem"
check "profiler: the stack table" has "$out" "Source Location"
check "profiler: 9 tables" [ "$(count "$out" '^Self CPU time total: ')" -eq 9 ]
check "profiler: the schedule's traces" [ -s "$tmp/trace_4.json" ] && [ -s "$tmp/trace_8.json" ] && [ ! -e "$tmp/trace_6.json" ]
if command -v python3 >/dev/null; then
  n=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["traceEvents"]; print(sum(1 for e in t if e.get("name") == "conv2d" and e.get("ph") == "X" and e.get("cat") == "cpu_op"))' "$tmp/trace.json")
  check "profiler: trace.json holds 20 conv2d ops ($n)" [ "$n" = 20 ]
  n=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["traceEvents"]; print(sorted({e["name"] for e in t if e["name"].startswith("ProfilerStep#")}))' "$tmp/trace_4.json")
  check "profiler: trace_4 records steps 2 and 3 ($n)" [ "$n" = "['ProfilerStep#2', 'ProfilerStep#3']" ]
  # the memory timeline: PyTorch's [times, sizes] (rows of 1 + 8 categories), ResNet-18's forward
  # holding memory at its peak, all of it freed or kept by the end (never negative)
  n=$(python3 -c 'import json, sys; t, s = json.load(open(sys.argv[1])); print(len(t) == len(s) > 0 and all(len(r) == 9 and r[0] == 0 and min(r) >= 0 for r in s) and max(r[8] for r in s) > 0 and t == sorted(set(t)))' "$tmp/memory_timeline.json")
  check "profiler: memory_timeline.json's layout ($n)" [ "$n" = True ]
else
  skipped=$((skipped + 3))
fi
check "profiler: the HTML timeline needs matplotlib, as PyTorch says" has "$out" "export_memory_timeline_html failed because matplotlib was not found."

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
