-- pytorch/examples mnist_rnn's Net: an LSTM reads a 28x28 image one row at a time; its last
-- output goes through BatchNorm1d, two Linear layers and log_softmax. Used by main.lua and by
-- tests/gpu/examples/mnist_rnn.lua.
local Net = nn.Module:extend("Net")

function Net:__init()
  self.rnn = nn.LSTM({ input_size = 28, hidden_size = 64, batch_first = true })
  self.batchnorm = nn.BatchNorm1d(64)
  self.dropout1 = nn.Dropout2d(0.25)
  self.dropout2 = nn.Dropout2d(0.5)
  self.fc1 = nn.Linear(64, 32)
  self.fc2 = nn.Linear(32, 10)
end

function Net:forward(input)
  -- (batch, 1, 28, 28) -> (batch, 28, 28): 28 steps of 28 pixels, batch first
  input = input:reshape(-1, 28, 28)
  local output = self.rnn(input) -- the second result, (h, c), is not needed

  -- the output at the last step: (batch, 64)
  output = output[":, -1, :"]
  output = self.batchnorm(output)
  output = self.dropout1(output) -- on a 2-D input Dropout2d drops single values (with a warning), as in PyTorch
  output = self.fc1(output)
  output = F.relu(output)
  output = self.dropout2(output)
  output = self.fc2(output)
  output = F.log_softmax(output, { dim = 1 })
  return output
end

return Net
