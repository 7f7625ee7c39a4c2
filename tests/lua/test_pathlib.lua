-- pathlib (bindings/lua/pathlib.lua): expected values are Python's documented results
-- (Python 3.13 pathlib, POSIX), written out literally.
local T = ...
local pathlib = require "pathlib"
local itertools = require "itertools"
local Path, PurePath = pathlib.Path, pathlib.PurePath

local function strs(list)
  local out = {}
  for i, p in ipairs(list) do out[i] = tostring(p) end
  return out
end

T.test("construct, str, repr", function()
  T.eq(tostring(Path("a") / "b"), "a/b")
  T.eq(tostring("a" / Path("b")), "a/b", "a string on the left")
  T.eq(tostring(Path("a") / Path("/etc") / "x"), "/etc/x", "an absolute part restarts")
  T.eq(tostring(Path("/a//b/./c/")), "/a/b/c", "collapsed slashes and dots")
  T.eq(tostring(Path("a/../b")), "a/../b", "'..' stays")
  T.eq(tostring(Path()), ".")
  T.eq(tostring(Path("")), ".")
  T.eq(tostring(Path("//a")), "//a", "two leading slashes stay (POSIX)")
  T.eq(tostring(Path("///a")), "/a")
  T.eq(tostring(Path("a", "b", "c")), "a/b/c")
  T.eq(tostring(Path("/usr", "bin")), "/usr/bin")
  T.eq(Path("a/b"):__repr(), "PosixPath('a/b')")
  T.eq(pathlib.repr(PurePath("/x")), "PurePosixPath('/x')")
  T.eq(Path("a/b"):as_posix(), "a/b")
  T.eq(os.fspath(Path("a/b")), "a/b")
  T.eq(tostring(Path("a"):joinpath("b", "c")), "a/b/c")
  T.raises(function() return Path(1) end,
    "TypeError: PosixPath: argument should be a str or an os.PathLike object where __fspath__ returns a str, not 'int'")
  T.raises(function() return Path("a") / 2 end, "~not 'int'")
end)

T.test("name, stem, suffix, suffixes", function()
  local p = Path("my/library.tar.gz")
  T.eq(p.name, "library.tar.gz")
  T.eq(p.stem, "library.tar")
  T.eq(p.suffix, ".gz")
  T.eq(p.suffixes, { ".tar", ".gz" })
  T.eq(Path("my/library").suffix, "")
  T.eq(Path("my/library").suffixes, {})
  T.eq(Path(".bashrc").suffix, "", "a leading dot is no suffix")
  T.eq(Path(".bashrc").stem, ".bashrc")
  T.eq(Path("a.").suffix, "")
  T.eq(Path("a.").suffixes, {})
  T.eq(Path("/").name, "")
  T.eq(Path(".").name, "")
  T.eq(Path("x/..").name, "..")
end)

T.test("parts, anchor, parent, parents", function()
  T.eq(Path("/usr/bin/python3").parts, { "/", "usr", "bin", "python3" })
  T.eq(Path("a/b").parts, { "a", "b" })
  T.eq(Path("/etc").anchor, "/")
  T.eq(Path("etc").anchor, "")
  T.eq(Path("/etc").root, "/")
  T.eq(tostring(Path("/a/b/c").parent), "/a/b")
  T.eq(tostring(Path("/").parent), "/")
  T.eq(tostring(Path(".").parent), ".")
  T.eq(tostring(Path("foo/..").parent), "foo", "parent is lexical")
  T.eq(tostring(Path("a").parent), ".")
  T.eq(strs(Path("foo/bar/setup.py").parents), { "foo/bar", "foo", "." })
  T.eq(strs(Path("/foo/bar").parents), { "/foo", "/" })
  T.eq(Path("/a"):is_absolute(), true)
  T.eq(Path("a/b"):is_absolute(), false)
end)

T.test("with_name, with_suffix, with_stem", function()
  T.eq(tostring(Path("c:/Downloads/pathlib.tar.gz"):with_name("setup.py")), "c:/Downloads/setup.py")
  T.eq(tostring(Path("/Downloads/pathlib.tar.gz"):with_suffix(".bz2")), "/Downloads/pathlib.tar.bz2")
  T.eq(tostring(Path("README"):with_suffix(".txt")), "README.txt")
  T.eq(tostring(Path("README.txt"):with_suffix("")), "README")
  T.eq(tostring(Path("/Downloads/draft.txt"):with_stem("final")), "/Downloads/final.txt")
  T.eq(tostring(Path("/Downloads/pathlib.tar.gz"):with_stem("lib")), "/Downloads/lib.gz")
  T.raises(function() return Path("/"):with_name("x") end, "ValueError: PosixPath('/') has an empty name")
  T.raises(function() return Path("a"):with_name("b/c") end, "ValueError: Invalid name 'b/c'")
  T.raises(function() return Path("a"):with_name("") end, "ValueError: Invalid name ''")
  T.raises(function() return Path("a"):with_suffix("txt") end, "ValueError: Invalid suffix 'txt'")
  T.raises(function() return Path("a"):with_suffix(".") end, "ValueError: Invalid suffix '.'")
  T.raises(function() return Path("a.txt"):with_stem("") end, "ValueError: PosixPath('a.txt') has a non-empty suffix")
end)

