-- What the multi-phase parity tests of this folder share, nnrepl's side of _phases.py: several
-- models trained in turn keep their weights in one file under "<phase>.<key>".
local M = {}

function M.prefixed(prefix, sd, into)
  into = into or {}
  for k, v in pairs(sd) do into[prefix .. k] = v end
  return into
end

function M.unprefixed(prefix, d)
  local out = {}
  for k, v in pairs(d) do if k:sub(1, #prefix) == prefix then out[k:sub(#prefix + 1)] = v end end
  return out
end

-- what example_parity.lua's finish saves: a value whose state_dict() is the merged phases
function M.as_model(state) return { state_dict = function() return state end } end

return M
