-- Python's os / os.path / shutil names (bindings/pyos.c, pyos.lua, os_path.lua, shutil.lua).
-- Expected values are Python's documented results (posixpath, os, shutil), worked out by hand.
local T = ...
local shutil = require "shutil"
local P = os.path

local function pack(...) return { ... } end

T.test("join", function()
  T.eq(P.join("a", "b", "c"), "a/b/c")
  T.eq(P.join("a", "/b"), "/b", "an absolute part restarts")
  T.eq(P.join("a", "/b", "c"), "/b/c")
  T.eq(P.join("a/", "b"), "a/b")
  T.eq(P.join("", "b"), "b")
  T.eq(P.join("a", ""), "a/")
  T.eq(P.join("a"), "a")
  T.raises(function() P.join("a", 1) end, "TypeError: join: path should be string, not int")
end)

T.test("split, basename, dirname", function()
  T.eq(pack(P.split("/usr/lib/x.so")), { "/usr/lib", "x.so" })
  T.eq(pack(P.split("a/b/")), { "a/b", "" })
  T.eq(pack(P.split("x")), { "", "x" })
  T.eq(pack(P.split("//x")), { "//", "x" }, "a head of slashes stays")
  T.eq(pack(P.split("a//b")), { "a", "b" })
  T.eq(P.basename("/a/b.txt"), "b.txt")
  T.eq(P.basename("/a/b/"), "")
  T.eq(P.dirname("/a/b.txt"), "/a")
  T.eq(P.dirname("/a"), "/")
  T.eq(P.dirname("a"), "")
  T.eq(P.isabs("/x"), true)
  T.eq(P.isabs("x/y"), false)
end)

T.test("splitext", function()
  T.eq(pack(P.splitext("foo.tar.gz")), { "foo.tar", ".gz" })
  T.eq(pack(P.splitext(".bashrc")), { ".bashrc", "" }, "leading dots are not an extension")
  T.eq(pack(P.splitext("..x.y")), { "..x", ".y" })
  T.eq(pack(P.splitext("a/..b")), { "a/..b", "" })
  T.eq(pack(P.splitext("a.b/c")), { "a.b/c", "" }, "a dot in a folder name")
  T.eq(pack(P.splitext("x.")), { "x", "." })
  T.eq(pack(P.splitext("")), { "", "" })
end)

T.test("normpath", function()
  T.eq(P.normpath(""), ".")
  T.eq(P.normpath("a/./b/../c/"), "a/c")
  T.eq(P.normpath("//a/b"), "//a/b", "exactly two leading slashes stay")
  T.eq(P.normpath("///a//b"), "/a/b")
  T.eq(P.normpath("../../a/.."), "../..")
  T.eq(P.normpath("/../a"), "/a", ".. at the root")
  T.eq(P.normpath("a/../.."), "..")
  T.eq(P.normpath("./"), ".")
end)

T.test("relpath, commonpath, commonprefix", function()
  T.eq(P.relpath("/a/b/c", "/a/d"), "../b/c")
  T.eq(P.relpath("/a", "/a"), ".")
  T.eq(P.relpath("/a/b", "/"), "a/b")
  T.eq(P.relpath("x/y", "x"), "y")
  T.raises(function() P.relpath("") end, "ValueError: no path specified")
  T.eq(P.commonpath({ "/usr/lib", "/usr/local/lib", "/usr/lib/x" }), "/usr")
  T.eq(P.commonpath({ "a/./b", "a/b/c" }), "a/b")
  T.eq(P.commonpath({ "/a", "/b" }), "/")
  T.eq(P.commonpath({ "a", "b" }), "")
  T.raises(function() P.commonpath({ "/a", "b" }) end, "ValueError: Can't mix absolute and relative paths")
  T.raises(function() P.commonpath({}) end, "ValueError: commonpath() arg is an empty sequence")
  T.eq(P.commonprefix({ "/usr/lib", "/usr/local" }), "/usr/l")
  T.eq(P.commonprefix({}), "")
end)

