-- IDX and CIFAR-10 readers: small files written here (plain, gzipped, truncated,
-- corrupt), and the installed Fashion-MNIST.
local T = ...
local C = torch._data

local dir = io.popen("mktemp -d"):read("l")
local function path(name) return dir .. "/" .. name end
local function write(name, bytes)
  local f = assert(io.open(path(name), "wb"))
  f:write(bytes)
  f:close()
  return path(name)
end
local function read(name)
  local f = assert(io.open(path(name), "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local function gzip(name) -- name -> name.gz, with the system's gzip
  assert(os.execute(string.format("gzip -c '%s' > '%s.gz'", path(name), path(name))))
  return path(name) .. ".gz"
end

-- an IDX file: type byte, sizes, big-endian elements
local function idx(type_byte, shape, elems, fmt)
  local parts = {string.char(0, 0, type_byte, #shape)}
  for _, s in ipairs(shape) do parts[#parts + 1] = string.pack(">I4", s) end
  for _, e in ipairs(elems) do parts[#parts + 1] = string.pack(fmt, e) end
  return table.concat(parts)
end

T.test("idx uint8", function()
  local elems = {}
  for i = 1, 24 do elems[i] = (i * 37) % 256 end
  local t = C.load_idx(write("a.idx", idx(0x08, {2, 3, 4}, elems, "B")))
  T.eq(t.shape:totable(), {2, 3, 4}, "shape")
  T.eq(t.dtype, torch.uint8, "dtype")
  T.eq(t:flatten():tolist(), elems, "values")
  -- the same file gzipped
  local g = C.load_idx(gzip("a.idx"))
  T.eq(g:flatten():tolist(), elems, "gz values")
  -- parse from bytes
  T.eq(C.parse_idx(read("a.idx")):flatten():tolist(), elems, "parse")
end)

T.test("idx other types", function()
  local t = C.parse_idx(idx(0x0C, {3}, {-5, 0, 2147483647}, ">i4"))
  T.eq(t.dtype, torch.int32, "int32 dtype")
  T.eq(t:tolist(), {-5, 0, 2147483647}, "int32")
  local s = C.parse_idx(idx(0x0B, {2}, {-300, 300}, ">i2"))
  T.eq(s.dtype, torch.int16, "int16 dtype")
  T.eq(s:tolist(), {-300, 300}, "int16")
  local c = C.parse_idx(idx(0x09, {2}, {-3, 100}, ">i1"))
  T.eq(c.dtype, torch.int8, "int8 dtype")
  T.eq(c:tolist(), {-3, 100}, "int8")
  local f = C.parse_idx(idx(0x0D, {2}, {1.5, -0.25}, ">f"))
  T.eq(f.dtype, torch.float32, "float32 dtype")
  T.eq(f:tolist(), {1.5, -0.25}, "float32")
  local d = C.parse_idx(idx(0x0E, {1, 2}, {math.pi, -1e300}, ">d"))
  T.eq(d.dtype, torch.float64, "float64 dtype")
  T.eq(d:flatten():tolist(), {math.pi, -1e300}, "float64")
  T.eq(C.parse_idx(idx(0x08, {0, 28}, {}, "B")).shape:totable(), {0, 28}, "empty")
end)

T.test("idx bad input", function()
  local good = idx(0x08, {2, 3}, {1, 2, 3, 4, 5, 6}, "B")
  T.raises(function() C.parse_idx("", "x.idx") end, "~x.idx: not an IDX file (0 bytes", "empty")
  T.raises(function() C.parse_idx("\1\0\8\1abcd", "x.idx") end, "~x.idx: not an IDX file (magic 01 00 08 01", "magic")
  T.raises(function() C.parse_idx("\0\0\7\1\0\0\0\1x", "x.idx") end, "~unknown element type 0x07", "type")
  T.raises(function() C.parse_idx("\0\0\8\0", "x.idx") end, "~0 dimensions", "no dims")
  T.raises(function() C.parse_idx("\0\0\8\9", "x.idx") end, "~9 dimensions", "too many dims")
  T.raises(function() C.parse_idx(good:sub(1, 9), "x.idx") end, "~x.idx: truncated IDX file (9 bytes, the header", "short header")
  T.raises(function() C.parse_idx(good:sub(1, -2), "x.idx") end,
    "x.idx: truncated IDX file (sizes [2, 3] need 6 data bytes, found 5)", "short data")
  T.raises(function() C.parse_idx(good .. "zz", "x.idx") end, "x.idx: corrupt IDX file (2 bytes after the data of sizes [2, 3])", "long")
  T.raises(function() C.parse_idx("\0\0\8\3\255\255\255\255\255\255\255\255\255\255\255\255", "x.idx") end, "~are too large", "huge")
  -- files: missing, truncated gzip, corrupt gzip, truncated data inside a good gzip
  T.raises(function() C.load_idx(path("nope.idx")) end, "~nope.idx: cannot open (No such file", "missing")
  write("t.idx", good)
  gzip("t.idx")
  local gz = read("t.idx.gz")
  write("cut.gz", gz:sub(1, #gz - 10))
  T.raises(function() C.load_idx(path("cut.gz")) end, "~cut.gz: truncated gzip file", "truncated gz")
  local bad = gz:sub(1, 12) .. string.rep("\255", 8) .. gz:sub(21)
  write("bad.gz", bad)
  T.raises(function() C.load_idx(path("bad.gz")) end, "~bad.gz: corrupt gzip data", "corrupt gz")
  write("junk.gz", gz .. "junk")
  T.raises(function() C.load_idx(path("junk.gz")) end, "~junk.gz: corrupt gzip file: 4 bytes of trailing garbage", "garbage")
  write("short.idx", good:sub(1, -3))
  gzip("short.idx")
  T.raises(function() C.load_idx(path("short.idx.gz")) end, "~short.idx.gz: truncated IDX file", "gz of a short idx")
  -- two gzip members concatenated decompress as one
  write("half1", good:sub(1, 7)); write("half2", good:sub(8))
  gzip("half1"); gzip("half2")
  write("two.gz", read("half1.gz") .. read("half2.gz"))
  T.eq(C.load_idx(path("two.gz")):flatten():tolist(), {1, 2, 3, 4, 5, 6}, "multi-member gzip")
end)

-- CIFAR-10: records of a label byte and 3072 image bytes
local function cifar_record(label, seed)
  local b = {string.char(label)}
  for i = 0, 3071 do b[#b + 1] = string.char((i * seed + label) % 256) end
  return table.concat(b)
end

T.test("cifar", function()
  local recs = {cifar_record(3, 7), cifar_record(9, 11), cifar_record(0, 13)}
  local p1 = write("b1.bin", recs[1] .. recs[2])
  local p2 = write("b2.bin", recs[3])
  local images, labels = C.load_cifar({p1, p2})
  T.eq(images.shape:totable(), {3, 3, 32, 32}, "shape")
  T.eq(images.dtype, torch.uint8, "dtype")
  T.eq(labels.dtype, torch.int64, "label dtype")
  T.eq(labels:tolist(), {3, 9, 0}, "labels")
  -- pixel (c, y, x) of record r is byte 1 + c*1024 + y*32 + x
  local ok = true
  for r = 1, 3 do
    local rec = recs[r]
    for _, cyx in ipairs({{0, 0, 0}, {1, 5, 7}, {2, 31, 31}, {0, 17, 3}}) do
      local c, y, x = cyx[1], cyx[2], cyx[3]
      local want = rec:byte(2 + c * 1024 + y * 32 + x)
      ok = ok and images[r - 1][c][y][x]:item() == want
    end
  end
  T.check(ok, "pixel layout: R, G, B planes of rows")
  local i2, l2 = C.parse_cifar(recs[2], "mem")
  T.eq(l2:tolist(), {9}, "parse label")
  T.eq(i2:sum():item(), images[1]:sum():item(), "parse image")
end)

T.test("cifar bad input", function()
  local rec = cifar_record(1, 3)
  T.raises(function() C.parse_cifar("", "e.bin") end, "~e.bin: empty file", "empty")
  T.raises(function() C.parse_cifar(rec .. rec:sub(1, 100), "t.bin") end,
    "t.bin: truncated or corrupt CIFAR-10 file (3173 bytes is not a whole number of 3073-byte records: 100 bytes over)", "truncated")
  T.raises(function() C.parse_cifar(rec .. "\12" .. rec:sub(2), "l.bin") end,
    "l.bin: corrupt CIFAR-10 file (label 12 out of range [0, 9] in record 1)", "label")
  T.raises(function() C.load_cifar({write("ok.bin", rec), path("missing.bin")}) end, "~missing.bin: cannot open", "missing")
  T.raises(function() C.load_cifar({write("bad.bin", rec:sub(1, 3000))}) end, "~bad.bin: truncated or corrupt", "file")
  T.raises(function() C.load_cifar({}) end, "~no files", "no files")
end)

T.test("fashion-mnist", function()
  local root = "/usr/share/datasets/fashion-mnist"
  local f = io.open(root .. "/train-labels-idx1-ubyte.gz", "rb")
  if not f then
    io.stderr:write("skip: " .. root .. " is not installed\n")
    return
  end
  f:close()
  local images = C.load_idx(root .. "/train-images-idx3-ubyte.gz")
  local labels = C.load_idx(root .. "/train-labels-idx1-ubyte.gz")
  T.eq(images.shape:totable(), {60000, 28, 28}, "train images")
  T.eq(labels.shape:totable(), {60000}, "train labels")
  T.eq(labels[0]:item(), 9, "first label")
  T.eq(images[0]:sum():item(), 76247, "first image's byte sum")
  T.eq(labels:sum():item(), 270000, "label sum")
  local test = C.load_idx(root .. "/t10k-images-idx3-ubyte.gz")
  T.eq(test.shape:totable(), {10000, 28, 28}, "test images")
end)

os.execute("rm -rf '" .. dir .. "'")
