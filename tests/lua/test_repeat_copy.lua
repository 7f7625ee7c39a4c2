-- Tensor.repeat returns a new tensor as PyTorch's does (it could hand back a stride-0 view of
-- its input, which in-place ops then refused): values against a plain Lua loop, writes that do
-- not reach the input, float64 gradients by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local function check_on(device)
  local x = torch.tensor({ { { 1., 2. }, { 3., 4. } } }, { device = device }) -- [1, 2, 2]
  local r = x["repeat"](x, 3, 1, 1)
  T.eq(r:size(0), 3)
  T.check(r:is_contiguous(), device .. ": contiguous")
  for i = 0, 2 do
    for j = 0, 1 do
      for k = 0, 1 do T.eq(r[i][j][k]:item(), x[0][j][k]:item()) end
    end
  end
  r:div_(2) -- refused before: the three copies were one memory
  T.eq(r:sum():item(), 15.0, device .. ": in place on the repeat")
  T.eq(x:sum():item(), 10.0, device .. ": the input unchanged")
  local same = x["repeat"](x, 1, 1, 1) -- all ones: still a copy
  same:fill_(7)
  T.eq(x:sum():item(), 10.0, device .. ": repeat(1, 1, 1) is a copy")
  local y = torch.arange(6, { device = device }):view(2, 3)
  local z = y["repeat"](y, 2, 1, 2) -- more dims than y: [2, 2, 6]
  T.eq(tostring(z.shape), "torch.Size([2, 2, 6])")
  for a = 0, 1 do
    for b = 0, 1 do
      for c = 0, 5 do T.eq(z[a][b][c]:item(), b * 3 + c % 3) end
    end
  end
end

T.test("repeat copies", function() check_on("cpu") end)

T.test("repeat gradient", function()
  gradcheck("repeat", function(x) return x["repeat"](x, 2, 1, 3) end, { torch.randn(1, 2, 3, { dtype = torch.float64 }) })
end)

if torch.cuda.is_available() then
  T.test("repeat copies on cuda", function() check_on("cuda") end)
else
  T.skip("no CUDA: the repeat checks on cuda")
end