T.test("relative_to, is_relative_to", function()
  local p = Path("/etc/passwd")
  T.eq(tostring(p:relative_to("/")), "etc/passwd")
  T.eq(tostring(p:relative_to("/etc")), "passwd")
  T.eq(tostring(p:relative_to(p)), ".")
  T.raises(function() return p:relative_to("/usr") end, "ValueError: '/etc/passwd' is not in the subpath of '/usr'")
  T.eq(tostring(p:relative_to("/usr", { walk_up = true })), "../etc/passwd")
  T.raises(function() return p:relative_to("foo", { walk_up = true }) end,
    "ValueError: '/etc/passwd' and 'foo' have different anchors")
  T.raises(function() return Path("/a"):relative_to("/b/..", { walk_up = true }) end,
    "ValueError: '..' segment in '/b/..' cannot be walked")
  T.eq(p:is_relative_to("/etc"), true)
  T.eq(p:is_relative_to("/usr"), false)
  T.eq(Path("/etcx"):is_relative_to("/etc"), false, "whole components only")
end)

T.test("match", function()
  T.eq(PurePath("a/b.py"):match("*.py"), true)
  T.eq(PurePath("/a/b/c.py"):match("b/*.py"), true)
  T.eq(PurePath("/a/b/c.py"):match("a/*.py"), false)
  T.eq(PurePath("/a.py"):match("/*.py"), true)
  T.eq(PurePath("a/b.py"):match("/*.py"), false)
  T.eq(PurePath("b.py"):match("a/b.py"), false, "a longer pattern")
  T.eq(PurePath("a/.hidden"):match("*"), true, "* matches a leading dot")
  T.eq(PurePath("a/x7.txt"):match("x[0-9].txt"), true)
  T.eq(PurePath("a/xy.txt"):match("x[!y].txt"), false)
  T.raises(function() return PurePath("a"):match("") end, "ValueError: empty pattern")
end)

T.test("==, <, sorting, isinstance", function()
  T.eq(Path("a/b") == Path("a//b/"), true)
  T.eq(Path("a") == Path("b"), false)
  T.eq(Path("a") == PurePath("a"), false, "a PosixPath is not a PurePosixPath")
  T.eq(Path("a") < Path("b"), true)
  T.eq(Path("/a") < Path("a"), true, "'/a' sorts as ('', 'a')")
  T.eq(Path("a/b") < Path("a.b"), true, "component-wise, not by the string ('/' > '.')")
  T.eq(Path("a") <= Path("a"), true)
  local l = { Path("b"), Path("a/c"), Path("a"), Path("a.b") }
  table.sort(l)
  T.eq(strs(l), { "a", "a/c", "a.b", "b" })
  T.eq(pathlib.isinstance(Path("a"), pathlib.PurePath), true)
  T.eq(pathlib.isinstance(PurePath("a"), pathlib.Path), false)
end)

-- the file system methods, in a fresh folder
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local FX = dofile(here .. "fixture_dir.lua")("pathlib")
local base = Path(FX.dir)

T.test("mkdir, touch, exists, is_dir, is_file, unlink, rmdir", function()
  local d = base / "m" / "n"
  T.raises(function() d:mkdir() end, "[Errno 2] No such file or directory: '" .. tostring(d) .. "'")
  d:mkdir({ parents = true })
  T.eq(d:is_dir(), true)
  T.eq(d:exists(), true)
  T.raises(function() d:mkdir() end, "[Errno 17] File exists: '" .. tostring(d) .. "'")
  d:mkdir({ exist_ok = true })
  d:mkdir({ parents = true, exist_ok = true })
  local f = d / "x.txt"
  f:touch()
  T.eq(f:is_file(), true)
  T.eq(f:is_dir(), false)
  T.eq(f:stat().st_size, 0)
  f:touch()
  T.raises(function() f:touch({ exist_ok = false }) end, "[Errno 17] File exists: '" .. tostring(f) .. "'")
  T.raises(function() f:mkdir({ exist_ok = true }) end, "[Errno 17] File exists: '" .. tostring(f) .. "'",
    "exist_ok needs a folder")
  f:unlink()
  T.eq(f:exists(), false)
  T.raises(function() f:unlink() end, "[Errno 2] No such file or directory: '" .. tostring(f) .. "'")
  f:unlink({ missing_ok = true })
  d:rmdir()
  T.eq(d:exists(), false)
  T.eq((base / "m"):exists(), true)
end)

