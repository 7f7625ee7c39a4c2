-- Philox4x32-10 in plain Lua (64-bit integers; `>>` is a logical shift), from its published
-- definition: the reference for the random draws the tests check. Usage:
--   local philox = dofile(dir .. "philox_ref.lua")
--   philox.block(seed, counter) -> w0, w1, w2, w3
--   philox.dropout_u(seed, offset, j, wide) -> dropout's j-th uniform (four to a block, two if wide)
local M = {}
local M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
local MASK = 0xFFFFFFFF

function M.block(seed, counter)
  local c0, c1, c2, c3 = counter & MASK, (counter >> 32) & MASK, 0, 0
  local k0, k1 = seed & MASK, (seed >> 32) & MASK
  for r = 0, 9 do
    if r > 0 then k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK end
    local p0, p1 = M0 * c0, M1 * c2 -- exact modulo 2^64: the high words are right
    c0, c1, c2, c3 = ((p1 >> 32) ~ c1 ~ k0) & MASK, p1 & MASK, ((p0 >> 32) ~ c3 ~ k1) & MASK, p0 & MASK
  end
  return c0, c1, c2, c3
end

function M.dropout_u(seed, offset, j, wide)
  local per = wide and 2 or 4
  local w = { M.block(seed, offset + j // per) }
  local l = j % per
  if wide then return ((w[2 * l + 1] << 32 | w[2 * l + 2]) >> 11) * 2.0 ^ -53 end
  return (w[l + 1] >> 8) * 2.0 ^ -24
end

return M
