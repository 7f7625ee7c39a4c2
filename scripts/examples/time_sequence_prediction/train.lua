-- pytorch/examples time_sequence_prediction/train.py in Lua: the Sequence model (model.lua,
-- two LSTM cells and a Linear, float64) learns 97 sine waves with L-BFGS (lr 0.8, a closure
-- per step); after each step it extends the 3 held-out waves 1000 values into the future.
--
--   build/nnrepl scripts/examples/time_sequence_prediction/generate_sine_wave.lua
--   build/nnrepl scripts/examples/time_sequence_prediction/train.lua [--steps 15]
--
-- Reads traindata.pt from the current folder (write it with generate_sine_wave.lua first;
-- without it torch.load fails naming the missing file). Prints "STEP: i", one "loss: x" per
-- closure call and "test loss: x" per step, as the original does.
-- Differences from the original: nnrepl has no plotting library, so instead of predict%d.pdf
-- each step writes predict%d.txt: a "#" header line, then one line per time index
-- "t y0 y1 y2" with the 3 test waves' outputs (t < 999: the model following the wave,
-- t >= 999: its own prediction, the original's dashed lines). With --device cuda (not in the
-- original) it runs on the GPU.
local torch = require "torch"
local nn, optim = torch.nn, torch.optim
local argparse = require "argparse"
local Sequence = require("model").Sequence
local repr = argparse.float_repr -- Python's print of a float

local parser = argparse.ArgumentParser()
parser:add_argument("--steps", { type = "int", default = 15, help = "steps to run" })
parser:add_argument("--device", { default = "cpu", help = "cpu or cuda (not in the original)" })
local opt = parser:parse_args()
-- set random seed to 0
torch.manual_seed(0)
-- load data and make training set
local data = torch.load("traindata.pt"):to(opt.device)
local input = data["3:, :-1"]
local target = data["3:, 1:"]
local test_input = data[":3, :-1"]
local test_target = data[":3, 1:"]
-- build the model
local seq = Sequence()
seq:double()
seq:to(opt.device)
local criterion = nn.MSELoss()
-- L-BFGS: the whole training set is one batch
local optimizer = optim.LBFGS(seq:parameters(), { lr = 0.8 })
-- begin to train
for i = 0, opt.steps - 1 do
  print("STEP:  " .. i)
  local function closure()
    optimizer:zero_grad()
    local out = seq(input)
    local loss = criterion(out, target)
    print("loss: " .. repr(loss:item()))
    loss:backward()
    return loss
  end
  optimizer:step(closure)
  -- predict, without tracking gradients
  local future = 1000
  local y
  do
    local _ <close> = torch.no_grad()
    local pred = seq(test_input, future)
    local loss = criterion(pred[":, :-" .. future], test_target)
    print("test loss: " .. repr(loss:item()))
    y = pred:detach():cpu():tolist()
  end
  -- write the fitted and predicted values (the original plots them)
  local f = assert(io.open(string.format("predict%d.txt", i), "w"))
  f:write(string.format("# t y0 y1 y2; t < %d: fitted to the input, t >= %d: predicted\n", input:size(1), input:size(1)))
  for t = 1, #y[1] do
    f:write(string.format("%d %.17g %.17g %.17g\n", t - 1, y[1][t], y[2][t], y[3][t]))
  end
  f:close()
end
