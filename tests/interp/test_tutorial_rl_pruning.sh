#!/usr/bin/env bash
# scripts/tutorials/reinforcement_q_learning (DQN on CartPole-v1) and pruning_tutorial.lua end
# to end: the DQN's printed lines and their agreement, the same seed giving the same run, one
# optimize_model step and one soft update against values worked out by hand, the Lua half of
# the parity pair (--generate); the pruning tutorial's prints (state_dict keys, mask buffers,
# hooks, the global sparsity of round(0.2 * 59838) / 59838, the custom method's mask).
# Usage: bash tests/interp/test_tutorial_rl_pruning.sh build/nnrepl
bin=${1:?usage: test_tutorial_rl_pruning.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dqn=$root/scripts/tutorials/reinforcement_q_learning
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- reinforcement_q_learning ----
out=$("$bin" "$dqn/main.lua" --num-episodes 12 --seed 1 2>&1); rc=$?
check "dqn runs" test "$rc" -eq 0
check "dqn: 12 episode lines" test "$(count "$out" '^Training\.\.\. episode [0-9]+: duration [0-9]+$')" -eq 12
check "dqn: Complete" has "$out" "Complete"
last=$(grep '^Training' <<<"$out" | tail -1 | sed 's/.*duration //')
check "dqn: the result is the last episode" has "$out" "Result: episode 12: duration $last"
again=$("$bin" "$dqn/main.lua" --num-episodes 12 --seed 1 2>&1)
check "dqn: the same seed, the same run" test "$out" = "$again"
out=$("$bin" "$dqn/main.lua" --num-episodes x 2>&1); rc=$?
check "dqn: a bad flag fails" test "$rc" -ne 0
check "dqn: and says why" has "$out" "argument --num-episodes: invalid int value: 'x'"

# policy Q = (1, 2) everywhere, target Q = (3, 0.5): targets 1 + 0.99 * 3 = 3.97 (a=0) and 1
# (final, a=1); Huber mean ((2.97 - 0.5) + 0.5 * 1^2) / 2 = 1.485. Soft update: 0.005 p + 0.995 t.
out=$(cd "$dqn" && "$bin" -e '
  local m = require "model"
  local function net(b)
    local n = m.DQN(4, 2)
    torch.no_grad(function()
      for _, p in ipairs(n:parameters()) do p:zero_() end
      n.layer3.bias:copy_(torch.tensor(b))
    end)
    return n
  end
  local policy, target = net({ 1, 2 }), net({ 3, 0.5 })
  local s = torch.ones(1, 4)
  local batch = { m.Transition(s, torch.tensor({ { 0 } }), s, torch.tensor({ 1.0 })),
                  m.Transition(s, torch.tensor({ { 1 } }), nil, torch.tensor({ 1.0 })) }
  local opt = optim.AdamW(policy:parameters(), { lr = 0.1, amsgrad = true })
  print(string.format("loss %.6f", m.optimize_transitions(batch, policy, target, opt, 0.99, "cpu")))
  local p = policy.layer3.bias:tolist()
  m.soft_update(target, policy, 0.005)
  local t = target.layer3.bias:tolist()
  print(string.format("soft %.6f %.6f", t[1] - (0.005 * p[1] + 0.995 * 3), t[2] - (0.005 * p[2] + 0.995 * 0.5)))
  print(string.format("step %.4f %.4f", p[1] - 1, p[2] - 2))' 2>&1)
check "optimize_model's loss by hand" has "$out" "loss 1.485000"
check "soft update by hand" has "$out" "soft 0.000000 0.000000"
# AdamW's first step: decay by lr * 0.01, then lr against the gradient's sign (Q(a=0) = 1 is
# below 3.97, Q(a=1) = 2 above 1): 1 * 0.999 + 0.1 and 2 * 0.999 - 0.1
check "the step moves each Q towards its target" has "$out" "step 0.0990 -0.1020"

# ReplayMemory.sample is random.sample over the deque, oldest first. python3: m = deque([], maxlen=5);
# [m.append(i) for i in range(1, 9)]; random.seed(0); random.sample(m, 3), random.sample(m, 5)
out=$(cd "$dqn" && "$bin" -e '
  local m, random = require "model", require "random"
  local mem = m.ReplayMemory(5)
  for i = 1, 8 do mem:push(i) end
  random.seed(0)
  local line = {}
  for _, k in ipairs({ 3, 5 }) do
    for _, t in ipairs(mem:sample(k)) do line[#line + 1] = t.state end
  end
  print("sampled " .. table.concat(line, " "))' 2>&1)
check "replay memory samples as Python's random.sample on a deque" has "$out" "sampled 7 8 4 6 7 5 8 4"

out=$("$bin" "$root/tests/gpu/tutorials/reinforcement_q_learning.lua" "$tmp/par" cpu --generate 2>&1); rc=$?
check "parity lua half runs" test "$rc" -eq 0
check "parity files" test -s "$tmp/par/reinforcement_q_learning_nnrepl_final.safetensors"
check "parity: 12 losses" test "$(wc -l <"$tmp/par/reinforcement_q_learning_nnrepl_losses.txt")" -eq 12
check "parity: the loss falls" less "$(tail -1 "$tmp/par/reinforcement_q_learning_nnrepl_losses.txt")" \
  "$(head -1 "$tmp/par/reinforcement_q_learning_nnrepl_losses.txt")"

# ---- pruning_tutorial ----
out=$("$bin" "$root/scripts/tutorials/pruning_tutorial.lua" 2>&1); rc=$?
check "pruning runs" test "$rc" -eq 0
check "pruning: one hook" matches "$out" '^OrderedDict\(\{0: <torch\.nn\.utils\.prune\.RandomUnstructured object at 0x[0-9a-f]+>\}\)$'
check "pruning: two hooks" matches "$out" '^OrderedDict\(\{0: <[^>]*RandomUnstructured[^>]*>, 1: <torch\.nn\.utils\.prune\.L1Unstructured object at 0x[0-9a-f]+>\}\)$'
check "pruning: container history" matches "$out" '^\[<torch\.nn\.utils\.prune\.RandomUnstructured object at 0x[0-9a-f]+>, <torch\.nn\.utils\.prune\.LnStructured object at 0x[0-9a-f]+>\]$'
check "pruning: bias, 3 of 6 zero" test "$(grep -A1 '^tensor(\[-\?0\.[0-9]*, ' <<<"$out" | grep -m1 -B1 'grad_fn=<MulBackward0>' | grep -o '0\.0000' | wc -l)" -eq 3
check "pruning: state_dict keys" has "$out" "odict_keys(['conv1.weight_orig', 'conv1.bias_orig', 'conv1.weight_mask', 'conv1.bias_mask', 'conv2.weight', 'conv2.bias', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'fc3.weight', 'fc3.bias'])"
check "pruning: after remove" has "$out" "[('bias_mask', tensor([1., 1., 1., 0., 0., 0.]$(device_suffix "$bin")))]"
check "pruning: masks of the new model" has "$out" "dict_keys(['conv1.weight_mask', 'conv2.weight_mask', 'fc1.weight_mask', 'fc2.weight_mask', 'fc3.weight_mask'])"
check "pruning: 5 sparsity lines" test "$(count "$out" '^Sparsity in (conv[12]|fc[123])\.weight: [0-9]+\.[0-9]{2}%$')" -eq 5
check "pruning: global sparsity" has "$out" "Global sparsity: 20.00%"
check "pruning: custom method" has "$out" "tensor([0., 1., 0., 1., 0., 1., 0., 1., 0., 1.])"
finish
