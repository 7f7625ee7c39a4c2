-- torchvision.io and the PIL-like Image: PNG/JPEG round trips, read modes,
-- Image methods against reference loops, make_grid/save_image, bad files.
local T = ...
local tvio = require "tv_io"
local U = require "tv_utils"
local Image = require("PIL").Image

local dir = (os.getenv("TMPDIR") or "/tmp") .. "/nnrepl_test_image_io_" .. tostring(os.time()) .. "_" .. tostring(math.random(1 << 30))
os.execute("mkdir -p '" .. dir .. "'")

local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
local function eqt(a, b, msg)
  T.eq(tostring(a.shape), tostring(b.shape), msg .. " (shape)")
  T.eq(a:tolist(), b:tolist(), msg)
end

-- Pillow's L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16
local function L24(r, g, b) return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16 end

local function write_bytes(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end
local function read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

torch.manual_seed(1)

T.test("png round trip, every channel count", function()
  for c = 1, 4 do
    local x = u8({c, 5, 7})
    local path = dir .. "/rt" .. c .. ".png"
    tvio.write_png(x, path)
    local y = tvio.read_image(path)
    T.eq(y.dtype, torch.uint8, "dtype")
    eqt(y, x, "png round trip c=" .. c)
    local bytes = tvio.encode_png(x, 9)
    T.eq(bytes:dim(), 1, "encode_png gives bytes")
    eqt(tvio.decode_png(bytes), x, "decode_png(encode_png) c=" .. c)
    eqt(tvio.decode_image(bytes), x, "decode_image c=" .. c)
  end
  -- a non-contiguous image
  local big = u8({3, 6, 9})
  local view = big:transpose(1, 2):narrow(1, 1, 5) -- [3, 5, 6]
  tvio.write_png(view, dir .. "/view.png")
  eqt(tvio.read_image(dir .. "/view.png"), view:contiguous(), "non-contiguous write")
  -- a 1 x 1 image and compression level 0
  local one = u8({3, 1, 1})
  eqt(tvio.decode_png(tvio.encode_png(one, 0)), one, "1x1 at level 0")
end)

T.test("read_image modes", function()
  local rgb = u8({3, 4, 6})
  local rgba = u8({4, 4, 6})
  local gray = u8({1, 4, 6})
  tvio.write_png(rgb, dir .. "/rgb.png")
  tvio.write_png(rgba, dir .. "/rgba.png")
  tvio.write_png(gray, dir .. "/gray.png")
  local M = tvio.ImageReadMode
  T.eq(tvio.read_image(dir .. "/rgb.png").shape:totable(), {3, 4, 6}, "rgb unchanged")
  T.eq(tvio.read_image(dir .. "/rgba.png").shape:totable(), {4, 4, 6}, "rgba unchanged")
  T.eq(tvio.read_image(dir .. "/gray.png").shape:totable(), {1, 4, 6}, "gray unchanged")
  -- RGBA as RGB drops alpha; gray as RGB replicates; RGB as GRAY is Pillow's L
  eqt(tvio.read_image(dir .. "/rgba.png", M.RGB), rgba:narrow(0, 0, 3):contiguous(), "rgba -> rgb")
  eqt(tvio.read_image(dir .. "/gray.png", M.RGB), torch.cat({gray, gray, gray}, 0), "gray -> rgb")
  local g = tvio.read_image(dir .. "/rgb.png", M.GRAY)
  local want = {}
  local r = rgb:tolist()
  for y = 1, 4 do
    want[y] = {}
    for x = 1, 6 do want[y][x] = L24(r[1][y][x], r[2][y][x], r[3][y][x]) end
  end
  T.eq(g:tolist(), {want}, "rgb -> gray (L24)")
  local ga = tvio.read_image(dir .. "/gray.png", M.GRAY_ALPHA)
  T.eq(ga:size(0), 2, "gray -> gray+alpha")
  T.eq(ga[1]:min():item(), 255, "added alpha is 255")
  T.eq(tvio.read_image(dir .. "/rgb.png", "RGB_ALPHA")[3]:min():item(), 255, "mode by name")
  T.eq(tvio.read_image(dir .. "/rgb.png", {mode = M.RGB}):size(0), 3, "mode as keyword")
  T.raises(function() tvio.read_image(dir .. "/rgb.png", "CMYK") end, "~unknown image read mode")
end)

-- a smooth image compresses well: JPEG decodes close to what was encoded
local function smooth(c, h, w)
  local rows = {}
  for k = 1, c do
    rows[k] = {}
    for y = 1, h do
      rows[k][y] = {}
      for x = 1, w do rows[k][y][x] = 20 + 40 * k + 3 * y + 2 * x end
    end
  end
  return torch.tensor(rows, {dtype = torch.uint8})
end

T.test("jpeg encode and decode", function()
  local x = smooth(3, 16, 24)
  tvio.write_jpeg(x, dir .. "/s.jpg", 95)
  local y = tvio.read_image(dir .. "/s.jpg")
  T.eq(y.shape:totable(), {3, 16, 24}, "jpeg shape")
  local diff = (y:to(torch.int64) - x:to(torch.int64)):abs()
  T.check(diff:max():item() <= 12, "jpeg max error " .. diff:max():item())
  T.check(diff:to(torch.float32):mean():item() < 2.5, "jpeg mean error " .. diff:to(torch.float32):mean():item())
  local g = smooth(1, 16, 24)
  local gy = tvio.decode_jpeg(tvio.encode_jpeg(g, 90))
  T.eq(gy.shape:totable(), {1, 16, 24}, "gray jpeg stays 1 channel")
  T.check((gy:to(torch.int64) - g:to(torch.int64)):abs():max():item() <= 4, "gray jpeg error")
  -- GRAY mode on a colour JPEG is the decoder's luma: close to Pillow's L of the RGB
  local l = tvio.read_image(dir .. "/s.jpg", "GRAY")
  local lref = Image.open(dir .. "/s.jpg"):convert("L"):tensor():permute(2, 0, 1)
  T.eq(l:size(0), 1, "jpeg gray channels")
  T.check((l:to(torch.int64) - lref:to(torch.int64)):abs():max():item() <= 2, "luma vs L")
  T.raises(function() tvio.encode_jpeg(u8({4, 4, 4})) end, "~JPEG images have 1 or 3 channels")
  T.raises(function() tvio.encode_jpeg(x, 0) end, "~quality must be between 1 and 100")
  T.raises(function() tvio.decode_jpeg(tvio.encode_png(x)) end, "~not a JPEG file")
end)

T.test("Image.open, convert, size, mode", function()
  local x = u8({3, 5, 7})
  tvio.write_png(x, dir .. "/im.png")
  local im = Image.open(dir .. "/im.png")
  T.eq(im.size, {7, 5}, "size is {w, h}")
  T.eq(im.width, 7, "width")
  T.eq(im.height, 5, "height")
  T.eq(im.mode, "RGB", "mode")
  T.eq(im.format, "PNG", "format")
  T.eq(tostring(im), "<PIL.Image.Image image mode=RGB size=7x5>", "repr")
  eqt(im:tensor(), x:permute(1, 2, 0):contiguous(), "pixels H x W x C")
  local l = im:convert("L")
  T.eq(l.mode, "L", "L mode")
  local xl = x:tolist()
  local ok = true
  for yy = 0, 4 do
    for xx = 0, 6 do
      local want = L24(xl[1][yy + 1][xx + 1], xl[2][yy + 1][xx + 1], xl[3][yy + 1][xx + 1])
      ok = ok and l:getpixel({xx, yy}) == want
    end
  end
  T.check(ok, "convert('L') is Pillow's L24")
  local a = im:convert("RGBA")
  T.eq(a.mode, "RGBA", "RGBA")
  T.eq(a:getpixel({2, 3})[4], 255, "alpha 255")
  eqt(a:convert("RGB"):tensor(), im:tensor(), "RGBA -> RGB drops alpha")
  eqt(l:convert("RGB"):tensor(), torch.cat({l:tensor(), l:tensor(), l:tensor()}, 2), "L -> RGB replicates")
  T.eq(im:getpixel({6, 4}), {xl[1][5][7], xl[2][5][7], xl[3][5][7]}, "getpixel")
  T.raises(function() im:convert("CMYK") end, "~unsupported mode CMYK")
  -- gray and RGBA files open in their modes
  tvio.write_png(u8({1, 3, 3}), dir .. "/g.png")
  tvio.write_png(u8({4, 3, 3}), dir .. "/a.png")
  tvio.write_png(u8({2, 3, 3}), dir .. "/la.png")
  T.eq(Image.open(dir .. "/g.png").mode, "L", "gray file")
  T.eq(Image.open(dir .. "/a.png").mode, "RGBA", "rgba file")
  T.eq(Image.open(dir .. "/la.png").mode, "LA", "la file")
  T.eq(Image.open(dir .. "/s.jpg").format, "JPEG", "jpeg format")
  -- fromarray / new
  local f = Image.fromarray(u8({4, 5, 3}))
  T.eq(f.size, {5, 4}, "fromarray size")
  T.eq(Image.fromarray(u8({4, 5})).mode, "L", "fromarray 2-D is L")
  T.eq(Image.new("RGB", {3, 2}, {10, 20, 30}):getpixel({2, 1}), {10, 20, 30}, "Image.new colour")
  T.eq(Image.new("L", {3, 2}):getpixel({0, 0}), 0, "Image.new black")
end)

T.test("Image crop, transpose, resize, save", function()
  local x = u8({6, 8, 3})
  local im = Image.fromarray(x)
  local xl = x:tolist()
  -- crop inside and reaching outside (black)
  local c = im:crop({2, 1, 10, 4}):tensor():tolist()
  local ok = #c == 3 and #c[1] == 8
  for y = 1, 3 do
    for xx = 1, 8 do
      local sy, sx = y + 1, xx + 2
      local want = (sx <= 8) and xl[sy][sx] or {0, 0, 0}
      ok = ok and T.show(c[y][xx]) == T.show(want)
    end
  end
  T.check(ok, "crop with a box past the right edge")
  -- transposes against index loops
  local function check_tr(method, name, f)
    local got = im:transpose(method):tensor():tolist()
    local good = true
    for a = 1, #got do
      for b = 1, #got[1] do
        local sy, sx = f(a, b)
        good = good and T.show(got[a][b]) == T.show(xl[sy][sx])
      end
    end
    T.check(good, name)
  end
  local H, W = 6, 8
  check_tr(Image.FLIP_LEFT_RIGHT, "flip left right", function(y, xx) return y, W + 1 - xx end)
  check_tr(Image.FLIP_TOP_BOTTOM, "flip top bottom", function(y, xx) return H + 1 - y, xx end)
  check_tr(Image.ROTATE_180, "rotate 180", function(y, xx) return H + 1 - y, W + 1 - xx end)
  check_tr(Image.TRANSPOSE, "transpose", function(y, xx) return xx, y end)
  check_tr(Image.ROTATE_90, "rotate 90 (counter-clockwise)", function(y, xx) return xx, W + 1 - y end)
  check_tr(Image.ROTATE_270, "rotate 270", function(y, xx) return H + 1 - xx, y end)
  check_tr(Image.TRANSVERSE, "transverse", function(y, xx) return H + 1 - xx, W + 1 - y end)
  T.eq(im:resize({4, 3}).size, {4, 3}, "resize size {w, h}")
  T.eq(im:resize({4, 3}, Image.NEAREST).size, {4, 3}, "resize nearest")
  T.raises(function() im:resize({4, 3}, 7) end, "~resize: unknown resampling filter 7")
  im:save(dir .. "/saved.png")
  eqt(Image.open(dir .. "/saved.png"):tensor(), x, "save/open png")
  im:save(dir .. "/saved.jpg", {quality = 90})
  T.eq(Image.open(dir .. "/saved.jpg").size, {8, 6}, "save jpeg")
  T.raises(function() im:save(dir .. "/saved.bmp") end, "~unknown file extension")
end)

T.test("make_grid and save_image", function()
  local imgs = torch.rand(5, 3, 4, 6)
  local g = U.make_grid(imgs, {nrow = 2, padding = 1, pad_value = 0.5})
  -- 2 columns, 3 rows: H = 3 * (4 + 1) + 1, W = 2 * (6 + 1) + 1
  T.eq(g.shape:totable(), {3, 16, 15}, "grid shape")
  local gl, il = g:tolist(), imgs:tolist()
  local ok = true
  for k = 0, 4 do
    local gy, gx = k // 2, k % 2
    for c = 1, 3 do
      for y = 1, 4 do
        for x = 1, 6 do
          ok = ok and gl[c][gy * 5 + 1 + y][gx * 7 + 1 + x] == il[k + 1][c][y][x]
        end
      end
    end
  end
  T.check(ok, "grid cells hold the images")
  T.eq(gl[1][1][1], 0.5, "padding value")
  T.eq(gl[2][16][15], 0.5, "empty cell is padding")
  T.eq(U.make_grid(imgs).shape:totable(), {3, 8, 42}, "default nrow 8, padding 2")
  T.eq(U.make_grid(torch.rand(1, 8, 8)).shape:totable(), {3, 8, 8}, "single gray image -> 3 channels")
  local n = U.make_grid(torch.tensor({{{{-1.0, 3.0}}}, {{{1.0, 0.0}}}}), {normalize = true, padding = 0})
  T.near(n[0]:tolist(), {{0.0, 1.0, 0.5, 0.25}}, 1e-6, "normalize to [0, 1] over the batch")
  local ne = U.make_grid(torch.tensor({{{{-1.0, 3.0}}}, {{{1.0, 0.0}}}}), {normalize = true, scale_each = true, padding = 0})
  T.near(ne[0]:tolist(), {{0.0, 1.0, 1.0, 0.0}}, 1e-6, "scale_each")
  -- save_image writes floor(x * 255 + 0.5)
  local x = torch.tensor({{{0.0, 0.2, 0.5}, {0.7, 1.0, 1.5}}})
  U.save_image(x, dir .. "/grid.png")
  local y = tvio.read_image(dir .. "/grid.png")
  T.eq(y.shape:totable(), {3, 2, 3}, "save_image of one gray image is RGB")
  T.eq(y[0]:tolist(), {{0, 51, 128}, {179, 255, 255}}, "save_image rounding")
  U.save_image(torch.rand(4, 3, 5, 5), dir .. "/grid4.png", {nrow = 2})
  T.eq(tvio.read_image(dir .. "/grid4.png").shape:totable(), {3, 16, 16}, "save_image grid")
  T.raises(function() U.save_image(x, dir .. "/g.png", {nrows = 2}) end, "~unknown keyword 'nrows'")
end)

T.test("bad files", function()
  local missing = dir .. "/nope.png"
  T.raises(function() tvio.read_image(missing) end, "read_image: cannot open '" .. missing .. "': No such file or directory")
  T.raises(function() Image.open(missing) end, "~Image.open: cannot open '" .. missing .. "'")
  write_bytes(dir .. "/text.png", "hello, not an image")
  T.raises(function() tvio.read_image(dir .. "/text.png") end, "read_image: '" .. dir .. "/text.png' is not a PNG or JPEG file")
  write_bytes(dir .. "/empty.jpg", "")
  T.raises(function() tvio.read_image(dir .. "/empty.jpg") end, "~is not a PNG or JPEG file")

  local x = u8({3, 16, 16})
  local png = read_bytes(dir .. "/rt3.png")
  tvio.write_jpeg(x, dir .. "/noise.jpg", 90)
  local jpg = read_bytes(dir .. "/noise.jpg")
  -- every truncation point fails with a message naming the file, never crashes
  local function truncations(name, data, kind)
    local all = true
    write_bytes(dir .. "/full_" .. name, data)
    local full = tvio.read_image(dir .. "/full_" .. name)
    for cut = 1, #data - 1, 3 do
      local p = dir .. "/cut_" .. name
      write_bytes(p, data:sub(1, cut))
      local ok, err = pcall(tvio.read_image, p)
      local good
      if ok then -- only the trailing IEND chunk may be missing (Pillow reads such files too)
        good = kind == "PNG" and cut >= #data - 12 and T.show(err:tolist()) == T.show(full:tolist())
      else
        good = err:find(p, 1, true) ~= nil
        if cut >= 8 then good = good and err:find("cannot decode " .. kind, 1, true) ~= nil end
      end
      if not good then
        all = false
        T.check(false, string.format("%s cut at %d: %s", name, cut, tostring(err)))
        break
      end
    end
    T.check(all, name .. ": every truncation is an error naming the file")
  end
  truncations("png", png, "PNG")
  truncations("jpg", jpg, "JPEG")
  -- corrupt data inside the PNG image data (CRC mismatch) and inside the JPEG header
  local bad = png:sub(1, 60) .. string.char((png:byte(61) + 1) % 256) .. png:sub(62)
  write_bytes(dir .. "/crc.png", bad)
  T.raises(function() tvio.read_image(dir .. "/crc.png") end, "~cannot decode PNG file '" .. dir .. "/crc.png'")
  local badj = jpg:sub(1, 4) .. "\0\0" .. jpg:sub(7)
  write_bytes(dir .. "/hdr.jpg", badj)
  T.raises(function() tvio.read_image(dir .. "/hdr.jpg") end, "~cannot decode JPEG file '" .. dir .. "/hdr.jpg'")
  -- random bytes after a valid signature
  local junk = {}
  for i = 1, 200 do junk[i] = string.char(math.random(0, 255)) end
  write_bytes(dir .. "/junk.png", "\137PNG\r\n\26\n" .. table.concat(junk))
  T.raises(function() tvio.read_image(dir .. "/junk.png") end, "~cannot decode PNG file")
  write_bytes(dir .. "/junk.jpg", "\255\216\255" .. table.concat(junk))
  T.raises(function() tvio.read_image(dir .. "/junk.jpg") end, "~cannot decode JPEG file")
  -- a header claiming a huge image is refused before any allocation
  local huge = png:sub(1, 16) .. string.pack(">I4I4", 100000, 100000) .. png:sub(25)
  write_bytes(dir .. "/huge.png", huge)
  T.raises(function() tvio.read_image(dir .. "/huge.png") end, "~cannot decode PNG file")
  -- writing
  T.raises(function() tvio.write_png(x, dir .. "/no/such/dir/x.png") end, "~cannot open '" .. dir .. "/no/such/dir/x.png' for writing")
  T.raises(function() tvio.encode_png(torch.rand(3, 4, 4)) end, "~expected a uint8")
  T.raises(function() tvio.encode_png(u8({5, 4, 4})) end, "~PNG images have 1 to 4 channels")
  T.raises(function() Image.fromarray(torch.rand(4, 4, 3)) end, "~expected a uint8 tensor")
end)

os.execute("rm -rf '" .. dir .. "'")
