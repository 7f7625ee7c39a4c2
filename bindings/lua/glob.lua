-- glob: Python's glob.glob for nnrepl (`import glob` -> `local glob = require "glob"`).
--   glob.glob("data/names/*.txt") -> a Lua list of the matching paths, sorted (Python gives
--   them in directory order, which is arbitrary). The wildcards *, ? and [...] ([!...] negates)
--   may appear in the last path component only; as in Python, * and ? do not match a leading
--   dot, and a folder that does not exist gives an empty list.
local IC = require("tv_io")._C

local M = {}

-- an fnmatch pattern as an anchored Lua pattern
local function to_lua_pattern(pat)
  local out, i = { "^" }, 1
  while i <= #pat do
    local c = pat:sub(i, i)
    if c == "*" then
      out[#out + 1] = ".*"
    elseif c == "?" then
      out[#out + 1] = "."
    elseif c == "[" and pat:find("]", i + 2, true) then
      local j = pat:find("]", i + 2, true)
      local set = pat:sub(i + 1, j - 1):gsub("^!", "^"):gsub("%%", "%%%%")
      out[#out + 1] = "[" .. set .. "]"
      i = j
    else
      out[#out + 1] = c:gsub("%W", "%%%0")
    end
    i = i + 1
  end
  return table.concat(out) .. "$"
end

function M.glob(pathname)
  if type(pathname) ~= "string" then error("glob() argument must be a str, not " .. type(pathname), 2) end
  local dir, base = pathname:match("^(.*)/([^/]*)$")
  if not dir then dir, base = ".", pathname end
  if dir:find("[*?[]") then
    error("glob(): nnrepl matches wildcards in the last path component only: " .. pathname, 2)
  end
  if not base:find("[*?[]") then
    return IC.kind(pathname) and { pathname } or {}
  end
  local entries = IC.listdir(dir == "" and "/" or dir)
  local out, pat = {}, to_lua_pattern(base)
  for name in pairs(entries or {}) do
    if name:find(pat) and (name:sub(1, 1) ~= "." or base:sub(1, 1) == ".") then
      out[#out + 1] = (pathname:find("/") and dir .. "/" or "") .. name
    end
  end
  table.sort(out)
  return out
end

M._fnmatch_pattern = to_lua_pattern -- for shutil.ignore_patterns

return M
