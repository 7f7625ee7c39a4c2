-- os.path: Python's posixpath for nnrepl (installed as os.path by pyos.lua). The string logic
-- follows Python's documented rules (join restarts at an absolute part, normpath keeps a leading
-- "//", splitext ignores leading dots); the file queries go through _pyos (bindings/pyos.c).
local C = require "pyos_sys"
local U = require "nn_util"

local P = {}

local check = C.str

-- index of the last "/" in p, or 0
local function last_sep(p) return p:match(".*()/") or 0 end

-- head with its trailing slashes removed, unless it is all slashes
local function strip_head(head)
  if head ~= "" and head:find("[^/]") then head = head:gsub("/+$", "") end
  return head
end

function P.join(a, ...)
  local path = check("join", a)
  for i = 1, select("#", ...) do
    local b = check("join", (select(i, ...)))
    if b:sub(1, 1) == "/" then path = b
    elseif path == "" or path:sub(-1) == "/" then path = path .. b
    else path = path .. "/" .. b end
  end
  return path
end

function P.split(p)
  check("split", p)
  local i = last_sep(p)
  return strip_head(p:sub(1, i)), p:sub(i + 1)
end

function P.basename(p) return check("basename", p):sub(last_sep(p) + 1) end
function P.dirname(p) return strip_head(check("dirname", p):sub(1, last_sep(p))) end
function P.isabs(p) return check("isabs", p):sub(1, 1) == "/" end

-- the extension starts at the last dot of the last component, unless only dots precede it there
function P.splitext(p)
  check("splitext", p)
  local dot = p:match(".*()%.") or 0
  local sep = last_sep(p)
  if dot > sep and p:sub(sep + 1, dot - 1):find("[^.]") then return p:sub(1, dot - 1), p:sub(dot) end
  return p, ""
end

