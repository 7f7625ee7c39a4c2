-- Python's os names on Lua's os table (torch_os.lua requires this when torch opens, so both the
-- nnrepl interpreter and require "torch" from a plain Lua get them). Lua's own os functions
-- (os.remove, os.rename, os.getenv, os.time, ...) stay as they are; only missing names are added:
--   os.path (os_path.lua), os.listdir, os.scandir, os.walk, os.makedirs, os.mkdir, os.rmdir,
--   os.removedirs, os.unlink, os.replace, os.symlink, os.readlink, os.getcwd, os.chdir, os.stat,
--   os.lstat, os.chmod, os.utime, os.access, os.environ, os.cpu_count, os.sep, os.pathsep,
--   os.fspath (a pathlib.Path -> its string), os.linesep, os.curdir, os.pardir, os.extsep, os.devnull, os.name, os.F_OK/R_OK/W_OK/X_OK.
-- OS failures raise Python's text: "[Errno 17] File exists: 'x'".
local C = require "pyos_sys"
local U = require "nn_util"
local path = require "os_path"

local M = {}

M.path = path
M.sep, M.pathsep, M.linesep, M.curdir, M.pardir, M.extsep, M.devnull, M.name =
  "/", ":", "\n", ".", "..", ".", "/dev/null", "posix"
M.F_OK, M.R_OK, M.W_OK, M.X_OK = 0, 4, 2, 1

local str = C.str

