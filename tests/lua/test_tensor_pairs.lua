-- pairs(x) over a tensor: Python's enumerate(x), 0-based rows, 0-d tensors raise.
local T = ...

local function run(device)
  T.test("pairs over a tensor " .. device, function()
    local v = torch.tensor({ 1.5, -2.25, 3 }, { device = device })
    local seen = {}
    for i, w in pairs(v) do
      T.check(torch.is_tensor(w) and w:dim() == 0, "elements of a 1-D tensor are 0-dim tensors")
      seen[#seen + 1] = string.format("%d:%+.2f", i, w:item())
    end
    T.eq(table.concat(seen, " "), "0:+1.50 1:-2.25 2:+3.00", "1-D: every element, index from 0")
    local m = torch.arange(6, { device = device }):view(3, 2)
    local sums = {}
    for i, row in pairs(m) do sums[#sums + 1] = i .. "=" .. row:sum():item() end
    T.eq(table.concat(sums, " "), "0=1 1=5 2=9", "2-D: rows")
    for _, row in pairs(m) do row:mul_(2) end
    T.eq(m:sum():item(), 30, "rows are views, as in PyTorch")
    local n = 0
    for _ in pairs(torch.empty(0, 4, { device = device })) do n = n + 1 end
    T.eq(n, 0, "an empty first dimension gives no rows")
    local ok, err = pcall(function() for _ in pairs(torch.tensor(1.0, { device = device })) do end end)
    T.check(not ok and err:find("iteration over a 0-d tensor", 1, true), err)
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
