-- The network of pytorch/tutorials intermediate_source/visualizing_gradients_tutorial.py:
-- num_layers blocks of Linear -> norm (BatchNorm1d or Identity) -> Sigmoid, then a Linear.
local torch = require "torch"
local nn = torch.nn

local M = {}

function M.fc_layer(in_size, out_size, norm_layer)
  return nn.Sequential(nn.Linear(in_size, out_size), norm_layer(out_size), nn.Sigmoid())
end

local Net = nn.Module:extend("Net")
M.Net = Net

-- Net({in_size=784, hidden_size=128, out_size=10, num_layers=3, batchnorm=false})
function Net:__init(opts)
  opts = opts or {}
  local in_size, hidden_size = opts.in_size or 28 * 28, opts.hidden_size or 128
  local out_size, num_layers = opts.out_size or 10, opts.num_layers or 3
  local norm_layer
  if not opts.batchnorm then
    norm_layer = nn.Identity
  else
    norm_layer = nn.BatchNorm1d
  end

  local layers = {}
  layers[#layers + 1] = M.fc_layer(in_size, hidden_size, norm_layer)

  for _ = 1, num_layers - 1 do
    layers[#layers + 1] = M.fc_layer(hidden_size, hidden_size, norm_layer)
  end

  layers[#layers + 1] = nn.Linear(hidden_size, out_size)

  self.layers = nn.Sequential(table.unpack(layers))
end

function Net:forward(x)
  x = torch.flatten(x, 1)
  return self.layers(x)
end

return M