function P.normpath(p)
  check("normpath", p)
  if p == "" then return "." end
  local slashes = p:match("^/*")
  local lead = (#slashes == 2) and "//" or (#slashes > 0 and "/" or "")
  local comps = {}
  for comp in p:gmatch("[^/]+") do
    if comp == "." then -- skip
    elseif comp ~= ".." or (lead == "" and #comps == 0) or comps[#comps] == ".." then comps[#comps + 1] = comp
    elseif #comps > 0 then comps[#comps] = nil end
  end
  local out = lead .. table.concat(comps, "/")
  return out == "" and "." or out
end

function P.abspath(p)
  check("abspath", p)
  if not P.isabs(p) then p = P.join(C.getcwd(), p) end
  return P.normpath(p)
end

-- each component in turn: ".." drops the last resolved one, a symlink is replaced by its target;
-- a component that does not exist (or a symlink loop) ends the resolving unless strict
function P.realpath(p, opts)
  check("realpath", p)
  local strict = U.parse("realpath", { { "strict", false } }, opts).strict
  local rest = {} -- a stack: the next component on top; false marks the end of a link's target
  local function push_parts(s)
    local parts = {}
    for c in s:gmatch("[^/]+") do parts[#parts + 1] = c end
    for i = #parts, 1, -1 do rest[#rest + 1] = parts[i] end
  end
  push_parts(p)
  local path = P.isabs(p) and "/" or C.getcwd()
  local seen = {} -- link path -> its resolution, or false while it is being resolved
  while #rest > 0 do
    local name = table.remove(rest)
    if name == false then
      seen[table.remove(rest)] = path
    elseif name == "." then -- skip
    elseif name == ".." then
      path = path:sub(1, last_sep(path) - 1)
      if path == "" then path = "/" end
    else
      local newpath = P.join(path, name)
      local st = C.stat(newpath, false, not strict)
      if not st or st.kind ~= "link" then
        path = newpath
      elseif seen[newpath] ~= nil then
        if seen[newpath] then path = seen[newpath]
        elseif strict then C.stat(newpath, true) -- raises ELOOP
        else path = newpath end
      else
        local target = C.readlink(newpath)
        if target:sub(1, 1) == "/" then path = "/" end
        seen[newpath] = false
        rest[#rest + 1] = newpath
        rest[#rest + 1] = false
        push_parts(target)
      end
    end
  end
  return path
end

function P.expanduser(p)
  check("expanduser", p)
  if p:sub(1, 1) ~= "~" then return p end
  local i = p:find("/", 2, true) or #p + 1
  local home
  if i == 2 then home = os.getenv("HOME") or C.home()
  else home = C.home(p:sub(2, i - 1)) end
  if not home then return p end
  home = home:gsub("/+$", "")
  local out = home .. p:sub(i)
  return out == "" and "/" or out
end

-- $name and ${name} with name an environment variable; unknown names stay as written
function P.expandvars(p)
  check("expandvars", p)
  if not p:find("$", 1, true) then return p end
  local out, i = {}, 1
  while true do
    local s = p:find("$", i, true)
    if not s then break end
    local name, e = p:match("^([%w_]+)()", s + 1)
    if not name then name, e = p:match("^{([^}]*)}()", s + 1) end
    local value = name and os.getenv(name)
    if value then
      out[#out + 1] = p:sub(i, s - 1) .. value
      i = e
    else
      out[#out + 1] = p:sub(i, e and e - 1 or s)
      i = e or s + 1
    end
  end
  out[#out + 1] = p:sub(i)
  return table.concat(out)
end

local function stat(fname, p, follow) return C.stat(check(fname, p), follow, true) end
function P.exists(p) return stat("exists", p, true) ~= nil end
function P.lexists(p) return stat("lexists", p, false) ~= nil end
function P.isfile(p) local s = stat("isfile", p, true); return s ~= nil and s.kind == "file" end
function P.isdir(p) local s = stat("isdir", p, true); return s ~= nil and s.kind == "dir" end
function P.islink(p) local s = stat("islink", p, false); return s ~= nil and s.kind == "link" end
function P.getsize(p) return C.stat(check("getsize", p)).st_size end
function P.getmtime(p) return C.stat(check("getmtime", p)).st_mtime end
function P.getatime(p) return C.stat(check("getatime", p)).st_atime end
function P.getctime(p) return C.stat(check("getctime", p)).st_ctime end

function P.samefile(a, b)
  local s, t = C.stat(check("samefile", a)), C.stat(check("samefile", b))
  return s.st_dev == t.st_dev and s.st_ino == t.st_ino
end

local function parts(p)
  local out = {}
  for c in p:gmatch("[^/]+") do out[#out + 1] = c end
  return out
end

function P.relpath(p, start)
  check("relpath", p)
  if p == "" then U.error("ValueError: no path specified") end
  local s, t = parts(P.abspath(check("relpath", start or "."))), parts(P.abspath(p))
  local i = 0
  while i < #s and i < #t and s[i + 1] == t[i + 1] do i = i + 1 end
  local rel = {}
  for _ = i + 1, #s do rel[#rel + 1] = ".." end
  table.move(t, i + 1, #t, #rel + 1, rel)
  return #rel == 0 and "." or table.concat(rel, "/")
end

-- the longest common leading run of whole components ("." and empty ones ignored)
function P.commonpath(paths)
  if type(paths) ~= "table" or #paths == 0 then U.error("ValueError: commonpath() arg is an empty sequence") end
  local abs = P.isabs(check("commonpath", paths[1]))
  local common
  for _, p in ipairs(paths) do
    if P.isabs(check("commonpath", p)) ~= abs then U.error("ValueError: Can't mix absolute and relative paths") end
    local comps = {}
    for c in p:gmatch("[^/]+") do if c ~= "." then comps[#comps + 1] = c end end
    if not common then common = comps
    else
      local n = 0
      while n < #common and common[n + 1] == comps[n + 1] do n = n + 1 end
      for k = n + 1, #common do common[k] = nil end
    end
  end
  return (abs and "/" or "") .. table.concat(common, "/")
end

-- the longest common leading string (character by character, as Python's commonprefix)
function P.commonprefix(list)
  if type(list) ~= "table" or #list == 0 then return "" end
  local pre = check("commonprefix", list[1])
  for k = 2, #list do
    local s = check("commonprefix", list[k])
    local n = 0
    while n < #pre and n < #s and pre:byte(n + 1) == s:byte(n + 1) do n = n + 1 end
    pre = pre:sub(1, n)
  end
  return pre
end

P.sep, P.pathsep, P.curdir, P.pardir, P.extsep, P.altsep, P.devnull = "/", ":", ".", "..", ".", nil, "/dev/null"
function P.normcase(p) return check("normcase", p) end

return P
