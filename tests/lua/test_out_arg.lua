-- out= on torch.add / sub / mul / matmul / mm: the result written into the given tensor (same
-- object returned, values from plain Lua loops), other keywords kept (alpha), resizing with
-- PyTorch's warning, dtype casting, and the errors (autograd, bad dtype, device, not a tensor,
-- unknown keywords that matmul used to ignore silently); CPU and CUDA.
local T = ...

local lua_matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")

local A = { { 1, 2, 0 }, { -1, 3, 2 } }
local B = { { 2, 1 }, { 0, -2 }, { 4, 5 } }

local function run(device)
  local o = { device = device }
  T.test("out= " .. device, function()
    local a, b = torch.tensor(A, o), torch.tensor(B, o)
    local y = torch.rand(2, 2, o)
    local r = torch.matmul(a, b, { out = y })
    T.check(rawequal(r, y), "matmul returns out itself")
    T.near(y:cpu():tolist(), lua_matmul(A, B), 0, "matmul into out")
    local m = torch.zeros(2, 2, o)
    torch.mm(a, b, { out = m })
    T.near(m:cpu():tolist(), lua_matmul(A, B), 0, "mm into out")
    local z = torch.rand(2, 3, o)
    torch.mul(a, a, { out = z })
    T.near(z:cpu():tolist(), { { 1, 4, 0 }, { 1, 9, 4 } }, 0, "mul into out")
    local s = torch.empty(2, 3, o)
    torch.add(a, a, { alpha = 3, out = s })
    T.near(s:cpu():tolist(), { { 4, 8, 0 }, { -4, 12, 8 } }, 0, "add with alpha into out")
    torch.sub(a, 1, { out = s })
    T.near(s:cpu():tolist(), { { 0, 1, -1 }, { -2, 2, 1 } }, 0, "sub of a number into out")
    -- an int result cast into a float64 out
    local d = torch.zeros(2, 3, { dtype = torch.float64, device = device })
    torch.mul(torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, o), 2, { out = d })
    T.eq(d.dtype, torch.float64, "out keeps its dtype")
    T.near(d:cpu():tolist(), { { 2, 4, 6 }, { 8, 10, 12 } }, 0, "int result cast into float64")
    -- an empty out is resized silently
    local e = torch.empty(0, o)
    torch.mm(a, b, { out = e })
    T.eq(e.shape:totable(), { 2, 2 }, "empty out resized")
    T.near(e:cpu():tolist(), lua_matmul(A, B), 0, "resized out's values")
    -- under no_grad, arguments that require grad are fine
    local w = torch.ones(3, { requires_grad = true, device = device })
    local g = torch.zeros(3, o)
    do
      local _ <close> = torch.no_grad()
      torch.mul(w, 4, { out = g })
    end
    T.near(g:cpu():tolist(), { 4, 4, 4 }, 0, "out under no_grad")
    T.check(not g.requires_grad, "out does not require grad")
    -- without out= nothing changes
    T.near(torch.add(a, 1):cpu():tolist(), { { 2, 3, 1 }, { 0, 4, 3 } }, 0, "add without out")
    T.near(torch.matmul(a, b):cpu():tolist(), lua_matmul(A, B), 0, "matmul without out")
  end)

  T.test("out= errors " .. device, function()
    local a = torch.ones(2, 2, o)
    T.raises(function() return torch.add(a, a, { out = torch.zeros(2, 2, { dtype = torch.int64, device = device }) }) end,
      "torch.add(): result type Float can't be cast to the desired output type Long", "float into long")
    T.raises(function() return torch.mul(torch.ones(2, { requires_grad = true, device = device }), 2, { out = torch.zeros(2, o) }) end,
      "torch.mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
      "autograd")
    T.raises(function() return torch.matmul(a, a, { out = "x" }) end, "torch.matmul(): argument 'out' must be Tensor, not str",
      "out not a tensor")
    T.raises(function() return torch.matmul(a, a, { foo = 1 }) end, "torch.matmul(): unknown keyword 'foo'", "matmul unknown key")
    T.raises(function() return torch.mm(a, a, { out = torch.zeros(2, 2, o), bar = 1 }) end, "torch.mm(): unknown keyword 'bar'",
      "mm unknown key beside out")
    T.raises(function() return torch.add(a, a, { out = torch.zeros(2, 2, o), beta = 1 }) end, "~unknown keyword 'beta'",
      "add unknown key beside out")
  end)
end

run("cpu")
if torch.cuda.is_available() then
  run("cuda")
  T.test("out= on another device", function()
    T.raises(function() return torch.mul(torch.ones(2, { device = "cuda" }), 2, { out = torch.zeros(2) }) end,
      "torch.mul(): Expected out tensor to have device cuda:0, but got cpu instead", "cuda result, cpu out")
  end)
else
  T.skip("no CUDA", 21)
end

T.test("out= of another shape warns and resizes", function()
  local o = torch.zeros(3)
  T.near(torch.add(torch.ones(2), 1, { out = o }):tolist(), { 2, 2 }, 0, "resized")
  T.eq(o.shape:totable(), { 2 }, "out's new shape")
end)
