-- x[{i, j}]: a list of index tensors (or lists, or integers among them) as Python's x[i, j]
-- advanced indexing, read and assigned; values against plain loops, gradients by hand.
local T = ...

local function run(dev)
  local x = torch.arange(12.0, { device = dev }):reshape(3, 4) -- x[r][c] = 4r + c
  local function at(r, c) return 4.0 * r + c end
  T.eq(x[{ torch.tensor({ 0, 2 }), torch.tensor({ 1, 3 }) }]:cpu():tolist(), { at(0, 1), at(2, 3) }, dev .. ": pairs")
  T.eq(x[{ { 0, 2 }, { 1, -1 } }]:cpu():tolist(), { at(0, 1), at(2, 3) }, dev .. ": Lua lists, a negative index")
  T.eq(x[{ torch.tensor({ { 0 }, { 2 } }), torch.tensor({ 0, 1 }) }]:cpu():tolist(),
    { { at(0, 0), at(0, 1) }, { at(2, 0), at(2, 1) } }, dev .. ": indices broadcast to [2, 2]")
  T.eq(x[{ 1, torch.tensor({ 0, 3 }) }]:cpu():tolist(), { at(1, 0), at(1, 3) }, dev .. ": an integer with a tensor")
  T.eq(x[{ torch.tensor({ 2, 0 }) }]:cpu():tolist(), { { 8.0, 9.0, 10.0, 11.0 }, { 0.0, 1.0, 2.0, 3.0 } },
    dev .. ": one index tensor in a list selects rows")
  T.eq(x[{ torch.tensor({ 1, 1 }), torch.tensor({ 2, 2 }) }]:cpu():tolist(), { at(1, 2), at(1, 2) }, dev .. ": repeats")
  local y = torch.arange(24.0, { device = dev }):reshape(2, 3, 4)
  T.eq(tostring(y[{ torch.tensor({ 1, 0, 1 }), torch.tensor({ 2, 2, 0 }) }]:size()), "torch.Size([3, 4])", dev .. ": trailing dims kept")
  T.eq(y[{ torch.tensor({ 1 }), torch.tensor({ 2 }) }]:cpu():tolist(), { { 20.0, 21.0, 22.0, 23.0 } }, dev .. ": y[1, 2, :]")
  -- the idiom of nn_tutorial's hand-written loss: -input[range(n), target].mean() is nll_loss
  local lp = torch.randn(5, 7, { device = dev }):log_softmax(1)
  local t = torch.tensor({ 3, 0, 6, 2, 2 }, { device = dev })
  T.near(-lp[{ torch.arange(5, { device = dev }), t }]:mean():item(), F.nll_loss(lp, t):item(), 1e-6, dev .. ": nll by indexing")
  -- gradient: each picked element gets the upstream gradient, repeats add up
  local w = torch.zeros(2, 3, { device = dev }):requires_grad_()
  local picked = w[{ torch.tensor({ 0, 1, 0 }), torch.tensor({ 2, 0, 2 }) }]
  local weighted = picked * torch.tensor({ 1.0, 2.0, 3.0 }, { device = dev })
  weighted:sum():backward()
  T.eq(w.grad:cpu():tolist(), { { 0.0, 0.0, 4.0 }, { 2.0, 0.0, 0.0 } }, dev .. ": gradient scattered back, repeats summed")
  -- assignment
  local z = torch.zeros(3, 4, { device = dev })
  z[{ torch.tensor({ 0, 2 }), torch.tensor({ 1, 3 }) }] = 5
  z[{ { 1 }, { 0 } }] = torch.tensor({ -2.0 })
  T.eq(z:cpu():tolist(), { { 0.0, 5.0, 0.0, 0.0 }, { -2.0, 0.0, 0.0, 0.0 }, { 0.0, 0.0, 0.0, 5.0 } }, dev .. ": assignment")
  z[{ torch.tensor({ 0, 1 }) }] = torch.tensor({ 7.0, 8.0, 9.0, 10.0 }, { device = dev })
  T.eq(z:cpu():tolist()[2], { 7.0, 8.0, 9.0, 10.0 }, dev .. ": rows assigned a broadcast row")
  -- errors
  T.raises(function() return x[{ torch.tensor({ 3 }), torch.tensor({ 0 }) }] end, "~index 3 is out of bounds for dimension 0 with size 3")
  T.raises(function() return x[{ torch.tensor({ 0 }), torch.tensor({ -5 }) }] end, "~index -5 is out of bounds for dimension 1 with size 4")
  T.raises(function() return x[{ torch.tensor({ 0 }), torch.tensor({ 0 }), torch.tensor({ 0 }) }] end,
    "~too many indices for tensor of dimension 2 (got 3)")
  T.raises(function() return x[{ torch.tensor({ 0.5 }), torch.tensor({ 0 }) }] end,
    "~tensors used as indices must be long, int, byte or bool tensors")
end

T.test("indexing by a list of index tensors (cpu)", function() run("cpu") end)
T.test("indexing by a list of index tensors (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA", 16) end
  run("cuda")
end)
