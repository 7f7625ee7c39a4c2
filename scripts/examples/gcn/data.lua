-- pytorch/examples gcn/main.py's load_cora: the Cora citation graph from PATH/cora.content
-- (a line a paper: its id, 0/1 word features, its class name) and PATH/cora.cites (a line a
-- citation: cited id, citing id), as in https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz.
-- read_cora is np.genfromtxt's part (also used by ../gat/data.lua); cora_tensors the rest, from
-- tensors (the parity test calls it on the graph of its data file).
local M = {}

local function open(path)
  local f, err = io.open(path, "r")
  if not f then
    error(string.format("cannot open '%s' (%s): there is no download; put the Cora files cora.content and " ..
      "cora.cites (from cora.tgz) in that folder", path, err), 0)
  end
  return f
end

-- features: float32 [V, F] word counts; labels: int64 [V] (np.unique's order of the class
-- names: sorted); edges: int64 [E, 2] node positions (cited, citing)
function M.read_cora(path)
  local content_path = path .. "/cora.content"
  local cites_path = path .. "/cora.cites"

  local flat, names, ids, nfeat = {}, {}, {}, nil
  local f = open(content_path)
  for line in f:lines() do
    local fields = {}
    for w in line:gmatch("%S+") do fields[#fields + 1] = w end
    if #fields > 0 then
      if nfeat and #fields - 2 ~= nfeat then
        error(string.format("%s: line %d has %d columns, the first had %d", content_path, #ids + 1, #fields, nfeat + 2), 0)
      end
      nfeat = #fields - 2
      ids[#ids + 1] = fields[1]
      for k = 2, #fields - 1 do flat[#flat + 1] = tonumber(fields[k]) end
      names[#names + 1] = fields[#fields]
    end
  end
  f:close()
  local V = #ids
  if V == 0 then error(content_path .. ": no papers", 0) end
  local features = torch.tensor(flat, { dtype = torch.float32 }):view(V, nfeat)

  -- np.unique(..., return_inverse=True): sorted class names, each node's index among them
  local classes, seen = {}, {}
  for _, n in ipairs(names) do
    if not seen[n] then seen[n] = true; classes[#classes + 1] = n end
  end
  table.sort(classes)
  local class_index = {}
  for i, c in ipairs(classes) do class_index[c] = i - 1 end
  local label_list = {}
  for i, n in ipairs(names) do label_list[i] = class_index[n] end
  local labels = torch.tensor(label_list, { dtype = torch.int64 })

  -- paper id -> position (ids compared as integers, as the original's astype(np.int32))
  local idx_map = {}
  for pos, id in ipairs(ids) do idx_map[math.tointeger(tonumber(id)) or id] = pos - 1 end
  local edge_list = {}
  f = open(cites_path)
  local n = 0
  for line in f:lines() do
    local a, b = line:match("^%s*(%S+)%s+(%S+)")
    if a then
      n = n + 1
      local pa, pb = idx_map[math.tointeger(tonumber(a)) or a], idx_map[math.tointeger(tonumber(b)) or b]
      if pa == nil or pb == nil then
        error(string.format("%s: line %d cites paper %s, which is not in cora.content", cites_path, n, pa == nil and a or b), 0)
      end
      edge_list[#edge_list + 1] = pa
      edge_list[#edge_list + 1] = pb
    end
  end
  f:close()
  local edges = torch.tensor(edge_list, { dtype = torch.int64 }):view(-1, 2)
  return features, labels, edges
end

-- load_cora's first steps, the same in gat/main.py (../gat/data.lua uses them too): the
-- features scaled to unit row sums, and the adjacency plus self-loops, both dense
function M.scaled_features(features)
  local scale_vector = torch.sum(features, 1) -- each node's feature count
  scale_vector = 1 / scale_vector
  scale_vector[scale_vector:eq(math.huge)] = 0 -- nodes without features stay zero
  scale_vector = torch.diag(scale_vector):to_sparse()
  return scale_vector:matmul(features)
end
function M.adjacency(edges, V)
  local E = edges:size(0)
  local adj_mat = torch.sparse_coo_tensor(edges:t(), torch.ones(E), { V, V }, { dtype = torch.int64 })
  return torch.eye(V) + adj_mat -- self-loops
end

-- the features scaled to unit row sums (sparse), the labels, and the renormalised adjacency
-- D^-1/2 (A + I) D^-1/2 (sparse)
function M.cora_tensors(features, labels, edges, device)
  features = M.scaled_features(features)
  local adj_mat = M.adjacency(edges, labels:size(0))

  local degree_mat = torch.sum(adj_mat, 1)
  degree_mat = torch.sqrt(1 / degree_mat)
  degree_mat[degree_mat:eq(math.huge)] = 0
  degree_mat = torch.diag(degree_mat):to_sparse()

  adj_mat = degree_mat:matmul(adj_mat):matmul(degree_mat) -- the renormalisation trick

  return features:to_sparse():to(device), labels:to(device), adj_mat:to_sparse():to(device)
end

function M.load_cora(path, device)
  local features, labels, edges = M.read_cora(path or "./cora")
  return M.cora_tensors(features, labels, edges, device or "cpu")
end

return M
