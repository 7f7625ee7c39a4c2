-- pytorch/examples gcn/main.py's layers and model, shared by main.lua and the parity test
-- (tests/gpu/examples/gcn.lua): `local model = require "model"` gives { GraphConv, GCN }.

-- A graph convolution (Kipf and Welling, Semi-Supervised Classification with Graph
-- Convolutional Networks): H' = A_hat (H W) (+ b), where A_hat is the normalised adjacency
-- D^-1/2 (A + I) D^-1/2, given sparse; H may be sparse too (the row-normalised features).
local GraphConv = nn.Module:extend("GraphConv")

function GraphConv:__init(input_dim, output_dim, use_bias)
  -- the weight W, called kernel as in the original
  self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
  nn.init.xavier_normal_(self.kernel)

  self.bias = nil
  if use_bias then
    self.bias = nn.Parameter(torch.Tensor(output_dim))
    nn.init.zeros_(self.bias)
  end
end

function GraphConv:forward(input_tensor, adj_mat)
  local support = torch.mm(input_tensor, self.kernel) -- H W (H sparse or dense)
  local output = torch.spmm(adj_mat, support) -- A_hat (H W)
  if self.bias ~= nil then
    output = output + self.bias
  end
  return output
end

-- Two graph convolutions with ReLU and dropout between them, log-probabilities out.
local GCN = nn.Module:extend("GCN")

function GCN:__init(input_dim, hidden_dim, output_dim, use_bias, dropout_p)
  if use_bias == nil then use_bias = true end
  self.gc1 = GraphConv(input_dim, hidden_dim, use_bias)
  self.gc2 = GraphConv(hidden_dim, output_dim, use_bias)
  self.dropout = nn.Dropout(dropout_p or 0.1)
end

function GCN:forward(input_tensor, adj_mat)
  local x = self.gc1(input_tensor, adj_mat)
  x = F.relu(x)
  x = self.dropout(x)
  x = self.gc2(x, adj_mat)
  return F.log_softmax(x, { dim = 1 })
end

return { GraphConv = GraphConv, GCN = GCN }
