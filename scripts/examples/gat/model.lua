-- pytorch/examples gat/main.py's layer and model, shared by main.lua and the parity test
-- (tests/gpu/examples/gat.lua): `local model = require "model"` gives { GraphAttentionLayer, GAT }.

-- A graph attention layer (Velickovic et al., Graph Attention Networks) with n_heads heads:
-- per head, e_ij = LeakyReLU(a^T [W h_i || W h_j]) over the edges of the (dense) adjacency,
-- alpha_ij = softmax_j(e_ij), h'_i = sum_j alpha_ij W h_j; the heads concatenated (concat) or
-- averaged.
local GraphAttentionLayer = nn.Module:extend("GraphAttentionLayer")

function GraphAttentionLayer:__init(in_features, out_features, n_heads, concat, dropout, leaky_relu_slope)
  self.n_heads = n_heads
  self.concat = concat or false
  self.dropout = dropout or 0.4

  if self.concat then -- the heads' outputs side by side
    self.out_features = out_features
    assert(out_features % n_heads == 0, "out_features must be a multiple of n_heads")
    self.n_hidden = out_features // n_heads
  else -- the heads' outputs averaged (as in the paper)
    self.n_hidden = out_features
  end

  -- the shared linear map W, every head's at once
  self.W = nn.Parameter(torch.empty({ in_features, self.n_hidden * n_heads }))
  -- each head's attention vector a: its first half scores the source, the second the target
  self.a = nn.Parameter(torch.empty({ n_heads, 2 * self.n_hidden, 1 }))

  self.leakyrelu = nn.LeakyReLU(leaky_relu_slope or 0.2)
  self.softmax = nn.Softmax({ dim = 1 })

  self:reset_parameters()
end

function GraphAttentionLayer:reset_parameters()
  nn.init.xavier_normal_(self.W)
  nn.init.xavier_normal_(self.a)
end

-- h_transformed: [n_heads, n_nodes, n_hidden] -> the scores e: [n_heads, n_nodes, n_nodes]
function GraphAttentionLayer:_get_attention_scores(h_transformed)
  local nh = self.n_hidden
  local source_scores = torch.matmul(h_transformed, self.a[":, :" .. nh .. ", :"])
  local target_scores = torch.matmul(h_transformed, self.a[":, " .. nh .. ":, :"])

  -- [n_heads, n_nodes, 1] + [n_heads, 1, n_nodes]
  local e = source_scores + target_scores.mT
  return self.leakyrelu(e)
end

function GraphAttentionLayer:forward(h, adj_mat)
  local n_nodes = h.shape[0]

  -- W h for every head: [n_nodes, n_hidden * n_heads]
  local h_transformed = torch.mm(h, self.W)
  h_transformed = F.dropout(h_transformed, self.dropout, { training = self.training })

  -- the heads first: [n_heads, n_nodes, n_hidden]
  h_transformed = h_transformed:view(n_nodes, self.n_heads, self.n_hidden):permute(1, 0, 2)

  local e = self:_get_attention_scores(h_transformed)

  -- no edge, no attention: a score of -9e16 vanishes in the softmax
  local connectivity_mask = -9e16 * torch.ones_like(e)
  e = torch.where(adj_mat:gt(0), e, connectivity_mask)

  local attention = F.softmax(e, { dim = -1 })
  attention = F.dropout(attention, self.dropout, { training = self.training })

  -- each node's new features: the attention-weighted sum of its neighbours'
  local h_prime = torch.matmul(attention, h_transformed)

  if self.concat then
    h_prime = h_prime:permute(1, 0, 2):contiguous():view(n_nodes, self.out_features)
  else
    h_prime = h_prime:mean(0)
  end

  return h_prime
end

-- Two attention layers: n_heads heads then ELU, then one head giving the class scores, as
-- log-probabilities.
local GAT = nn.Module:extend("GAT")

function GAT:__init(in_features, n_hidden, n_heads, num_classes, concat, dropout, leaky_relu_slope)
  concat, dropout, leaky_relu_slope = concat or false, dropout or 0.4, leaky_relu_slope or 0.2
  self.gat1 = GraphAttentionLayer(in_features, n_hidden, n_heads, concat, dropout, leaky_relu_slope)
  self.gat2 = GraphAttentionLayer(n_hidden, num_classes, 1, false, dropout, leaky_relu_slope)
end

function GAT:forward(input_tensor, adj_mat)
  local x = self.gat1(input_tensor, adj_mat)
  x = F.elu(x)
  x = self.gat2(x, adj_mat)
  return F.log_softmax(x, { dim = 1 })
end

return { GraphAttentionLayer = GraphAttentionLayer, GAT = GAT }
