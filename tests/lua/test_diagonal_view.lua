-- torch.diagonal / Tensor:diagonal is a view, as PyTorch's: writes through it reach the
-- tensor, its gradient lands on the diagonal, in-place ops on it join the base's history.
-- References are plain-Lua index arithmetic.
local T = ...

T.test("diagonal is a view", function()
  local x = torch.arange(60, { dtype = torch.float64 }):view(3, 4, 5)
  local xs = x:tolist()
  for _, case in ipairs({ { 0, 1, 2 }, { 1, 1, 2 }, { -2, 1, 2 }, { 2, 2, 0 }, { -1, 0, 2 }, { 3, -1, -2 } }) do
    local off, d1, d2 = case[1], case[2], case[3]
    local got = x:diagonal(off, d1, d2):tolist()
    -- reference: the remaining dim first, then k along the diagonal
    local a1, a2 = d1 % 3, d2 % 3
    local rest = 3 - a1 - a2
    local want = {}
    for r = 0, x:size(rest) - 1 do
      local row = {}
      local k = 0
      while true do
        local i1, i2 = k + math.max(-off, 0), k + math.max(off, 0)
        if i1 >= x:size(a1) or i2 >= x:size(a2) then break end
        local idx = {}
        idx[rest + 1], idx[a1 + 1], idx[a2 + 1] = r, i1, i2
        row[#row + 1] = xs[idx[1] + 1][idx[2] + 1][idx[3] + 1]
        k = k + 1
      end
      want[#want + 1] = row
    end
    T.eq(got, want, string.format("diagonal(%d, %d, %d)", off, d1, d2))
  end
  local m = torch.zeros(3, 4)
  m:diagonal():fill_(1)
  m:diagonal(1):copy_(torch.tensor({ 5.0, 6.0, 7.0 }))
  T.eq(m:tolist(), { { 1.0, 5.0, 0.0, 0.0 }, { 0.0, 1.0, 6.0, 0.0 }, { 0.0, 0.0, 1.0, 7.0 } }, "writes reach the tensor")
  T.eq(m:diagonal(-3):numel(), 0, "an offset past the edge: empty")
  T.eq(torch.diag(m):data_ptr() ~= m:data_ptr(), true, "torch.diag of a matrix is a copy")
  local d = torch.zeros(2, 2)
  torch.diag(d):fill_(9)
  T.eq(d:sum():item(), 0.0, "and writing it leaves the matrix")
  T.raises(function() torch.zeros(3):diagonal() end, "~expected a tensor with at least 2 dimensions")
  T.raises(function() torch.zeros(3, 3):diagonal(0, 1, 1) end, "~diagonal dimensions cannot be identical")
end)

T.test("diagonal's gradient and in-place history", function()
  local x = torch.randn(3, 4, { dtype = torch.float64, requires_grad = true })
  local w = torch.tensor({ 1.0, 2.0, 3.0 }, { dtype = torch.float64 })
  local y = x:diagonal(1)
  T.eq(y.grad_fn:name(), "DiagonalBackward0", "grad_fn")
  ;(y * w):sum():backward()
  T.eq(x.grad:tolist(), { { 0.0, 1.0, 0.0, 0.0 }, { 0.0, 0.0, 2.0, 0.0 }, { 0.0, 0.0, 0.0, 3.0 } }, "gradient on the diagonal")
  local b = torch.randn(3, 3, { dtype = torch.float64, requires_grad = true })
  local c = b * 1
  c:diagonal():mul_(2)
  c:sum():backward()
  T.eq(b.grad:tolist(), { { 2.0, 1.0, 1.0 }, { 1.0, 2.0, 1.0 }, { 1.0, 1.0, 2.0 } }, "an in-place op through the view")
end)
