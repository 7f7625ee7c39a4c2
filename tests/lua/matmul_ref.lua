-- The plain-loop matrix product of nested Lua lists, the tests' reference for mm / matmul:
--   local matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")
return function(A, B)
  local C = {}
  for i = 1, #A do
    C[i] = {}
    for j = 1, #B[1] do
      local s = 0
      for k = 1, #B do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
  return C
end