T.test("expanduser, expandvars", function()
  local home = os.getenv("HOME")
  os.environ.HOME = "/home/someone/"
  T.eq(P.expanduser("~/x"), "/home/someone/x", "HOME without its trailing slash")
  T.eq(P.expanduser("~"), "/home/someone")
  T.eq(P.expanduser("a/~"), "a/~")
  T.eq(P.expanduser("~no_such_user_xyz/a"), "~no_such_user_xyz/a", "an unknown user stays")
  T.eq(P.expanduser("~root/a"), "/root/a")
  os.environ.HOME = "/"
  T.eq(P.expanduser("~"), "/")
  os.environ.HOME = home
  os.environ.PYOS_V = "val"
  os.environ.PYOS_UNSET = nil
  T.eq(P.expandvars("$PYOS_V/${PYOS_V}x/$PYOS_UNSET/${}/$"), "val/valx/$PYOS_UNSET/${}/$")
  T.eq(P.expandvars("a$PYOS_V-b"), "aval-b")
  T.eq(P.expandvars("no vars"), "no vars")
end)

T.test("os constants and Lua's own os functions", function()
  T.eq(os.sep, "/")
  T.eq(os.pathsep, ":")
  T.eq(os.linesep, "\n")
  T.eq(os.path.sep, "/")
  T.eq(math.type(os.cpu_count()), "integer")
  T.check(os.cpu_count() >= 1)
  T.eq(math.type(os.getpid()), "integer")
  T.eq(type(os.time()), "number", "Lua's os.time is untouched")
  T.eq(pack(os.remove("/nonexistent_pyos_dir/x"))[1], nil, "Lua's os.remove still returns nil, message")
end)

T.test("environ", function()
  os.environ.PYOS_A = "1"
  T.eq(os.getenv("PYOS_A"), "1", "os.getenv sees a write")
  T.eq(os.environ.PYOS_A, "1")
  T.eq(os.environ["PYOS_A"], "1")
  T.eq(os.environ.get("PYOS_A", "d"), "1")
  T.eq(os.environ:get("PYOS_MISSING", "d"), "d")
  T.eq(os.environ.get("PYOS_MISSING"), nil)
  T.eq(os.environ.setdefault("PYOS_A", "2"), "1")
  T.eq(os.environ:setdefault("PYOS_B", "2"), "2")
  T.eq(os.getenv("PYOS_B"), "2")
  local seen = {}
  for k, v in pairs(os.environ) do seen[k] = v end
  T.eq(seen.PYOS_A, "1", "pairs walks the environment")
  T.eq(os.environ.copy().PYOS_B, "2")
  T.eq(os.environ.pop("PYOS_B"), "2")
  T.eq(os.getenv("PYOS_B"), nil)
  T.eq(os.environ.pop("PYOS_B", "d"), "d")
  T.raises(function() os.environ.pop("PYOS_B") end, "KeyError: 'PYOS_B'")
  os.environ.PYOS_A = nil
  T.eq(os.getenv("PYOS_A"), nil, "assigning nil unsets")
  T.raises(function() os.environ.PYOS_A = 1 end, "TypeError: str expected, not int")
  os.environ.PYOS_C = "child"
  local p = io.popen("echo $PYOS_C")
  T.eq(p:read("l"), "child", "a child process sees it")
  p:close()
  os.environ.PYOS_C = nil
end)

