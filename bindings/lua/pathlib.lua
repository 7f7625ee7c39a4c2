-- pathlib: Python's pathlib for nnrepl (POSIX): `local pathlib = require "pathlib"`.
--   local Path = pathlib.Path; local p = Path("data") / "train" / "x.csv"
-- Properties are fields (p.name, p.stem, p.suffix, p.suffixes, p.parent, p.parents, p.parts,
-- p.anchor, p.root); methods take ":" (p:exists(), p:mkdir{parents = true, exist_ok = true}).
-- iterdir, glob and rglob are Lua iterators in sorted order (Python's order is arbitrary);
-- itertools.list(it) gives Python's list(it). print(p) writes str(p), pathlib.repr(p) or
-- p:__repr() gives PosixPath('a/b'). A Path works where os / os.path / shutil, torch.save,
-- torch.load, Image.open and datasets take a path (os.fspath). Semantics are Python 3.13's.
local C = require "pyos_sys"
local U = require "nn_util"
local os_ = require "pyos"
local ospath = require "os_path"
local fnmatch = require("glob")._fnmatch_pattern

local M = {}

local Pure = { __name = "PurePosixPath" } -- the metatable of PurePosixPath values
local Posix = { __name = "PosixPath" }    -- and of PosixPath (Path) values
local pure, props = {}, {}                -- pure methods; properties (computed fields)
local concrete = setmetatable({}, { __index = pure }) -- file system methods as well

local function is_path(v)
  local mt = getmetatable(v)
  return mt == Pure or mt == Posix
end

local function quote(s) return "'" .. s .. "'" end

-- a path argument as a string (a Path or an os.PathLike)
local function arg_str(fname, v)
  v = C.pathlike(v)
  if type(v) == "string" then return v end
  U.errorf("TypeError: %s: argument should be a str or an os.PathLike object where __fspath__ returns a str, not '%s'",
    fname, U.typename(v))
end

-- a new path of class mt from root ("", "/" or "//") and tail (a list of components)
local function make(mt, root, tail)
  return setmetatable({ _root = root, _tail = tail }, mt)
end

-- parse the segments of a constructor or a join onto (root, tail)
local function join_into(fname, root, tail, ...)
  for i = 1, select("#", ...) do
    local s = arg_str(fname, (select(i, ...)))
    if s:sub(1, 1) == "/" then
      root, tail = (s:match("^//[^/]") or s == "//") and "//" or "/", {}
    end
    for c in s:gmatch("[^/]+") do
      if c ~= "." then tail[#tail + 1] = c end
    end
  end
  return root, tail
end

local function new(mt, fname, ...)
  local root, tail = join_into(fname, "", {}, ...)
  return make(mt, root, tail)
end

local function copy(t) return table.move(t, 1, #t, 1, {}) end
local function derive(p, root, tail) return make(getmetatable(p), root, tail) end

local function tostr(p)
  local s = p._root .. table.concat(p._tail, "/")
  return s == "" and "." or s
end

local function split(s)
  local out = {}
  for c in (s .. "/"):gmatch("([^/]*)/") do out[#out + 1] = c end
  return out
end

for _, mt in ipairs({ Pure, Posix }) do
  mt.__tostring = tostr
  mt.__fspath__ = tostr
  mt.__div = function(a, b)
    if is_path(a) then return a:joinpath(b) end
    return derive(b, join_into("/", "", {}, a, b)) -- "a" / Path("b")
  end
  mt.__eq = function(a, b) return getmetatable(a) == getmetatable(b) and tostr(a) == tostr(b) end
  -- Python orders paths by their components ("/a" sorts as {"", "a"})
  local function cmp(a, b)
    local x, y = split(tostr(a)), split(tostr(b))
    for i = 1, math.min(#x, #y) do
      if x[i] ~= y[i] then return x[i] < y[i] and -1 or 1 end
    end
    return #x - #y
  end
  mt.__lt = function(a, b) return cmp(a, b) < 0 end
  mt.__le = function(a, b) return cmp(a, b) <= 0 end
end
Pure.__index = function(p, k)
  local f = props[k]
  if f then return f(p) end
  return pure[k]
end
Posix.__index = function(p, k)
  local f = props[k]
  if f then return f(p) end
  return concrete[k]
end

function pure:__repr() return string.format("%s(%s)", getmetatable(self).__name, quote(tostr(self))) end
function M.repr(p) return p:__repr() end
function pure:as_posix() return tostr(self) end
function pure:__fspath__() return tostr(self) end

-- ---- properties ----

function props.root(p) return p._root end
function props.anchor(p) return p._root end
function props.drive() return "" end
function props.name(p) return p._tail[#p._tail] or "" end
function props.suffix(p)
  local name = props.name(p)
  local i = name:match(".*()%.")
  if i and i > 1 and i < #name then return name:sub(i) end
  return ""
end
function props.suffixes(p)
  local name = props.name(p)
  if name:sub(-1) == "." then return {} end
  local out = {}
  for s in name:gsub("^%.+", ""):gmatch("%.[^.]*") do out[#out + 1] = s end
  return out
end
function props.stem(p)
  local name, suffix = props.name(p), props.suffix(p)
  return name:sub(1, #name - #suffix)
end
function props.parts(p)
  local out = copy(p._tail)
  if p._root ~= "" then table.insert(out, 1, p._root) end
  return out
end
function props.parent(p)
  if #p._tail == 0 then return p end
  local tail = copy(p._tail)
  tail[#tail] = nil
  return derive(p, p._root, tail)
end
-- the ancestors, nearest first, as a Lua list
function props.parents(p)
  local out, cur = {}, props.parent(p)
  for _ = 1, #p._tail do out[#out + 1] = cur; cur = props.parent(cur) end
  return out
end

-- ---- pure methods ----

function pure:is_absolute() return self._root ~= "" end
function pure:joinpath(...) return derive(self, join_into("joinpath", self._root, copy(self._tail), ...)) end
function pure:with_segments(...) return new(getmetatable(self), "with_segments", ...) end

function pure:with_name(name)
  name = arg_str("with_name", name)
  if props.name(self) == "" then U.errorf("ValueError: %s has an empty name", self:__repr()) end
  if name == "" or name == "." or name:find("/", 1, true) then U.errorf("ValueError: Invalid name %s", quote(name)) end
  local tail = copy(self._tail)
  tail[#tail] = name
  return derive(self, self._root, tail)
end
function pure:with_suffix(suffix)
  suffix = arg_str("with_suffix", suffix)
  if suffix ~= "" and (suffix:sub(1, 1) ~= "." or suffix == "." or suffix:find("/", 1, true)) then
    U.errorf("ValueError: Invalid suffix %s", quote(suffix))
  end
  if props.name(self) == "" then U.errorf("ValueError: %s has an empty name", self:__repr()) end
  return self:with_name(props.stem(self) .. suffix)
end
function pure:with_stem(stem)
  stem = arg_str("with_stem", stem)
  local suffix = props.suffix(self)
  if stem == "" and suffix ~= "" then U.errorf("ValueError: %s has a non-empty suffix", self:__repr()) end
  return self:with_name(stem .. suffix)
end

local function as_path(self, fname, other)
  if is_path(other) then return other end
  return new(getmetatable(self), fname, other)
end

function pure:is_relative_to(other)
  other = as_path(self, "is_relative_to", other)
  if other._root ~= self._root or #other._tail > #self._tail then return false end
  for i, c in ipairs(other._tail) do
    if self._tail[i] ~= c then return false end
  end
  return true
end

-- relative_to(other, {walk_up = false}): walk_up allows ".." steps out of other
function pure:relative_to(other, ...)
  local walk_up = U.parse("relative_to", { { "walk_up", false } }, ...).walk_up
  other = as_path(self, "relative_to", other)
  local candidates = { other }
  table.move(props.parents(other), 1, #other._tail, 2, candidates)
  for step, base in ipairs(candidates) do
    if self:is_relative_to(base) then
      local tail = {}
      for _ = 2, step do tail[#tail + 1] = ".." end
      table.move(self._tail, #base._tail + 1, #self._tail, #tail + 1, tail)
      return derive(self, "", tail)
    elseif not walk_up then
      U.errorf("ValueError: %s is not in the subpath of %s", quote(tostr(self)), quote(tostr(other)))
    elseif props.name(base) == ".." then
      U.errorf("ValueError: '..' segment in %s cannot be walked", quote(tostr(other)))
    end
  end
  U.errorf("ValueError: %s and %s have different anchors", quote(tostr(self)), quote(tostr(other)))
end

-- a glob-style pattern matched from the right (the whole path when the pattern is absolute)
function pure:match(pattern)
  local pat = as_path(self, "match", pattern)
  if #pat._tail == 0 and pat._root == "" then U.error("ValueError: empty pattern") end
  local n, m = #self._tail, #pat._tail
  if pat._root ~= "" and (pat._root ~= self._root or n ~= m) then return false end
  if m > n then return false end
  for i = 0, m - 1 do
    if not self._tail[n - i]:find(fnmatch(pat._tail[m - i])) then return false end
  end
  return true
end

-- ---- file system methods (PosixPath) ----

local function errno_of(err) return tonumber(tostring(err):match("%[Errno (%d+)%]")) end

function concrete:exists() return ospath.exists(tostr(self)) end
function concrete:is_dir() return ospath.isdir(tostr(self)) end
function concrete:is_file() return ospath.isfile(tostr(self)) end
function concrete:is_symlink() return ospath.islink(tostr(self)) end
function concrete:stat(...) return os_.stat(tostr(self), ...) end
function concrete:lstat() return os_.lstat(tostr(self)) end
function concrete:rmdir() os_.rmdir(tostr(self)) end
function concrete:chmod(mode) os_.chmod(tostr(self), mode) end
function concrete:absolute()
  if self._root ~= "" then return self end
  return derive(self, join_into("absolute", "", {}, C.getcwd(), tostr(self)))
end
function concrete:resolve(...) return derive(self, join_into("resolve", "", {}, ospath.realpath(tostr(self), ...))) end
function concrete:expanduser() return derive(self, join_into("expanduser", "", {}, ospath.expanduser(tostr(self)))) end
function concrete:samefile(other) return ospath.samefile(tostr(self), arg_str("samefile", other)) end

function concrete:mkdir(...)
  local o = U.parse("mkdir", { { "mode", 511 }, { "parents", false }, { "exist_ok", false } }, ...)
  local ok, err = pcall(os_.mkdir, tostr(self), o.mode)
  if ok then return end
  local code = errno_of(err)
  if code == 2 and o.parents and props.parent(self) ~= self then
    props.parent(self):mkdir({ parents = true, exist_ok = true })
    return self:mkdir(o.mode, { exist_ok = o.exist_ok })
  end
  if code == 2 or not (o.exist_ok and self:is_dir()) then error(err, 0) end
end

function concrete:unlink(...)
  local missing_ok = U.parse("unlink", { { "missing_ok", false } }, ...).missing_ok
  local ok, err = pcall(os_.unlink, tostr(self))
  if not ok and not (missing_ok and errno_of(err) == 2) then error(err, 0) end
end

-- an OSError text from io.open's failure
local function io_error(err, code, p)
  local msg = tostring(err):gsub("^.-: ", "")
  U.errorf("[Errno %d] %s: %s", code or 0, msg, quote(p))
end

local function open(p, mode)
  local f, err, code = io.open(p, mode)
  if not f then io_error(err, code, p) end
  return f
end

function concrete:touch(...)
  local o = U.parse("touch", { { "mode", 438 }, { "exist_ok", true } }, ...)
  local p = tostr(self)
  if ospath.exists(p) then
    if not o.exist_ok then U.errorf("[Errno 17] File exists: %s", quote(p)) end
    os_.utime(p)
  else
    open(p, "ab"):close()
  end
end

function concrete:read_bytes()
  local f = open(tostr(self), "rb")
  local s = f:read("a")
  f:close()
  return s
end
-- text mode: "\r\n" and "\r" read as "\n" (Python's universal newlines)
function concrete:read_text(...)
  U.parse("read_text", { { "encoding", nil }, { "errors", nil }, { "newline", nil } }, ...)
  return (self:read_bytes():gsub("\r\n?", "\n"))
end
function concrete:write_bytes(data)
  if type(data) ~= "string" then U.errorf("TypeError: memoryview: a bytes-like object is required, not '%s'", U.typename(data)) end
  local f = open(tostr(self), "wb")
  f:write(data)
  f:close()
  return #data
end
-- returns the number of characters written
function concrete:write_text(data, ...)
  local o = U.parse("write_text", { { "encoding", nil }, { "errors", nil }, { "newline", nil } }, ...)
  if type(data) ~= "string" then U.errorf("TypeError: data must be str, not %s", U.typename(data)) end
  local n = utf8.len(data) or #data
  if o.newline and o.newline ~= "" and o.newline ~= "\n" then data = data:gsub("\n", o.newline) end
  self:write_bytes(data)
  return n
end

-- rename / replace(target): the target as a new Path (an existing file there is replaced)
function concrete:rename(target)
  os_.replace(tostr(self), arg_str("rename", target))
  return as_path(self, "rename", target)
end
concrete.replace = concrete.rename

-- the children (not "." or ".."), sorted by name
function concrete:iterdir()
  local names, i = os_.listdir(tostr(self)), 0
  return function()
    i = i + 1
    if names[i] then return self / names[i] end
  end
end

-- every folder under dir (dir first), not entering symlinked folders
local function walk_dirs(dir, out)
  out[#out + 1] = dir
  for _, name in ipairs(C.listdir(dir == "" and "." or dir) or {}) do
    local sub = dir == "" and name or (dir:sub(-1) == "/" and dir .. name or dir .. "/" .. name)
    local st = C.stat(sub, false, true)
    if st and st.kind == "dir" then walk_dirs(sub, out) end
  end
  return out
end

local function child(dir, name)
  if dir == "" then return name end
  return dir:sub(-1) == "/" and dir .. name or dir .. "/" .. name
end

-- the matches of the components pats[k..] under the folders in dirs (strings; "" is self)
local function select_parts(dirs, pats, k, out)
  local pat = pats[k]
  local last = k == #pats
  local next_dirs = {}
  if pat == "**" then
    for _, d in ipairs(dirs) do
      for _, sub in ipairs(walk_dirs(d, {})) do
        if last then -- "**" last: the folder itself and every file and folder below (Python 3.13)
          out[#out + 1] = sub
          for _, name in ipairs(C.listdir(sub == "" and "." or sub) or {}) do
            local p = child(sub, name)
            local st = C.stat(p, false, true)
            if st and st.kind ~= "dir" then out[#out + 1] = p end
          end
        else
          next_dirs[#next_dirs + 1] = sub
        end
      end
    end
  elseif pat:find("[*?[]") then
    local lp = fnmatch(pat)
    for _, d in ipairs(dirs) do
      local ok, names = pcall(C.listdir, d == "" and "." or d)
      for _, name in ipairs(ok and names or {}) do
        if name:find(lp) then
          local p = child(d, name)
          if last then out[#out + 1] = p
          elseif ospath.isdir(p) then next_dirs[#next_dirs + 1] = p end
        end
      end
    end
  else
    for _, d in ipairs(dirs) do
      local p = child(d, pat)
      if last then
        if ospath.lexists(p) then out[#out + 1] = p end
      elseif ospath.isdir(p) then next_dirs[#next_dirs + 1] = p end
    end
  end
  if not last and #next_dirs > 0 then select_parts(next_dirs, pats, k + 1, out) end
  return out
end

local function glob(self, fname, pattern)
  pattern = arg_str(fname, pattern)
  if pattern == "" then U.errorf("ValueError: Unacceptable pattern: %s", quote(pattern)) end
  if pattern:sub(1, 1) == "/" then U.error("NotImplementedError: Non-relative patterns are unsupported") end
  local pats = {}
  for c in pattern:gmatch("[^/]+") do if c ~= "." then pats[#pats + 1] = c end end
  local base = tostr(self)
  local found = {}
  if #pats > 0 then select_parts({ base == "." and "" or base }, pats, 1, found) end
  local seen, paths = {}, {}
  local dirs_only = pattern:sub(-1) == "/" -- a trailing slash matches folders only
  for _, s in ipairs(found) do
    if not seen[s] and not (dirs_only and not ospath.isdir(s)) then seen[s] = true; paths[#paths + 1] = new(getmetatable(self), fname, s) end
  end
  table.sort(paths)
  local i = 0
  return function()
    i = i + 1
    return paths[i]
  end
end
function concrete:glob(pattern) return glob(self, "glob", pattern) end
function concrete:rglob(pattern) return glob(self, "rglob", "**/" .. arg_str("rglob", pattern)) end

-- ---- constructors ----

local function class(mt, extra)
  local cls = extra or {}
  cls.__name = mt.__name
  return setmetatable(cls, {
    __call = function(_, ...) return new(mt, mt.__name, ...) end,
    __tostring = function() return "<class 'pathlib." .. mt.__name .. "'>" end,
  })
end

M.PosixPath = class(Posix, {
  cwd = function() return new(Posix, "cwd", C.getcwd()) end,
  home = function() return new(Posix, "home", ospath.expanduser("~")) end,
})
M.Path = M.PosixPath
M.PurePosixPath = class(Pure)
M.PurePath = M.PurePosixPath

-- isinstance(p, pathlib.Path) / PurePath
function M.isinstance(p, cls)
  local mt = getmetatable(p)
  if cls == M.PurePosixPath then return mt == Pure or mt == Posix end
  return cls == M.PosixPath and mt == Posix
end

return M
