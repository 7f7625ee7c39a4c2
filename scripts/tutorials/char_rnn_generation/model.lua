-- The RNN of pytorch/tutorials intermediate_source/char_rnn_generation_tutorial.py: from a
-- category, a letter and a hidden state, Linear layers give the next hidden state and the
-- log-probabilities of the next letter (o2o, dropout 0.1, LogSoftmax). Used by main.lua and
-- tests/gpu/tutorials/char_rnn_generation.lua.
--   local RNN = require("model")(n_categories)   -- the class; the tutorial's global n_categories
local function define(n_categories)
  local RNN = nn.Module:extend("RNN")

  function RNN:__init(input_size, hidden_size, output_size)
    self.hidden_size = hidden_size

    self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
    self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
    self.o2o = nn.Linear(hidden_size + output_size, output_size)
    self.dropout = nn.Dropout(0.1)
    self.softmax = nn.LogSoftmax({ dim = 1 })
  end

  function RNN:forward(category, input, hidden)
    local input_combined = torch.cat({ category, input, hidden }, 1)
    hidden = self.i2h(input_combined)
    local output = self.i2o(input_combined)
    local output_combined = torch.cat({ hidden, output }, 1)
    output = self.o2o(output_combined)
    output = self.dropout(output)
    output = self.softmax(output)
    return output, hidden
  end

  function RNN:initHidden()
    return torch.zeros(1, self.hidden_size)
  end

  return RNN
end

return define
