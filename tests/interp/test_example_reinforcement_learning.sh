#!/usr/bin/env bash
# pytorch/examples reinforcement_learning in Lua (scripts/examples/reinforcement_learning):
# cartpole.lua's CartPole-v1 against steps of the equations worked by hand (closed forms at
# angle 0, pi/2 and pi/3), its termination, truncation, seeded reset and errors; then
# reinforce.lua and actor_critic.lua end to end with the environment's reward threshold
# lowered from 475 to 60 (a driver replaces it; a random policy's running reward stays near
# 22, so reaching 60 means the policy learned): exit status, the log and "Solved!" lines,
# the same output twice for one seed, --help, a bad flag and --render's error.
# Usage: bash tests/interp/test_example_reinforcement_learning.sh build/nnrepl
bin=${1:?usage: test_example_reinforcement_learning.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/examples/reinforcement_learning
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- the environment: each line printed is "ok NAME" or "bad NAME: detail" ----
cat >"$tmp/env.lua" <<'LUA'
package.path = os.getenv("RL_DIR") .. "/?.lua;" .. package.path
local gym = require "cartpole"
local function say(ok, name, detail) print((ok and "ok " or "bad ") .. name .. (ok and "" or ": " .. tostring(detail))) end
local function near(a, b, tol) return math.abs(a - b) <= (tol or 1e-12) * math.max(1, math.abs(b)) end
local function state_is(env, obs, want, name)
  local ok = obs.dtype == torch.float32 and obs:dim() == 1 and obs:size(0) == 4
  for i = 1, 4 do
    ok = ok and near(env.state[i], want[i]) and near(obs[i - 1]:item(), want[i], 1e-6)
  end
  say(ok, name, string.format("state %s, want {%.17g, %.17g, %.17g, %.17g}", obs, table.unpack(want)))
end

local env = gym.make("CartPole-v1")
say(env.spec.reward_threshold == 475 and env.spec.max_episode_steps == 500, "spec", env.spec.reward_threshold)
local ok, err = pcall(env.step, env, 1)
say(not ok and tostring(err):find("before calling env:reset", 1, true), "step before reset", err)

-- reset: seeded, in [-0.05, 0.05], repeatable; without a seed the stream goes on
local s1, info = env:reset({ seed = 543 })
local a = s1:tolist()
say(type(info) == "table" and s1.dtype == torch.float32 and s1:abs():max():item() <= 0.05 and s1:abs():min():item() > 0,
  "reset in [-0.05, 0.05]", s1)
local s2 = env:reset()
local s3 = env:reset({ seed = 543 })
local s4 = env:reset({ seed = 544 })
say(torch.equal(s1, s3) and not torch.equal(s1, s2) and not torch.equal(s1, s4), "seeded reset", tostring(s2) .. tostring(s3))

-- at rest, push right: temp = 10/1.1, thetaacc = -temp / (0.5 (4/3 - 0.1/1.1)) = -600/41,
-- xacc = temp - 0.05 thetaacc / 1.1 = 400/41; Euler: velocities +0.02 acc, positions +0.02 old velocity
env.state = { 0, 0, 0, 0 }
local obs, reward, terminated, truncated, info2 = env:step(1)
state_is(env, obs, { 0, 8 / 41, 0, -12 / 41 }, "step at rest, push right")
say(reward == 1 and terminated == false and truncated == false and type(info2) == "table", "reward 1, going on")
-- then push left (the angle is still 0): the accelerations flip sign, the velocities return to 0
obs = env:step(0)
state_is(env, obs, { 0.16 / 41, 0, -0.24 / 41, 0 }, "then push left")
-- a tensor action works as well
env.state = { 0, 0, 0, 0 }
obs = env:step(torch.tensor(1))
state_is(env, obs, { 0, 8 / 41, 0, -12 / 41 }, "tensor action")

-- pole horizontal (pi/2), spinning at 2 rad/s, push right: sin 1, cos 0:
-- temp = (10 + 0.05 * 4) / 1.1 = 102/11, thetaacc = 9.8 / (0.5 * 4/3) = 14.7, xacc = temp
env:reset()
env.state = { 0.5, 1, math.pi / 2, 2 }
obs, reward, terminated = env:step(1)
state_is(env, obs, { 0.52, 1 + 0.02 * 102 / 11, math.pi / 2 + 0.04, 2 + 0.02 * 14.7 }, "pole horizontal")
say(terminated == true and reward == 1, "angle past 12 degrees terminates, reward 1", terminated)
obs, reward, terminated = env:step(0)
say(terminated == true and reward == 0, "a step after termination gives reward 0", reward)

-- pi/3 at rest, push left: sin sqrt(3)/2, cos 1/2; temp = -100/11,
-- thetaacc = (4.9 sqrt 3 + 0.5 * 100/11) / (0.5 (4/3 - 0.1 * 0.25 / 1.1)) = (4.9 sqrt 3 + 50/11) * 264/173,
-- xacc = temp - 0.05 * thetaacc * 0.5 / 1.1 = -100/11 - thetaacc/44
env:reset()
env.state = { -1, 0.25, math.pi / 3, 0 }
local thetaacc = (4.9 * math.sqrt(3) + 50 / 11) * 264 / 173
obs = env:step(0)
state_is(env, obs, { -1 + 0.005, 0.25 + 0.02 * (-100 / 11 - thetaacc / 44), math.pi / 3, 0.02 * thetaacc }, "pi/3, push left")

-- the limits: 12 degrees and 2.4, either side
for _, c in ipairs({ { { 2.39, 1, 0, 0 }, "x > 2.4" }, { { -2.39, -1, 0, 0 }, "x < -2.4" },
                     { { 0, 0, 0.2, 1 }, "theta > 12 degrees" }, { { 0, 0, -0.2, -1 }, "theta < -12 degrees" },
                     { { 2.3, 1, 0.19, 0.1 }, "inside both" } }) do
  env:reset()
  env.state = c[1]
  local _, _, term = env:step(1)
  say(term == (c[2] ~= "inside both"), "termination: " .. c[2], term)
end

-- truncation after 500 steps (held at rest so that it never terminates)
env:reset()
local truncs = {}
for t = 1, 501 do
  env.state = { 0, 0, 0, 0 }
  local _, _, term, trunc = env:step(t % 2)
  if term then truncs[#truncs + 1] = "term" .. t end
  if trunc then truncs[#truncs + 1] = t end
end
say(truncs[1] == 500 and truncs[2] == 501 and #truncs == 2, "truncated from step 500", table.concat(truncs, ","))
env:reset()
say(env.elapsed_steps == 0, "reset restarts the step count", env.elapsed_steps)

-- errors
for _, c in ipairs({ { function() env:step(2) end, "invalid action 2" },
                     { function() env:step(0.5) end, "invalid action 0.5" },
                     { function() env:reset({ sed = 1 }) end, "unknown option 'sed'" },
                     { function() gym.make("CartPole-v0") end, "unknown environment 'CartPole-v0'" },
                     { function() gym.make("CartPole-v1", { render_mode = "human" }) end, "render_mode 'human' is not supported" } }) do
  local ok2, e = pcall(c[1])
  say(not ok2 and tostring(e):find(c[2], 1, true), "error: " .. c[2], e)
end
LUA
out=$(RL_DIR=$dir "$bin" "$tmp/env.lua" 2>"$tmp/env.err")
check "cartpole checks ran ($(cat "$tmp/env.err"))" [ "$(grep -c '^ok ' <<<"$out")" -eq 24 ]
while IFS= read -r line; do
  check "cartpole: ${line#* }" test "${line%% *}" = ok
done <<<"$out"
check "warning after termination" grep -q "already returned terminated = true" "$tmp/env.err"

# ---- the two programs, solved at a running reward of 60 ----
cat >"$tmp/driver.lua" <<'LUA'
local script, threshold = ...
package.path = script:match("^(.*)/") .. "/?.lua;" .. package.path
local gym = require "cartpole"
local make = gym.make
gym.make = function(id, opts)
  local env = make(id, opts)
  env.spec.reward_threshold = tonumber(threshold)
  return env
end
assert(loadfile(script))(select(3, ...))
LUA
for name in reinforce actor_critic; do
  out=$(cd "$tmp" && timeout 120 "$bin" "$tmp/driver.lua" "$dir/$name.lua" 60 --log-interval 5 2>"$tmp/$name.err")
  rc=$?
  check "$name: exit 0 ($(head -c 300 "$tmp/$name.err"))" [ "$rc" -eq 0 ]
  logs=$(grep -c . <<<"$out")
  check "$name: every line a log line or the last one Solved ($out)" \
    test "$(grep -cE $'^Episode [0-9]*[05]\tLast reward: [0-9]+\\.00\tAverage reward: [0-9]+\\.[0-9]{2}$' <<<"$out")" -eq $((logs - 1))
  check "$name: first log at episode 5" matches "$(head -n 1 <<<"$out")" $'^Episode 5\t'
  last=$(tail -n 1 <<<"$out")
  check "$name: solved line ($last)" matches "$last" \
    '^Solved! Running reward is now 6[0-9]\.[0-9]+ and the last episode runs to [0-9]+ time steps!$'
  first=$(head -n 1 <<<"$out" | sed -nE 's/.*Average reward: ([0-9.]+)$/\1/p')
  final=$(sed -nE 's/^Solved! Running reward is now ([0-9.]+) .*/\1/p' <<<"$out")
  check "$name: running reward rose from $first past 60 ($final)" awk -v a="$first" -v b="$final" 'BEGIN { exit !(a != "" && b > 60 && b > a) }'
done
again=$(cd "$tmp" && timeout 120 "$bin" "$tmp/driver.lua" "$dir/actor_critic.lua" 60 --log-interval 5 2>&1)
check "actor_critic: the same seed gives the same run" test "$again" = "$out"
other=$(cd "$tmp" && timeout 120 "$bin" "$tmp/driver.lua" "$dir/actor_critic.lua" 60 --log-interval 5 --seed 1 2>&1)
check "actor_critic: another seed another run" test "$other" != "$out"

for name in reinforce actor_critic; do
  help=$("$bin" "$dir/$name.lua" --help 2>&1)
  check "$name --help" matches "$help" 'usage: .*\[--gamma G\] \[--seed N\] \[--render\]'
  check "$name --help: log interval" has "$help" "interval between training status logs (default: 10)"
  bad=$("$bin" "$dir/$name.lua" --gama 0.9 2>&1); rc=$?
  check "$name: bad flag exits 2 ($bad)" [ "$rc" -eq 2 ]
  check "$name: bad flag named" has "$bad" "unrecognized arguments: --gama"
  render=$("$bin" "$dir/$name.lua" --render 2>&1); rc=$?
  check "$name --render: error ($render)" [ "$rc" -ne 0 ]
  check "$name --render: says not supported" has "$render" "render_mode 'human' is not supported"
done

finish
