-- Parity of scripts/examples/time_sequence_prediction with PyTorch, nnrepl's side (see
-- time_sequence_prediction.py): the port's Sequence model in float64, K L-BFGS steps (lr 0.8, a
-- closure per step, as train.py) on the sine waves of DIR/time_sequence_prediction_data.safetensors
-- from the weights of _init.safetensors; writes the loss of every closure call to
-- _nnrepl_losses.txt and the final weights to _nnrepl_final.safetensors.
--   nnrepl tests/gpu/examples/time_sequence_prediction.lua DIR [cuda|cpu] [--generate] [--steps K]
-- --generate first writes the init and data files from nnrepl itself when they are missing.
local torch = require "torch"
local argparse = require "argparse"
local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/../../../scripts/examples/time_sequence_prediction/?.lua;" .. package.path
local Sequence = require("model").Sequence

local parser = argparse.ArgumentParser()
parser:add_argument("dir")
parser:add_argument("device", { nargs = "?", default = "cpu" })
parser:add_argument("--generate", { action = "store_true" })
parser:add_argument("--steps", { type = "int", default = 3 })
local args = parser:parse_args()
local name = "time_sequence_prediction"
local function path(what) return args.dir .. "/" .. name .. "_" .. what end

-- 6 waves of 51 points at fixed phases (the .py's make_data); train on the last 3
local function make_data()
  local phase = torch.tensor({ { -37 }, { 5 }, { 61 }, { -70 }, { 22 }, { 48 } })
  return torch.sin((torch.arange(51):unsqueeze(0) + phase):double() / 1.0 / 20)
end

if args.generate and not io.open(path("data.safetensors"), "rb") then
  torch.manual_seed(0)
  local seq = Sequence()
  seq:double()
  torch.save(seq:state_dict(), path("init.safetensors"), { format = "safetensors" })
  torch.save({ data = make_data() }, path("data.safetensors"), { format = "safetensors" })
end

local device = args.device
local seq = Sequence()
seq:double()
seq:load_state_dict(torch.load(path("init.safetensors")))
seq:to(device)
local data = torch.load(path("data.safetensors")).data:to(device)
local input, target = data["3:, :-1"], data["3:, 1:"]
local criterion = torch.nn.MSELoss()
local optimizer = torch.optim.LBFGS(seq:parameters(), { lr = 0.8 })
local losses = {}
for _ = 1, args.steps do
  optimizer:step(function()
    optimizer:zero_grad()
    local loss = criterion(seq(input), target)
    losses[#losses + 1] = loss:item()
    loss:backward()
    return loss
  end)
end
local f = assert(io.open(path("nnrepl_losses.txt"), "w"))
for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
f:close()
torch.save(seq:state_dict(), path("nnrepl_final.safetensors"), { format = "safetensors" })
print(string.format("nnrepl %s: %d closure calls over %d steps, loss %.6g -> %.6g", name, #losses, args.steps,
  losses[1], losses[#losses]))
