-- Helpers of the torchvision model tests: parameter counts, state_dict keys, list search, and
-- models built with nn.init's random fills replaced. The layers' constructors call nn.init, so a
-- model built that way has its structure but not its values (filling 100M+ random numbers takes
-- seconds, minutes under the sanitizers): for checks of counts, keys and printing.
--   local MU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "model_util.lua")
local M = {}

function M.count(m)
  local n = 0
  for _, p in ipairs(m:parameters()) do n = n + p:numel() end
  return n
end

function M.keys(m) return m:state_dict():keys() end

function M.index_of(list, v)
  for i, x in ipairs(list) do if x == v then return i end end
end

function M.contains(list, v) return M.index_of(list, v) ~= nil end

local FILLS = { "kaiming_uniform_", "uniform_", "kaiming_normal_", "normal_", "trunc_normal_", "xavier_uniform_", "constant_" }

-- build(...) with overrides[name] in place of nn.init[name]; the random fills not named leave
-- their tensor as it is (constant_ is kept unless named)
function M.with_init(overrides, build, ...)
  local init, saved = nn.init, {}
  for _, name in ipairs(FILLS) do
    saved[name] = init[name]
    local f = overrides[name]
    if f == nil and name ~= "constant_" then f = function(t) return t end end
    if f then init[name] = f end
  end
  local ok, m = pcall(build, ...)
  for name, f in pairs(saved) do init[name] = f end
  if not ok then error(m, 0) end
  return m
end

function M.structure_only(build, ...) return M.with_init({}, build, ...) end

return M
