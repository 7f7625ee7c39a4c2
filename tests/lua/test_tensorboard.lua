-- torch.utils.tensorboard.SummaryWriter: event files read back by a reader
-- written here (TFRecord framing, both masked CRC-32Cs computed here, a
-- protobuf decoder), every kind of summary decoded and compared, events on
-- disk before close, add_scalars' runs, file names and argument errors.
local T = ...
local SummaryWriter = require("torch.utils.tensorboard").SummaryWriter
T.check(torch.utils.tensorboard.SummaryWriter == SummaryWriter)

local root = os.tmpname()
os.remove(root)

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local R = dofile(here .. "tb_reader.lua")(T)
local crc32c, read_records, pb_decode, f64, f32 = R.crc32c, R.read_records, R.pb_decode, R.f64, R.f32
local packed_doubles, events_in, read_events = R.packed_doubles, R.events_in, R.read_events
T.eq(crc32c("123456789"), 0xE3069283, "CRC-32C check value")

T.test("scalars: framing, CRCs, first event, values read back before close", function()
  local dir = root .. "/scalars"
  local w = SummaryWriter(dir)
  T.eq(w:get_logdir(), dir)
  local files = events_in(dir)
  T.eq(#files, 1, "one event file from the start")
  local host = torch._io.hostname():gsub("%p", "%%%0")
  T.check(files[1]:match("/events%.out%.tfevents%.%d%d%d%d%d%d%d%d%d%d%." .. host .. "%.%d+%.%d+$") ~= nil, files[1])
  local values = {}
  for i = 0, 49 do
    values[i] = 1 / (i + 1) + 0.1
    w:add_scalar("train_loss", values[i], i)
  end
  w:add_scalar("lr", torch.tensor(0.001), 7, 1234.5)
  w:add_scalar("epoch", 3, { global_step = 3, walltime = 99.25 })
  -- nothing is held back: everything is in the file before close
  local evs = read_events(files[1])
  T.eq(#evs, 53, "events on disk before close")
  T.eq(evs[1].file_version, "brain.Event:2")
  T.check(evs[1].values == nil and math.abs(evs[1].wall_time - require("time").time()) < 60, "first event's wall time")
  local ok = true
  for i = 0, 49 do
    local ev = evs[i + 2]
    local v = ev.values and ev.values[1]
    if not (v and v.tag == "train_loss" and ev.step == i and f32(v.fields[2][1]) == f32(string.pack("<f", values[i]))) then
      ok = false
    end
  end
  T.check(ok, "every train_loss scalar with its step")
  T.check(evs[52].values[1].tag == "lr" and evs[52].step == 7 and evs[52].wall_time == 1234.5)
  T.check(math.abs(f32(evs[52].values[1].fields[2][1]) - 0.001) < 1e-9)
  T.check(evs[53].step == 3 and evs[53].wall_time == 99.25 and f32(evs[53].values[1].fields[2][1]) == 3)
  w:close()
  T.eq(#read_events(files[1]), 53)
  -- a write after close opens a new file, as PyTorch does
  w:add_scalar("late", 1.0, 0)
  w:close()
  files = events_in(dir)
  T.eq(#files, 2)
  local evs2 = read_events(files[2])
  T.check(#evs2 == 2 and evs2[2].values[1].tag == "late")
end)

T.test("a damaged record fails the test reader's CRC check", function()
  local dir = root .. "/damaged"
  local w = SummaryWriter{ log_dir = dir }
  w:add_scalar("x", 1.0, 1)
  w:close()
  local path = events_in(dir)[1]
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  local bad = s:sub(1, #s - 6) .. string.char(s:byte(#s - 5) ~ 1) .. s:sub(#s - 4)
  f = assert(io.open(path, "wb"))
  f:write(bad)
  f:close()
  local _, ok = read_records(path)
  T.check(not ok, "a flipped bit is caught")
end)

T.test("add_scalars writes one run per key", function()
  local dir = root .. "/multi"
  local w = SummaryWriter(dir)
  w:add_scalars("loss/all", { train = 0.5, valid = 0.75 }, 4)
  w:add_scalars("loss/all", { train = 0.25, valid = 0.5 }, 5)
  w:close()
  for key, want in pairs({ train = { 0.5, 0.25 }, valid = { 0.75, 0.5 } }) do
    local files = events_in(dir .. "/loss_all_" .. key)
    T.eq(#files, 1, key)
    local evs = read_events(files[1])
    T.eq(#evs, 3)
    T.check(evs[1].file_version == "brain.Event:2")
    T.check(evs[2].values[1].tag == "loss/all" and evs[2].step == 4 and f32(evs[2].values[1].fields[2][1]) == want[1])
    T.check(evs[3].step == 5 and f32(evs[3].values[1].fields[2][1]) == want[2])
  end
end)

local function histo_of(ev)
  local h = pb_decode(ev.values[1].fields[5][1])
  return {
    min = f64(h[1][1]), max = f64(h[2][1]), num = f64(h[3][1]), sum = f64(h[4][1]), sum_squares = f64(h[5][1]),
    limits = packed_doubles(h[6][1]), counts = packed_doubles(h[7][1]),
  }
end

T.test("histograms: counts, limits and moments as torch.utils.tensorboard makes them", function()
  local dir = root .. "/histo"
  local w = SummaryWriter(dir)
  w:add_histogram("h", torch.tensor({ -1, 0, 0.5, 2, 2, 10 }), 1, 4)
  w:add_histogram("t", { 0.5, 0.5, 3.0 }, 2)
  w:add_histogram("e", torch.tensor({ 1.0, 2.0, 3.0, 3.5, 9.0 }), 3, { 0, 1, 2, 3, 4 })
  w:add_histogram("big", torch.arange(0, 100):float(), 4, { bins = 10, max_bins = 4 })
  w:close()
  local evs = read_events(events_in(dir)[1])
  -- bins = 4 over [-1, 10]: edges -1, 1.75, 4.5, 7.25, 10; counts 3, 2, 0, 1; an empty bucket first
  local h = histo_of(evs[2])
  T.eq(evs[2].values[1].tag, "h")
  T.eq({ h.min, h.max, h.num, h.sum, h.sum_squares }, { -1.0, 10.0, 6.0, 13.5, 109.25 })
  T.eq(h.limits, { -1.0, 1.75, 4.5, 7.25, 10.0 })
  T.eq(h.counts, { 0.0, 3.0, 2.0, 0.0, 1.0 })
  -- TensorBoard's default buckets: +-1e-12 * 1.1^k and 0
  local edges, v = {}, 1e-12
  while v < 1e20 do edges[#edges + 1] = v; v = v * 1.1 end
  local function right_edge(x) for _, e in ipairs(edges) do if e > x then return e end end end
  local function left_edge(x) local l; for _, e in ipairs(edges) do if e <= x then l = e end end return l end
  h = histo_of(evs[3])
  T.eq(h.num, 3.0)
  T.eq(h.limits[1], left_edge(0.5), "the empty bucket's limit is the left edge of 0.5's bin")
  T.eq(h.limits[2], right_edge(0.5))
  T.eq(h.limits[#h.limits], right_edge(3.0))
  T.eq(h.counts[1], 0.0)
  T.eq(h.counts[2], 2.0)
  T.eq(h.counts[#h.counts], 1.0)
  local total = 0
  for _, c in ipairs(h.counts) do total = total + c end
  T.eq(total, 3.0)
  -- explicit edges: the last bin is closed, values outside are not counted
  h = histo_of(evs[4])
  T.eq(h.limits, { 1.0, 2.0, 3.0, 4.0 }, "right bucket limits, from the empty [0,1) on")
  T.eq(h.counts, { 0.0, 1.0, 1.0, 2.0 }, "1 in [1,2), 2 in [2,3), 3 and 3.5 in [3,4], 9 outside")
  T.eq(h.num, 5.0)
  -- 10 bins merged by 2 into 5 (PyTorch's max_bins rule), then trimmed
  h = histo_of(evs[5])
  local step = 99 / 10 -- numpy.linspace: i * step + start
  T.eq(h.limits, { 0.0, 2 * step, 4 * step, 6 * step, 8 * step, 99.0 })
  T.eq(h.counts, { 0.0, 20.0, 20.0, 20.0, 20.0, 20.0 })
  T.raises(function()
    local w2 = SummaryWriter(root .. "/histo2")
    w2:add_histogram("x", torch.tensor({}), 0)
  end, "~The input has no element")
end)

T.test("images: PNG bytes, size and colorspace", function()
  local dir = root .. "/image"
  local w = SummaryWriter(dir)
  local img = torch.tensor({ { { 0.0, 0.5 }, { 1.0, 2.0 } }, { { 0.25, 0.0 }, { -1.0, 0.999 } }, { { 1, 1 }, { 1, 1 } } })
  w:add_image("img", img, 1)
  w:add_image("gray", torch.tensor({ { 10, 20, 30 } }, { dtype = torch.uint8 }), 2, { dataformats = "HW" })
  w:add_images("grid", torch.zeros(10, 1, 2, 3), 3)
  w:close()
  local evs = read_events(events_in(dir)[1])
  local function image_of(ev)
    local im = pb_decode(ev.values[1].fields[4][1])
    return im[1][1], im[2][1], im[3][1], im[4][1]
  end
  local h, wd, c, png = image_of(evs[2])
  T.eq({ h, wd, c }, { 2, 2, 3 })
  T.eq(png:sub(1, 8), "\137PNG\r\n\26\n")
  local bytes = {}
  for i = 1, #png do bytes[i] = png:byte(i) end
  local decoded = torch._image.decode(torch.tensor(bytes, { dtype = torch.uint8 }), 0)
  -- float images: x * 255, clipped to [0, 255], truncated
  T.eq(decoded:permute({ 2, 0, 1 }):tolist(), { { { 0, 127 }, { 255, 255 } }, { { 63, 0 }, { 0, 254 } }, { { 255, 255 }, { 255, 255 } } })
  h, wd, c = image_of(evs[3])
  T.eq({ h, wd, c }, { 1, 3, 3 })
  h, wd, c = image_of(evs[4])
  T.eq({ h, wd, c }, { 4, 24, 3 }, "10 images in rows of 8")
  T.raises(function() SummaryWriter(root .. "/image2"):add_image("x", torch.zeros(2, 2), 0) end, "~does not match")
end)

T.test("text summaries", function()
  local dir = root .. "/text"
  local w = SummaryWriter(dir)
  w:add_text("note", "hello **world**", 5)
  w:close()
  local ev = read_events(events_in(dir)[1])[2]
  T.eq(ev.step, 5)
  local v = ev.values[1]
  T.eq(v.tag, "note/text_summary")
  local meta = pb_decode(v.fields[9][1])
  T.eq(pb_decode(meta[1][1])[1][1], "text")
  local tensor = pb_decode(v.fields[8][1])
  T.eq(tensor[1][1], 7, "DT_STRING")
  T.eq(pb_decode(pb_decode(tensor[2][1])[2][1])[1][1], 1, "shape [1]")
  T.eq(tensor[8][1], "hello **world**")
end)

T.test("defaults and argument errors", function()
  local d = require("torch.utils.tensorboard")._default_log_dir("_test")
  T.check(d:match("^runs/%a%a%a%d%d_%d%d%-%d%d%-%d%d_.+_test$") ~= nil, d)
  local w = SummaryWriter(root .. "/errors")
  T.raises(function() w:add_scalar("x", "abc", 1) end, "add_scalar: scalar_value must be a number, got string")
  T.raises(function() w:add_scalar("x", torch.ones(2), 1) end, "~one-element tensor")
  T.raises(function() w:add_scalar("x", 1, { step = 1 }) end, "add_scalar() got an unexpected keyword argument 'step'")
  T.raises(function() w:add_histogram("x", torch.ones(3), 0, "auto") end, "~bins must be 'tensorflow'")
  T.raises(function() SummaryWriter({ logdir = "x" }) end, "SummaryWriter() got an unexpected keyword argument 'logdir'")
  w:flush()
  w:close()
  T.check(tostring(w):find("SummaryWriter") ~= nil)
  do
    local w2 <close> = SummaryWriter(root .. "/closing")
    w2:add_scalar("x", 1, 1)
  end
  T.eq(#read_events(events_in(root .. "/closing")[1]), 2)
end)

os.execute('rm -rf "' .. root .. '"')
