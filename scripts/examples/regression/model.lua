-- pytorch/examples regression's helpers: the polynomial's degree, the feature matrix
-- [x, x^2, x^3, x^4] and the printed description of a polynomial. Used by main.lua and by
-- tests/gpu/examples/regression.lua.
local M = {}

M.POLY_DEGREE = 4

-- (n) -> (n, POLY_DEGREE): the columns x, x^2, ..., x^POLY_DEGREE
function M.make_features(x)
  x = x:unsqueeze(1)
  local powers = {}
  for i = 1, M.POLY_DEGREE do powers[i] = x ^ i end
  return torch.cat(powers, 1)
end

-- "y = +1.23 x^1 -0.50 x^2 ... +4.00" for the weights W (1-D) and the bias b (1 element)
function M.poly_desc(W, b)
  local result = "y = "
  for i, w in pairs(W) do
    result = result .. string.format("%+.2f x^%d ", w:item(), i + 1)
  end
  result = result .. string.format("%+.2f", b[0]:item())
  return result
end

return M
