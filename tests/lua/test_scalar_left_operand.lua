-- 2 * t and 2 + t are Python's t.__rmul__(2) and t.__radd__(2): the tensor is the node's first
-- input, so grad_fn.next_functions lists it first ((SinBackward0, 0), (None, 0)) as PyTorch does.
local T = ...

local function run(device)
  T.test("a number on the left of * and + " .. device, function()
    local a = torch.linspace(0, 1, 3, { requires_grad = true, device = device })
    local b = torch.sin(a)
    local c = 2 * b
    local d = 1 + c
    local nf = c.grad_fn.next_functions
    T.eq(#nf, 2)
    T.check(nf[1][1] and tostring(nf[1][1]):find("^<SinBackward0 object") ~= nil, tostring(nf[1][1]))
    T.check(nf[2][1] == nil, "the number has no node, second")
    nf = d.grad_fn.next_functions
    T.check(nf[1][1] and tostring(nf[1][1]):find("^<MulBackward0 object") ~= nil, tostring(nf[1][1]))
    d:sum():backward()
    local want = torch.cos(a:detach()) * 2
    T.check(torch.allclose(a.grad, want, { atol = 1e-6 }), "d(sum(1 + 2 sin a))/da = 2 cos a")
    -- values and dtypes as before: promotion is symmetric
    T.eq((2 * torch.tensor({ 1, 2 }, { device = device })):tolist(), { 2, 4 })
    T.eq((2.5 * torch.tensor({ 1, 2 }, { device = device })).dtype, torch.float32)
    T.eq((1 + torch.tensor({ true }, { device = device })):tolist(), { 2 })
    T.eq((3 - torch.tensor({ 1 }, { device = device })):tolist(), { 2 }, "sub keeps its order")
    T.eq((8 / torch.tensor({ 2.0 }, { device = device })):tolist(), { 4.0 }, "div keeps its order")
    local ok, err = pcall(function() return 2 * "x" end)
    T.check(not ok, err)
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
