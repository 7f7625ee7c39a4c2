-- torch.where(condition) alone: the indices of the nonzero elements along each dimension, a
-- list of 1-D int64 tensors (PyTorch's tuple), checked against a plain Lua scan in row-major
-- order; 0-dim, empty and float conditions; the three-argument form unchanged; CPU and CUDA.
local T = ...

local function scan(c) -- coordinates of the nonzero entries of a nested Lua list, row-major
  local cols = {}
  local function walk(v, prefix)
    if type(v) == "table" then
      for i, x in ipairs(v) do
        local p = { table.unpack(prefix) }
        p[#p + 1] = i - 1
        walk(x, p)
      end
    elseif v ~= 0 and v ~= false then
      for d, k in ipairs(prefix) do cols[d] = cols[d] or {}; table.insert(cols[d], k) end
    end
  end
  walk(c, {})
  return cols
end

local function run(device)
  T.test("where(condition) " .. device, function()
    local g = torch.Generator():manual_seed(3)
    local c = torch.rand(3, 4, 2, { generator = g }):gt(0.5):to(device)
    local got = torch.where(c)
    T.eq(#got, 3, "one index tensor per dimension")
    local want = scan(c:to(torch.int64):cpu():tolist())
    for d = 1, 3 do
      T.eq(got[d].dtype, torch.int64, "int64")
      T.eq(got[d].device.type, device, "on the condition's device")
      T.eq(got[d]:cpu():tolist(), want[d], "dim " .. d)
    end
    T.eq(got[1]:numel(), c:sum():item(), "as many as the true elements")

    -- a float condition: nonzero values count, -0.0 does not
    local f = torch.tensor({ 0, 2.5, -0.0, -1, 0 }, { device = device })
    T.eq(torch.where(f)[1]:cpu():tolist(), { 1, 3 }, "float condition")
    -- nothing true: empty index tensors
    local none = torch.where(torch.zeros(2, 3, { dtype = torch.bool, device = device }))
    T.eq({ #none, none[1]:numel(), none[2]:numel() }, { 2, 0, 0 }, "empty")
    -- 0-dim: one index tensor, [0] or empty
    T.eq(torch.where(torch.tensor(true, { device = device }))[1]:cpu():tolist(), { 0 }, "0-dim true")
    T.eq(torch.where(torch.tensor(0, { device = device }))[1]:numel(), 0, "0-dim false")
    -- the three-argument form is unchanged
    T.eq(torch.where(torch.tensor({ true, false, true }, { device = device }), 1, 0):cpu():tolist(), { 1, 0, 1 },
      "three arguments")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 13) end

T.test("where errors", function()
  T.raises(function() return torch.where() end, "~where", "no argument")
  T.raises(function() return torch.where("x") end, "~where", "a string")
end)