-- the names in a folder, sorted (Python's order is arbitrary)
function M.listdir(p)
  local names = C.listdir(str("listdir", p or "."))
  table.sort(names)
  return names
end

function M.mkdir(p, ...)
  local o = U.parse("mkdir", { { "mode", 511 } }, ...)
  C.mkdir(str("mkdir", p), o.mode)
end

-- creates the missing parents first; a folder that exists is an error unless exist_ok
function M.makedirs(name, ...)
  local o = U.parse("makedirs", { { "mode", 511 }, { "exist_ok", false } }, ...)
  str("makedirs", name)
  local head, tail = path.split(name)
  if tail == "" then head, tail = path.split(head) end
  if head ~= "" and tail ~= "" and not path.exists(head) then
    local ok, err = pcall(M.makedirs, head, { exist_ok = o.exist_ok })
    if not ok and not tostring(err):find("[Errno 17]", 1, true) then error(err, 0) end
    if tail == "." then return end
  end
  local ok, err = pcall(C.mkdir, name, o.mode)
  if not ok and not (o.exist_ok and path.isdir(name)) then error(err, 0) end
end

function M.rmdir(p) C.rmdir(str("rmdir", p)) end
function M.unlink(p) C.unlink(str("unlink", p)) end
function M.replace(src, dst) C.rename(str("replace", src), str("replace", dst)) end
function M.symlink(src, dst) C.symlink(str("symlink", src), str("symlink", dst)) end
function M.readlink(p) return C.readlink(str("readlink", p)) end
function M.getcwd() return C.getcwd() end
function M.fspath(p) return str("fspath", p) end
function M.chdir(p) C.chdir(str("chdir", p)) end
function M.chmod(p, mode) C.chmod(str("chmod", p), mode) end
function M.access(p, mode) return C.access(str("access", p), mode) end
function M.cpu_count() return C.cpu_count() end

-- removes the leaf folder, then each parent that becomes empty, until one cannot be removed
function M.removedirs(name)
  C.rmdir(str("removedirs", name))
  local head, tail = path.split(name)
  if tail == "" then head, tail = path.split(head) end
  while head ~= "" and tail ~= "" do
    if not pcall(C.rmdir, head) then break end
    head, tail = path.split(head)
  end
end

-- a stat_result as a table: st_mode, st_ino, st_dev, st_nlink, st_uid, st_gid, st_size, and
-- st_atime/st_mtime/st_ctime (float seconds) with their integer _ns forms
local function stat_result(t)
  t.kind = nil
  return t
end
function M.stat(p, ...)
  local o = U.parse("stat", { { "follow_symlinks", true } }, ...)
  return stat_result(C.stat(str("stat", p), o.follow_symlinks))
end
function M.lstat(p) return stat_result(C.stat(str("lstat", p), false)) end

-- whole seconds and the fraction apart, so that large times keep their nanoseconds
local function to_ns(t)
  local sec = math.floor(t)
  return sec * 1000000000 + math.floor((t - sec) * 1e9 + 0.5)
end

-- times: {atime, mtime} in seconds, or ns = {atime_ns, mtime_ns}; neither: now
function M.utime(p, ...)
  local o = U.parse("utime", { { "times", nil }, { "ns", nil } }, ...)
  local a, m
  if o.times and o.ns then U.error("ValueError: utime: you may specify either 'times' or 'ns' but not both") end
  if o.times then
    a, m = to_ns(o.times[1]), to_ns(o.times[2])
  elseif o.ns then
    a, m = o.ns[1], o.ns[2]
  else
    local now = require("time").time_ns()
    a, m = now, now
  end
  C.utime(str("utime", p), a, m)
end

-- DirEntry: name, path, is_dir(), is_file(), is_symlink(), stat() (the first two follow links
-- unless {follow_symlinks = false})
local DirEntry = {}
DirEntry.__index = DirEntry
DirEntry.__name = "os.DirEntry"
DirEntry.__tostring = function(e) return "<DirEntry '" .. e.name .. "'>" end
local function entry_kind(e, fname, ...)
  local o = U.parse(fname, { { "follow_symlinks", true } }, ...)
  local s = C.stat(e.path, o.follow_symlinks, true)
  return s and s.kind
end
function DirEntry:is_dir(...) return entry_kind(self, "is_dir", ...) == "dir" end
function DirEntry:is_file(...) return entry_kind(self, "is_file", ...) == "file" end
function DirEntry:is_symlink() return entry_kind(self, "is_symlink", { follow_symlinks = false }) == "link" end
function DirEntry:stat(...) return M.stat(self.path, ...) end

-- an iterator over a folder's DirEntry values (sorted by name); path defaults to "."
function M.scandir(p)
  p = str("scandir", p or ".")
  local names, i = M.listdir(p), 0
  return function()
    i = i + 1
    if names[i] == nil then return nil end
    return setmetatable({ name = names[i], path = path.join(p, names[i]) }, DirEntry)
  end
end

-- for dirpath, dirnames, filenames in os.walk(top) do ... end: top-down by default, so that
-- removing names from dirnames prunes the walk; a symlink to a folder is listed in dirnames
-- but not entered unless followlinks; a folder that cannot be listed is skipped (onerror(err))
function M.walk(top, ...)
  local o = U.parse("walk", { { "topdown", true }, { "onerror", nil }, { "followlinks", false } }, ...)
  str("walk", top)
  local function visit(dir)
    local ok, names = pcall(M.listdir, dir)
    if not ok then
      if o.onerror then o.onerror(names) end
      return
    end
    local dirs, files = {}, {}
    for _, name in ipairs(names) do
      local s = C.stat(path.join(dir, name), true, true)
      if s and s.kind == "dir" then dirs[#dirs + 1] = name else files[#files + 1] = name end
    end
    if o.topdown then coroutine.yield(dir, dirs, files) end
    for _, name in ipairs(dirs) do
      local sub = path.join(dir, name)
      if o.followlinks or not path.islink(sub) then visit(sub) end
    end
    if not o.topdown then coroutine.yield(dir, dirs, files) end
  end
  return coroutine.wrap(function() visit(top) end)
end

-- os.environ: reading a name calls getenv, assigning calls setenv (nil unsets), so os.getenv and
-- child processes see the change; pairs() walks the current environment. Methods (dot or colon
-- calls): get(name, default), setdefault(name, value), pop(name, default), copy(), keys()
local environ = {}
local methods = {}
local function args(self, ...)
  if self == environ then return ... end
  return self, ...
end
function methods.get(...)
  local name, default = args(...)
  local v = os.getenv(name)
  if v == nil then return default end
  return v
end
function methods.setdefault(...)
  local name, value = args(...)
  if os.getenv(name) == nil then environ[name] = value end
  return os.getenv(name)
end
function methods.pop(...)
  local name, default = args(...)
  local v = os.getenv(name)
  if v == nil then
    if default == nil then U.errorf("KeyError: '%s'", tostring(name)) end
    return default
  end
  C.unsetenv(name)
  return v
end
function methods.copy() return C.environ() end
function methods.keys()
  local out = {}
  for k in pairs(C.environ()) do out[#out + 1] = k end
  table.sort(out)
  return out
end
setmetatable(environ, {
  __name = "os.environ",
  __index = function(_, k)
    if methods[k] then return methods[k] end
    if type(k) ~= "string" then U.errorf("TypeError: str expected, not %s", U.typename(k)) end
    return os.getenv(k)
  end,
  __newindex = function(_, k, v)
    if type(k) ~= "string" then U.errorf("TypeError: str expected, not %s", U.typename(k)) end
    if v == nil then C.unsetenv(k)
    elseif type(v) ~= "string" then U.errorf("TypeError: str expected, not %s", U.typename(v))
    else C.setenv(k, v) end
  end,
  __pairs = function()
    return next, C.environ(), nil
  end,
})
M.environ = environ

for k, v in pairs(M) do
  if os[k] == nil then os[k] = v end
end

return M
