-- The Sequence model of pytorch/examples time_sequence_prediction/train.py: two LSTM cells
-- (1 -> 51 -> 51) and a Linear 51 -> 1 read a batch of sequences one value at a time; with
-- future = n it then feeds its own output back for n more values. The states are float64
-- zeros on the input's device (the original makes them on the CPU).
local torch = require "torch"
local nn = torch.nn

local Sequence = nn.Module:extend("Sequence")

function Sequence:__init()
  nn.Module.__init(self)
  self.lstm1 = nn.LSTMCell(1, 51)
  self.lstm2 = nn.LSTMCell(51, 51)
  self.linear = nn.Linear(51, 1)
end

function Sequence:forward(input, future)
  future = future or 0
  local outputs = {}
  local opts = { dtype = torch.double, device = input.device }
  local h_t = torch.zeros(input:size(0), 51, opts)
  local c_t = torch.zeros(input:size(0), 51, opts)
  local h_t2 = torch.zeros(input:size(0), 51, opts)
  local c_t2 = torch.zeros(input:size(0), 51, opts)
  local output
  for _, input_t in ipairs(input:split(1, 1)) do
    h_t, c_t = self.lstm1(input_t, { h_t, c_t })
    h_t2, c_t2 = self.lstm2(h_t, { h_t2, c_t2 })
    output = self.linear(h_t2)
    outputs[#outputs + 1] = output
  end
  for _ = 1, future do -- predict the future from the model's own outputs
    h_t, c_t = self.lstm1(output, { h_t, c_t })
    h_t2, c_t2 = self.lstm2(h_t, { h_t2, c_t2 })
    output = self.linear(h_t2)
    outputs[#outputs + 1] = output
  end
  return torch.cat(outputs, 1)
end

return { Sequence = Sequence }
