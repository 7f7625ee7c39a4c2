-- The CharRNN of pytorch/tutorials intermediate_source/char_rnn_classification_tutorial.py: an
-- nn.RNN reads a name's one-hot letters, its last hidden state goes through a Linear layer and
-- LogSoftmax. Used by main.lua and tests/gpu/tutorials/char_rnn_classification.lua.
local CharRNN = nn.Module:extend("CharRNN")

function CharRNN:__init(input_size, hidden_size, output_size)
  self.rnn = nn.RNN(input_size, hidden_size)
  self.h2o = nn.Linear(hidden_size, output_size)
  self.softmax = nn.LogSoftmax({ dim = 1 })
end

function CharRNN:forward(line_tensor)
  local rnn_out, hidden = self.rnn(line_tensor)
  local output = self.h2o(hidden[0])
  output = self.softmax(output)
  return output
end

return CharRNN
