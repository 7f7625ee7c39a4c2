-- Writes a small graph in Cora's format to DIR (cora.content: id, F 0/1 features, class name a
-- line; cora.cites: cited id, citing id a line) for the gcn and gat example tests:
--   nnrepl tests/interp/cora_tiny.lua DIR N F
-- Three classes; a feature k is usually on when k % 3 names the node's class, and most
-- citations join nodes of one class, so both the words and the graph predict the class.
-- Paper ids are not positions (1000 + 7 i), to test the id map.
local dir, N, F = ...
N, F = assert(math.tointeger(tonumber(N)), "N"), assert(math.tointeger(tonumber(F)), "F")
math.randomseed(7)
local names = { "Neural_Networks", "Theory", "Case_Based" }
local ids, cls = {}, {}
local f = assert(io.open(dir .. "/cora.content", "w"))
for i = 1, N do
  ids[i] = 1000 + i * 7
  cls[i] = (i * 5) % 3 + 1
  local row = { ids[i] }
  for k = 1, F do
    local on
    if k % 3 + 1 == cls[i] then on = math.random() < 0.5 else on = math.random() < 0.05 end
    row[#row + 1] = on and 1 or 0
  end
  row[#row + 1] = names[cls[i]]
  f:write(table.concat(row, "\t"), "\n")
end
f:close()
f = assert(io.open(dir .. "/cora.cites", "w"))
for i = 1, N do
  for _ = 1, 2 do
    local j = math.random(N)
    if cls[j] == cls[i] or math.random() < 0.2 then f:write(ids[j], "\t", ids[i], "\n") end
  end
end
f:close()
