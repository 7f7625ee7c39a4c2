-- pytorch/examples gat/main.py's load_cora: the Cora graph (read and scaled by ../gcn/data.lua)
-- with row-normalised features and the adjacency A + I, both dense (the attention masks with
-- it). cora_tensors is the part after reading (the parity test calls it on its data file).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local gcn_data = dofile(here .. "/../gcn/data.lua")
local read_cora = gcn_data.read_cora
local M = { read_cora = read_cora }

function M.cora_tensors(features, labels, edges, device)
  features = gcn_data.scaled_features(features)
  local adj_mat = gcn_data.adjacency(edges, labels:size(0)) -- A + I, dense
  return features:to(device), labels:to(device), adj_mat:to(device)
end

function M.load_cora(path, device)
  local features, labels, edges = read_cora(path or "./cora")
  return M.cora_tensors(features, labels, edges, device or "cpu")
end

return M