T.test("read/write text and bytes, rename, replace", function()
  local f = base / "t.txt"
  T.eq(f:write_text("héllo\n"), 6, "characters written")
  T.eq(f:read_text(), "héllo\n")
  T.eq(f:write_bytes("a\r\nb\rc"), 6)
  T.eq(f:read_bytes(), "a\r\nb\rc")
  T.eq(f:read_text(), "a\nb\nc", "universal newlines")
  T.raises(function() (base / "none"):read_text() end,
    "[Errno 2] No such file or directory: '" .. tostring(base / "none") .. "'")
  local g = f:rename(base / "u.txt")
  T.eq(tostring(g), tostring(base) .. "/u.txt")
  T.eq(f:exists(), false)
  T.eq(g:read_bytes(), "a\r\nb\rc")
  f:write_text("new")
  local h = f:replace(tostring(g))
  T.eq(h:read_text(), "new", "replace overwrites")
  T.eq(pathlib.isinstance(h, pathlib.Path), true, "a string target comes back as a Path")
  T.raises(function() f:write_text(1) end, "TypeError: data must be str, not int")
end)

T.test("iterdir, glob, rglob", function()
  local r = base / "g"
  for _, p in ipairs({ "a.txt", "b.py", ".h.txt", "sub/c.txt", "sub/deep/d.txt", "sub/deep/e.py" }) do
    (r / p).parent:mkdir({ parents = true, exist_ok = true });
    (r / p):touch()
  end
  local function rel(it)
    local out = {}
    for p in it do out[#out + 1] = tostring(p:relative_to(r)) end
    return out
  end
  T.eq(rel(r:iterdir()), { ".h.txt", "a.txt", "b.py", "sub" })
  T.eq(rel(r:glob("*.txt")), { ".h.txt", "a.txt" }, "pathlib's * matches a leading dot")
  T.eq(rel(r:glob("*/*.txt")), { "sub/c.txt" })
  T.eq(rel(r:glob("**/*.py")), { "b.py", "sub/deep/e.py" })
  T.eq(rel(r:rglob("*.txt")), { ".h.txt", "a.txt", "sub/c.txt", "sub/deep/d.txt" })
  T.eq(rel(r:glob("sub/**")), { "sub", "sub/c.txt", "sub/deep", "sub/deep/d.txt", "sub/deep/e.py" })
  T.eq(rel(r:glob("**/")), { ".", "sub", "sub/deep" }, "a trailing slash: folders only")
  T.eq(rel(r:glob("sub/c.txt")), { "sub/c.txt" })
  T.eq(rel(r:glob("nothere/*")), {})
  T.eq(#itertools.list(r:glob("?.py")), 1)
  T.raises(function() r:glob("") end, "ValueError: Unacceptable pattern: ''")
  T.raises(function() r:glob("/x") end, "NotImplementedError: Non-relative patterns are unsupported")
end)

T.test("cwd, home, absolute, resolve, expanduser", function()
  T.eq(tostring(Path.cwd()), os.getcwd())
  T.eq(tostring(Path.home()), os.path.expanduser("~"))
  T.eq(tostring(Path("x/y"):absolute()), os.getcwd() .. "/x/y")
  T.eq(tostring(Path("/x"):absolute()), "/x")
  T.eq(tostring((base / "g" / "sub" / ".." / "a.txt"):resolve()), os.path.realpath(FX.dir) .. "/g/a.txt")
  T.eq(tostring(Path("~/x"):expanduser()), os.path.expanduser("~") .. "/x")
end)

T.test("paths where ports pass them", function()
  local d = base / "ports"
  d:mkdir()
  torch.save({ w = torch.tensor({ 1.5, 2 }) }, d / "m.pt")
  T.eq(torch.load(d / "m.pt").w:tolist(), { 1.5, 2.0 })
  local tv = require "torchvision"
  local img_dir = d / "imgs" / "cat"
  img_dir:mkdir({ parents = true })
  tv.utils.save_image(torch.zeros(3, 2, 5), img_dir / "0.png")
  local Image = require("PIL").Image
  local im = Image.open(img_dir / "0.png")
  T.eq(im.size, { 5, 2 })
  im:save(img_dir / "1.png")
  local ds = tv.datasets.ImageFolder(d / "imgs")
  T.eq(#ds, 2)
  T.eq(ds.classes, { "cat" })
  T.eq(os.path.getsize(d / "m.pt") > 0, true, "os.path takes a Path")
  T.eq(os.listdir(d), { "imgs", "m.pt" })
  T.raises(function() os.listdir(1) end, "TypeError: listdir: path should be string, not int")
end)

T.test("cuda: paths hold no tensors", function()
  if not torch.cuda.is_available() then T.skip("no CUDA", 1) return end
  local f = base / "c.pt"
  torch.save(torch.ones(2, { device = "cuda" }), f)
  T.eq(torch.load(f).device.type, "cuda")
end)

os.execute("rm -rf '" .. FX.dir .. "'")
