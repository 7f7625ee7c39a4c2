-- shutil: Python's shutil for nnrepl (`import shutil` -> `local shutil = require "shutil"`):
-- copyfile, copymode, copystat, copy, copy2, copytree, ignore_patterns, rmtree, move, which, disk_usage.
-- Keyword arguments are a trailing table (shutil.copytree(a, b, {dirs_exist_ok = true})).
local C = require "pyos_sys"
local U = require "nn_util"
local path = require "os_path"
require "pyos"

local M = {}

local str = C.str

local function same_file(a, b)
  local s, t = C.stat(a, true, true), C.stat(b, true, true)
  return s ~= nil and t ~= nil and s.st_dev == t.st_dev and s.st_ino == t.st_ino
end

-- the bytes of src into dst (created or truncated); returns dst
function M.copyfile(src, dst, ...)
  local o = U.parse("copyfile", { { "follow_symlinks", true } }, ...)
  str("copyfile", src)
  str("copyfile", dst)
  if same_file(src, dst) then U.errorf("shutil.SameFileError: '%s' and '%s' are the same file", src, dst) end
  if not o.follow_symlinks and path.islink(src) then
    C.symlink(C.readlink(src), dst)
  else
    C.copyfile(src, dst)
  end
  return dst
end

-- the permission bits of src onto dst
function M.copymode(src, dst)
  C.chmod(str("copymode", dst), C.stat(str("copymode", src)).st_mode & 4095)
end

-- the permission bits and the access and modification times of src onto dst
function M.copystat(src, dst)
  local s = C.stat(str("copystat", src))
  C.utime(str("copystat", dst), s.st_atime_ns, s.st_mtime_ns)
  C.chmod(dst, s.st_mode & 4095)
end

-- into a folder dst, the copy keeps src's name; returns the file written
local function copy_with(fname, meta)
  return function(src, dst, ...)
    local o = U.parse(fname, { { "follow_symlinks", true } }, ...)
    if path.isdir(str(fname, dst)) then dst = path.join(dst, path.basename(str(fname, src))) end
    M.copyfile(src, dst, { follow_symlinks = o.follow_symlinks })
    if o.follow_symlinks or not path.islink(src) then meta(src, dst) end
    return dst
  end
end
M.copy = copy_with("copy", M.copymode)
M.copy2 = copy_with("copy2", M.copystat)

-- A shutil.Error: the failures of a copytree, "src -> dst: message" each
local function raise_errors(errors)
  if #errors > 0 then U.error("shutil.Error: " .. table.concat(errors, "; ")) end
end

