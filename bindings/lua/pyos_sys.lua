-- The system calls of bindings/pyos.c (require "_pyos") for os.*, os.path and shutil, with
-- their OSError text raised at the user's line ("x.lua:3: [Errno 2] No such file or directory: 'p'").
local raw = require "_pyos"
local U = require "nn_util"

local function rethrow(ok, ...)
  if not ok then U.error((...)) end
  return ...
end

local S = {}
for name, f in pairs(raw) do
  S[name] = function(...) return rethrow(pcall(f, ...)) end
end
-- v's string when it is an os.PathLike (a table whose metatable has __fspath__, such as a
-- pathlib.Path), else v
function S.pathlike(v)
  local mt = type(v) == "table" and getmetatable(v)
  local f = type(mt) == "table" and rawget(mt, "__fspath__")
  if f then return f(v) end
  return v
end
-- v as a path string (Python's os.fspath); else Python's TypeError for function fname
function S.str(fname, v)
  v = S.pathlike(v)
  if type(v) ~= "string" then
    U.errorf("TypeError: %s: path should be string, not %s", fname, U.typename(v))
  end
  return v
end

return S