-- the file system checks, in a fresh folder removed at the end
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local FX = dofile(here .. "fixture_dir.lua")("pyos")
local base, write = FX.dir .. "/t", FX.write
local function read(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

T.test("mkdir, makedirs, listdir, stat", function()
  os.mkdir(base)
  T.eq(P.isdir(base), true)
  T.raises(function() os.mkdir(base) end, "[Errno 17] File exists: '" .. base .. "'")
  local deep = P.join(base, "a", "b", "c")
  os.makedirs(deep)
  T.eq(P.isdir(deep), true)
  T.raises(function() os.makedirs(deep) end, "[Errno 17] File exists: '" .. deep .. "'")
  os.makedirs(deep, { exist_ok = true })
  os.makedirs(deep, 511, true)
  os.makedirs(P.join(base, "x", "y") .. "/", { exist_ok = true })
  T.eq(P.isdir(P.join(base, "x", "y")), true, "a trailing slash")
  write(P.join(base, "f.txt"), "hello")
  T.raises(function() os.makedirs(P.join(base, "f.txt"), { exist_ok = true }) end,
    "[Errno 17] File exists: '" .. P.join(base, "f.txt") .. "'")
  T.raises(function() os.makedirs(P.join(base, "f.txt", "z")) end,
    "[Errno 20] Not a directory: '" .. P.join(base, "f.txt", "z") .. "'")
  T.raises(function() os.makedirs(base, { bogus = 1 }) end, "~unknown keyword 'bogus'")
  T.eq(os.listdir(base), { "a", "f.txt", "x" })
  T.raises(function() os.listdir(P.join(base, "nope")) end,
    "[Errno 2] No such file or directory: '" .. P.join(base, "nope") .. "'")
  local st = os.stat(P.join(base, "f.txt"))
  T.eq(st.st_size, 5)
  T.eq(P.getsize(P.join(base, "f.txt")), 5)
  T.check(math.abs(st.st_mtime - os.time()) < 60, "st_mtime is seconds since the epoch")
  T.eq(st.st_mode & 0xF000, 0x8000, "S_IFREG")
  T.eq(P.getmtime(P.join(base, "f.txt")), st.st_mtime)
  T.eq(P.exists(base), true)
  T.eq(P.isfile(P.join(base, "f.txt")), true)
  T.eq(P.isfile(base), false)
  T.eq(P.exists(P.join(base, "nope")), false)
  T.raises(function() P.getsize(P.join(base, "nope")) end,
    "[Errno 2] No such file or directory: '" .. P.join(base, "nope") .. "'")
end)

T.test("errors point at the caller's line", function()
  local ok, err = pcall(function() os.listdir(P.join(base, "nope")) end)
  T.check(not ok and err:find("^[^:]*test_pyos%.lua:%d+: %[Errno 2%]") ~= nil, tostring(err))
end)

T.test("getcwd, chdir, abspath, realpath", function()
  local cwd = os.getcwd()
  os.chdir(base)
  T.eq(os.getcwd(), P.realpath(base))
  T.eq(P.abspath("a/../f.txt"), P.join(os.getcwd(), "f.txt"))
  T.eq(P.relpath(P.join(os.getcwd(), "a", "b")), "a/b")
  os.chdir(cwd)
  T.eq(os.getcwd(), cwd)
  T.raises(function() os.chdir(P.join(base, "f.txt")) end, "[Errno 20] Not a directory: '" .. P.join(base, "f.txt") .. "'")
  local real = P.realpath(base)
  os.symlink(P.join(real, "a", "b"), P.join(base, "lnk"))
  os.symlink("lnk/../..", P.join(base, "rel")) -- lnk resolves first, then ".." climbs from a/b
  T.eq(P.realpath(P.join(base, "lnk", "c")), P.join(real, "a", "b", "c"))
  T.eq(P.realpath(P.join(base, "rel")), real, "lnk/../.. from a/b is base")
  T.eq(P.realpath(P.join(base, "lnk", "..")), P.join(real, "a"), "the link resolves before ..")
  T.eq(P.realpath(P.join(base, "missing", "x")), P.join(real, "missing", "x"), "non-strict keeps missing parts")
  T.raises(function() P.realpath(P.join(base, "missing"), { strict = true }) end,
    "[Errno 2] No such file or directory: '" .. P.join(real, "missing") .. "'")
  os.symlink("loop", P.join(base, "loop"))
  T.eq(P.realpath(P.join(base, "loop")), P.join(real, "loop"), "a loop stays unresolved")
  T.eq(P.islink(P.join(base, "loop")), true)
  T.eq(P.exists(P.join(base, "loop")), false, "exists follows the link")
  T.eq(P.lexists(P.join(base, "loop")), true)
  T.eq(os.readlink(P.join(base, "lnk")), P.join(real, "a", "b"))
  T.eq(os.lstat(P.join(base, "loop")).st_mode & 0xF000, 0xA000, "S_IFLNK")
  T.eq(P.samefile(P.join(base, "lnk"), P.join(base, "a", "b")), true)
  os.unlink(P.join(base, "loop"))
  os.unlink(P.join(base, "rel"))
  T.eq(P.lexists(P.join(base, "loop")), false)
  T.raises(function() os.unlink(P.join(base, "loop")) end, "[Errno 2] No such file or directory: '" .. P.join(base, "loop") .. "'")
end)

T.test("walk, scandir", function()
  local got = {}
  for dirpath, dirnames, filenames in os.walk(base) do
    got[#got + 1] = { P.relpath(dirpath, base), table.concat(dirnames, ","), table.concat(filenames, ",") }
  end
  T.eq(got, {
    { ".", "a,lnk,x", "f.txt" }, -- lnk points at a folder: listed in dirnames, not entered
    { "a", "b", "" }, { "a/b", "c", "" }, { "a/b/c", "", "" }, { "x", "y", "" }, { "x/y", "", "" },
  })
  got = {}
  for dirpath, dirnames in os.walk(base) do
    got[#got + 1] = P.relpath(dirpath, base)
    if dirpath == base then table.remove(dirnames, 1) end -- prune a
  end
  T.eq(got, { ".", "x", "x/y" }, "removing from dirnames prunes")
  got = {}
  for dirpath in os.walk(base, { topdown = false }) do got[#got + 1] = P.relpath(dirpath, base) end
  T.eq(got, { "a/b/c", "a/b", "a", "x/y", "x", "." }, "bottom-up")
  got = {}
  for dirpath in os.walk(base, { followlinks = true }) do got[#got + 1] = P.relpath(dirpath, base) end
  T.eq(got, { ".", "a", "a/b", "a/b/c", "lnk", "lnk/c", "x", "x/y" }, "followlinks")
  got = 0
  for _ in os.walk(P.join(base, "nope")) do got = got + 1 end
  T.eq(got, 0, "a missing top yields nothing")
  local errs = {}
  for _ in os.walk(P.join(base, "nope"), { onerror = function(e) errs[#errs + 1] = e end }) do end
  T.check(#errs == 1 and errs[1]:find("[Errno 2]", 1, true) ~= nil, "onerror gets the error")
  local names = {}
  for e in os.scandir(base) do
    names[#names + 1] = string.format("%s:%s%s%s", e.name, e:is_dir() and "d" or "", e:is_file() and "f" or "",
      e:is_symlink() and "l" or "")
  end
  T.eq(names, { "a:d", "f.txt:f", "lnk:dl", "x:d" })
end)

T.test("replace, rmdir, removedirs, utime, access", function()
  local f, g = P.join(base, "f.txt"), P.join(base, "g.txt")
  write(g, "old")
  os.replace(f, g)
  T.eq(read(g), "hello", "replace overwrites")
  T.eq(P.exists(f), false)
  os.replace(g, f)
  T.raises(function() os.replace(g, f) end, "[Errno 2] No such file or directory: '" .. g .. "' -> '" .. f .. "'")
  T.raises(function() os.rmdir(P.join(base, "a")) end, "[Errno 39] Directory not empty: '" .. P.join(base, "a") .. "'")
  os.makedirs(P.join(base, "r", "s", "t"))
  os.removedirs(P.join(base, "r", "s", "t"))
  T.eq(P.exists(P.join(base, "r")), false, "removedirs removes the emptied parents")
  T.eq(P.exists(base), true, "and stops at a folder that is not empty")
  os.utime(f, { 1000000000.5, 1234567890.25 })
  T.eq(os.stat(f).st_mtime, 1234567890.25)
  T.eq(os.stat(f).st_atime_ns, 1000000000500000000)
  os.utime(f, { ns = { 5, 7000000000 } })
  T.eq(os.stat(f).st_mtime_ns, 7000000000)
  T.eq(os.access(f, os.R_OK), true)
  T.eq(os.access(P.join(base, "nope"), os.F_OK), false)
end)

T.test("shutil copy family", function()
  local f = P.join(base, "f.txt")
  os.chmod(f, 416) -- 0o640
  os.utime(f, { 1000, 2000 })
  T.eq(shutil.copyfile(f, P.join(base, "c1")), P.join(base, "c1"))
  T.eq(read(P.join(base, "c1")), "hello")
  T.raises(function() shutil.copyfile(f, f) end, "shutil.SameFileError: '" .. f .. "' and '" .. f .. "' are the same file")
  T.raises(function() shutil.copyfile(P.join(base, "a"), P.join(base, "c0")) end,
    "[Errno 21] Is a directory: '" .. P.join(base, "a") .. "'")
  T.raises(function() shutil.copyfile(f, P.join(base, "a")) end, "[Errno 21] Is a directory: '" .. P.join(base, "a") .. "'")
  T.eq(shutil.copy(f, P.join(base, "a")), P.join(base, "a", "f.txt"), "into a folder keeps the name")
  T.eq(os.stat(P.join(base, "a", "f.txt")).st_mode & 511, 416, "copy keeps the permission bits")
  T.check(os.stat(P.join(base, "a", "f.txt")).st_mtime ~= 2000, "copy does not keep the times")
  T.eq(shutil.copy2(f, P.join(base, "c2")), P.join(base, "c2"))
  T.eq(os.stat(P.join(base, "c2")).st_mtime, 2000.0, "copy2 keeps the times")
  T.eq(os.stat(P.join(base, "c2")).st_mode & 511, 416)
  T.eq(shutil.copyfile(P.join(base, "lnk"), P.join(base, "lnk2"), { follow_symlinks = false }), P.join(base, "lnk2"))
  T.eq(P.islink(P.join(base, "lnk2")), true)
  os.unlink(P.join(base, "lnk2"))
end)

T.test("shutil copytree, rmtree, move", function()
  local t = P.join(base, "tree")
  T.eq(shutil.copytree(P.join(base, "a"), t), t)
  T.eq(read(P.join(t, "f.txt")), "hello")
  T.eq(P.isdir(P.join(t, "b", "c")), true)
  T.raises(function() shutil.copytree(P.join(base, "a"), t) end, "[Errno 17] File exists: '" .. t .. "'")
  write(P.join(base, "a", "new"), "n")
  shutil.copytree(P.join(base, "a"), t, { dirs_exist_ok = true, ignore = function(_, names) return { "b" } end })
  T.eq(read(P.join(t, "new")), "n")
  T.eq(shutil.ignore_patterns("*.txt", "?e[wx]")(nil, { "a.txt", "new", "nex", "b", "xnew" }), { ["a.txt"] = true, new = true, nex = true })
  shutil.rmtree(t)
  T.eq(P.exists(t), false)
  T.raises(function() shutil.rmtree(t) end, "[Errno 2] No such file or directory: '" .. t .. "'")
  shutil.rmtree(t, { ignore_errors = true })
  local calls = {}
  shutil.rmtree(t, { onexc = function(fn, p) calls[#calls + 1] = fn .. " " .. P.relpath(p, base) end })
  T.eq(calls, { "scandir tree", "rmdir tree" })
  T.raises(function() shutil.rmtree(P.join(base, "lnk")) end,
    "[Errno 40] Cannot call rmtree on a symbolic link: '" .. P.join(base, "lnk") .. "'")
  -- copytree copies a link's target unless symlinks
  shutil.copytree(base, t, { ignore = function() return { tree = true } end })
  T.eq(P.islink(P.join(t, "lnk")), false)
  T.eq(P.isdir(P.join(t, "lnk", "c")), true)
  shutil.rmtree(t)
  shutil.copytree(base, t, { symlinks = true, ignore = function() return { "tree" } end })
  T.eq(P.islink(P.join(t, "lnk")), true)
  shutil.rmtree(t)
  -- move: a rename; into a folder; onto an existing name in a folder
  T.eq(shutil.move(P.join(base, "c1"), P.join(base, "m1")), P.join(base, "m1"))
  T.eq(read(P.join(base, "m1")), "hello")
  T.eq(shutil.move(P.join(base, "m1"), P.join(base, "x")), P.join(base, "x", "m1"))
  write(P.join(base, "m1"), "again")
  T.raises(function() shutil.move(P.join(base, "m1"), P.join(base, "x")) end,
    "shutil.Error: Destination path '" .. P.join(base, "x", "m1") .. "' already exists")
  T.eq(shutil.move(P.join(base, "x"), P.join(base, "x2")), P.join(base, "x2"))
  T.eq(P.isfile(P.join(base, "x2", "m1")), true)
end)

T.test("shutil which, disk_usage", function()
  local bin = P.join(base, "bin")
  os.mkdir(bin)
  write(P.join(bin, "tool"), "#!/bin/sh\n")
  T.eq(shutil.which("tool", { path = bin }), nil, "not executable")
  os.chmod(P.join(bin, "tool"), 493) -- 0o755
  T.eq(shutil.which("tool", { path = "/nonexistent:" .. bin }), P.join(bin, "tool"))
  T.eq(shutil.which(P.join(bin, "tool")), P.join(bin, "tool"), "a path is checked as is")
  T.eq(shutil.which("bin", { path = base }), nil, "a folder is not a command")
  T.eq(shutil.which("no_such_command_pyos"), nil)
  local u = shutil.disk_usage(base)
  T.check(u.total > 0 and u.free >= 0 and u.used >= 0 and u.used <= u.total, "disk_usage")
  T.eq({ u[1], u[2], u[3] }, { u.total, u.used, u.free })
  T.raises(function() shutil.disk_usage(P.join(base, "nope")) end, "[Errno 2] No such file or directory: '" .. P.join(base, "nope") .. "'")
end)

shutil.rmtree(FX.dir, { ignore_errors = true })
T.eq(P.exists(FX.dir), false, "the test folder is gone")

