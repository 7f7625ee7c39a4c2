-- argparse.float_repr: Python's repr(float), the shortest text that reads back, with Python's
-- switch to an exponent below 1e-4 and from 1e16 (values worked out with CPython's rules).
local T = ...
local repr = require("argparse").float_repr

T.test("float_repr writes floats as Python prints them", function()
  local cases = {
    { 0.1, "0.1" }, { 0.30000000000000004, "0.30000000000000004" }, { 100.0, "100.0" }, { 2.0, "2.0" },
    { -0.0, "-0.0" }, { 1e-4, "0.0001" }, { 1e-5, "1e-05" }, { 1.5e-7, "1.5e-07" },
    { 1e16, "1e+16" }, { 1234567890123456.0, "1234567890123456.0" }, { 1.2345678901234568e+17, "1.2345678901234568e+17" },
    { 0.5192018868693881, "0.5192018868693881" }, { 0 / 0, "nan" }, { math.huge, "inf" }, { -math.huge, "-inf" },
  }
  for _, c in ipairs(cases) do T.eq(repr(c[1]), c[2], "repr(" .. c[2] .. ")") end
  for _, x in ipairs({ 1 / 3, 2 / 7 * 1e-9, 123.456e30, 5e-324 }) do
    T.eq(tonumber(repr(x)), x, "reads back: " .. repr(x))
  end
end)
