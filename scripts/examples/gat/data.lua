-- pytorch/examples gat/main.py's load_cora: the Cora graph (read as ../gcn/data.lua reads it)
-- with row-normalised features and the adjacency A + I, both dense (the attention masks with
-- it). cora_tensors is the part after reading (the parity test calls it on its data file).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local read_cora = dofile(here .. "/../gcn/data.lua").read_cora
local M = { read_cora = read_cora }

function M.cora_tensors(features, labels, edges, device)
  local scale_vector = torch.sum(features, 1) -- each node's feature count
  scale_vector = 1 / scale_vector
  scale_vector[scale_vector:eq(math.huge)] = 0 -- nodes without features stay zero
  scale_vector = torch.diag(scale_vector):to_sparse()
  features = scale_vector:matmul(features)

  local V = labels:size(0)
  local E = edges:size(0)
  local adj_mat = torch.sparse_coo_tensor(edges:t(), torch.ones(E), { V, V }, { dtype = torch.int64 })
  adj_mat = torch.eye(V) + adj_mat -- self-loops; dense

  return features:to(device), labels:to(device), adj_mat:to(device)
end

function M.load_cora(path, device)
  local features, labels, edges = read_cora(path or "./cora")
  return M.cora_tensors(features, labels, edges, device or "cpu")
end

return M