function M.copytree(src, dst, ...)
  local o = U.parse("copytree", { { "symlinks", false }, { "ignore", nil }, { "copy_function", M.copy2 },
    { "ignore_dangling_symlinks", false }, { "dirs_exist_ok", false } }, ...)
  str("copytree", src)
  str("copytree", dst)
  local names = os.listdir(src)
  local ignored = {}
  if o.ignore then
    for k, v in pairs(o.ignore(src, names) or {}) do
      if type(k) == "number" then ignored[v] = true else ignored[k] = true end
    end
  end
  os.makedirs(dst, { exist_ok = o.dirs_exist_ok })
  local errors = {}
  for _, name in ipairs(names) do
    if not ignored[name] then
      local s, d = path.join(src, name), path.join(dst, name)
      local ok, err = pcall(function()
        if path.islink(s) then
          if o.symlinks then
            C.symlink(C.readlink(s), d)
          elseif not path.exists(s) then
            if not o.ignore_dangling_symlinks then C.stat(s) end -- raises the missing target
          elseif path.isdir(s) then
            M.copytree(s, d, o)
          else
            o.copy_function(s, d)
          end
        elseif path.isdir(s) then
          M.copytree(s, d, o)
        else
          o.copy_function(s, d)
        end
      end)
      if not ok then errors[#errors + 1] = string.format("'%s' -> '%s': %s", s, d, tostring(err):gsub("^shutil%.Error: ", "")) end
    end
  end
  local ok, err = pcall(M.copystat, src, dst)
  if not ok then errors[#errors + 1] = tostring(err) end
  raise_errors(errors)
  return dst
end

-- an ignore function for copytree: the names matching any of the fnmatch patterns (*, ?, [...])
function M.ignore_patterns(...)
  local pats = {}
  for i = 1, select("#", ...) do pats[i] = require("glob")._fnmatch_pattern(str("ignore_patterns", (select(i, ...)))) end
  return function(_, names)
    local out = {}
    for _, name in ipairs(names) do
      for _, pat in ipairs(pats) do
        if name:find(pat) then out[name] = true; break end
      end
    end
    return out
  end
end

-- deletes a folder and everything in it (symlinks are removed, never followed);
-- ignore_errors, or onexc(func_name, path, err) / onerror(...) called per failure
function M.rmtree(p, ...)
  local o = U.parse("rmtree", { { "ignore_errors", false }, { "onerror", nil }, { "onexc", nil } }, ...)
  str("rmtree", p)
  local handler = o.onexc or o.onerror
  local function try(fname, f, arg)
    local ok, err = pcall(f, arg)
    if ok or o.ignore_errors then return ok end
    if handler then handler(fname, arg, err); return false end
    error(err, 0)
  end
  local st = C.stat(p, false, true)
  if st and st.kind == "link" then
    if o.ignore_errors then return end
    local err = "[Errno 40] Cannot call rmtree on a symbolic link: '" .. p .. "'"
    if handler then return handler("islink", p, err) end
    U.error(err)
  end
  local function remove(dir)
    local ok, names = pcall(C.listdir, dir)
    if not ok then
      if not o.ignore_errors then
        if handler then handler("scandir", dir, names) else error(names, 0) end
      end
    else
      for _, name in ipairs(names) do
        local child = path.join(dir, name)
        local s = C.stat(child, false, true)
        if s and s.kind == "dir" then remove(child) else try("unlink", C.unlink, child) end
      end
    end
    try("rmdir", C.rmdir, dir)
  end
  remove(p)
end

-- renames src to dst (into dst when dst is a folder); across file systems it copies, then deletes
function M.move(src, dst, ...)
  local o = U.parse("move", { { "copy_function", M.copy2 } }, ...)
  str("move", src)
  str("move", dst)
  local real_dst = dst
  if path.isdir(dst) then
    if same_file(src, dst) then C.rename(src, dst); return dst end
    real_dst = path.join(dst, path.basename((src:gsub("/+$", ""))))
    if path.exists(real_dst) then U.errorf("shutil.Error: Destination path '%s' already exists", real_dst) end
  end
  if C.rename(src, real_dst, true) then return real_dst end
  if path.islink(src) then
    C.symlink(C.readlink(src), real_dst)
    C.unlink(src)
  elseif path.isdir(src) then
    local a, b = path.abspath(src), path.abspath(real_dst)
    if b == a or b:sub(1, #a + 1) == a .. "/" then
      U.errorf("shutil.Error: Cannot move a directory '%s' into itself '%s'.", src, real_dst)
    end
    M.copytree(src, real_dst, { copy_function = o.copy_function, symlinks = true })
    M.rmtree(src)
  else
    o.copy_function(src, real_dst)
    C.unlink(src)
  end
  return real_dst
end

-- the path of an executable cmd found along PATH (or path), or nil
function M.which(cmd, ...)
  local o = U.parse("which", { { "mode", 1 }, { "path", nil } }, ...)
  str("which", cmd)
  local function ok(f) return C.access(f, o.mode) and not path.isdir(f) end
  if cmd:find("/", 1, true) then return ok(cmd) and cmd or nil end
  local dirs = o.path or os.getenv("PATH") or ":/bin:/usr/bin"
  if dirs == "" then return nil end
  local seen = {}
  for dir in (dirs .. ":"):gmatch("([^:]*):") do
    if not seen[dir] then
      seen[dir] = true
      local f = path.join(dir, cmd)
      if ok(f) then return f end
    end
  end
  return nil
end

-- {total = , used = , free = } in bytes (also [1], [2], [3], as Python's named tuple)
function M.disk_usage(p)
  local total, used, free = C.disk_usage(str("disk_usage", p))
  return { total, used, free, total = total, used = used, free = free }
end

return M
