-- SummaryWriter's plugin methods: the event files are read back with tests/lua/tb_reader.lua and
-- every field of every summary is compared with values worked out here (PR-curve counts by a
-- plain loop over the thresholds, the WAV bytes, the projector's files, the hparams session info),
-- plus the argument errors and the methods that are not supported.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local R = dofile(here .. "tb_reader.lua")(T)
local pb, f32, f64, events_in, read_events = R.pb_decode, R.f32, R.f64, R.events_in, R.read_events
local SummaryWriter = torch.utils.tensorboard.SummaryWriter

local root = os.tmpname()
os.remove(root)

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- float32 rounding of a double
local function r32(x) return string.unpack("<f", string.pack("<f", x)) end

local function packed_floats(b)
  local out = {}
  for i = 1, #(b or ""), 4 do out[#out + 1] = string.unpack("<f", b, i) end
  return out
end

local function packed_varints(b)
  local out, pos = {}, 1
  while pos <= #b do
    local v, shift = 0, 0
    repeat
      local c = b:byte(pos)
      pos = pos + 1
      v = v | ((c & 0x7F) << shift)
      shift = shift + 7
    until c < 0x80
    out[#out + 1] = v
  end
  return out
end

-- SummaryMetadata -> plugin_name, content
local function plugin_of(value)
  local pd = pb(pb(value.fields[9][1])[1][1])
  return pd[1][1], pd[2] and pd[2][1] or ""
end

-- TensorProto -> dtype, dims, fields
local function tensor_of(value)
  local t = pb(value.fields[8][1])
  local dims = {}
  for _, d in ipairs(pb(t[2][1])[2] or {}) do dims[#dims + 1] = pb(d)[1] and pb(d)[1][1] or 0 end
  return t[1][1], dims, t
end

local function only_file(dir)
  local files = events_in(dir)
  T.eq(#files, 1, "one event file in " .. dir)
  return read_events(files[1])
end

-- ---- hparams ----

T.test("add_hparams: experiment, session start and end infos and the metrics in the run", function()
  local dir = root .. "/hp"
  local w = SummaryWriter(dir)
  w:add_hparams({ lr = 0.1, bsize = 32, opt = "adam", flag = true, wd = torch.tensor({ 0.5 }) },
    { ["hparam/accuracy"] = 0.75, ["hparam/loss"] = torch.tensor(2.5) },
    { hparam_domain_discrete = { opt = { "adam", "sgd" }, bsize = { 16, 32 } }, run_name = "run1", global_step = 7 })
  w:close()
  T.eq(#read_events(events_in(dir)[1]), 1, "nothing in the writer's own run")
  local evs = only_file(dir .. "/run1")
  T.eq(#evs, 6, "file version, 3 hparams summaries, 2 metrics")
  for i = 2, 6 do T.eq(evs[i].step, 7) end
  local tags = {}
  for i = 2, 6 do tags[#tags + 1] = evs[i].values[1].tag end
  T.eq(tags, { "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info", "hparam/accuracy",
    "hparam/loss" })
  local data = {}
  for i = 2, 4 do
    local v = evs[i].values[1]
    T.check(v.fields[8] == nil, "no tensor")
    local name, content = plugin_of(v)
    T.eq(name, "hparams")
    data[i] = pb(content)
    T.check(data[i][1] == nil, "version 0 is left out")
  end
  -- Experiment: hparam infos in sorted key order, each {name, type, domain}
  local exp = pb(data[2][2][1])
  local infos = {}
  for _, b in ipairs(exp[4]) do
    local h = pb(b)
    local domain
    if h[5] then
      domain = {}
      for _, val in ipairs(pb(h[5][1])[1] or {}) do
        local sv = pb(val)
        domain[#domain + 1] = sv[2] and f64(sv[2][1]) or sv[3][1]
      end
    end
    infos[#infos + 1] = { h[1][1], h[4][1], domain }
  end
  T.eq(infos, { { "bsize", 3, { 16.0, 32.0 } }, { "flag", 3 }, { "lr", 3 }, { "opt", 1, { "adam", "sgd" } }, { "wd", 3 } },
    "FLOAT64 = 3 (bools too, as in Python), STRING = 1")
  local metrics = {}
  for _, b in ipairs(exp[5]) do metrics[#metrics + 1] = pb(pb(b)[1][1])[2][1] end
  T.eq(metrics, { "hparam/accuracy", "hparam/loss" })
  -- SessionStartInfo: map entries key -> google.protobuf.Value
  local ssi = pb(data[3][3][1])
  local values = {}
  for _, e in ipairs(ssi[1]) do
    local entry = pb(e)
    local sv = pb(entry[2][1])
    values[entry[1][1]] = sv[2] and f64(sv[2][1]) or sv[3] and sv[3][1] or sv[4][1]
  end
  T.eq(values, { lr = 0.1, bsize = 32.0, opt = "adam", flag = 1.0, wd = 0.5 })
  T.eq(#ssi[1], 5)
  -- SessionEndInfo: status STATUS_SUCCESS = 1
  T.eq(pb(data[4][4][1])[1][1], 1)
  T.eq(f32(evs[5].values[1].fields[2][1]), 0.75)
  T.eq(f32(evs[6].values[1].fields[2][1]), 2.5)
end)

T.test("add_hparams: default run name, bool domains, errors", function()
  local dir = root .. "/hp2"
  local w = SummaryWriter(dir)
  w:add_hparams({ flag = false }, {}, { flag = { true, false } })
  local runs = {}
  local p = io.popen('ls "' .. dir .. '"')
  for name in p:lines() do if not name:find("^events") then runs[#runs + 1] = name end end
  p:close()
  T.eq(#runs, 1)
  T.check(runs[1]:match("^%d+%.%d+$") ~= nil, "str(time.time()): " .. tostring(runs[1]))
  local evs = only_file(dir .. "/" .. runs[1])
  T.eq(#evs, 4)
  T.eq(evs[2].step, 0)
  local _, content = plugin_of(evs[2].values[1])
  local info = pb(pb(pb(content)[2][1])[4][1])
  local dom = pb(info[5][1])[1]
  T.eq({ f64(pb(dom[1])[2][1]), f64(pb(dom[2])[2][1]) }, { 1.0, 0.0 }, "bools as numbers")
  _, content = plugin_of(evs[3].values[1])
  local entry = pb(pb(pb(content)[3][1])[1][1])
  T.eq(f64(pb(entry[2][1])[2][1]), 0.0, "false is number_value 0, written (a oneof)")
  T.raises(function() w:add_hparams("lr", {}) end, "TypeError: hparam_dict and metric_dict should be dictionary.")
  T.raises(function() w:add_hparams({ lr = 0.1 }, { acc = 1 }, { lr = { 1, 2 } }) end,
    "TypeError: parameter: hparam_domain_discrete[lr] should be a list of same type as hparam_dict[lr].")
  T.raises(function() w:add_hparams({ lr = 0.1 }, { acc = 1 }, { bs = { 1 } }) end, "~hparam_domain_discrete[bs]")
  T.raises(function() w:add_hparams({ f = print }, {}) end,
    "ValueError: value should be one of int, float, str, bool, or torch.Tensor")
  T.raises(function() w:add_hparams({ t = torch.ones(2) }, {}) end, "~one element")
  w:close()
end)

-- ---- PR curves ----

-- compute_curve by hand: bucket floor(p * (n - 1)) in float32, sums over buckets >= threshold
local function pr_reference(labels, preds, n, weights)
  local tpb, fpb = {}, {}
  for i = 0, n - 1 do tpb[i], fpb[i] = 0.0, 0.0 end
  for i, p in ipairs(preds) do
    local b = math.floor(r32(r32(p) * (n - 1)))
    local wt = type(weights) == "table" and weights[i] or weights or 1.0
    if b >= 0 and b <= n - 1 then
      tpb[b] = tpb[b] + labels[i] * wt
      fpb[b] = fpb[b] + (1 - labels[i]) * wt
    end
  end
  local rows = { {}, {}, {}, {}, {}, {} }
  local tp_all, fp_all = 0.0, 0.0
  for j = 0, n - 1 do tp_all, fp_all = tp_all + tpb[j], fp_all + fpb[j] end
  for i = 0, n - 1 do
    local tp, fp = 0.0, 0.0
    for j = i, n - 1 do tp, fp = tp + tpb[j], fp + fpb[j] end
    local tn, fn = fp_all - fp, tp_all - tp
    local vals = { tp, fp, tn, fn, tp / math.max(1e-7, tp + fp), tp / math.max(1e-7, tp + fn) }
    for r = 1, 6 do rows[r][i + 1] = r32(vals[r]) end
  end
  local flat = {}
  for r = 1, 6 do for _, x in ipairs(rows[r]) do flat[#flat + 1] = x end end
  return flat
end

local function check_pr(value, tag, n, want_flat, width)
  T.eq(value.tag, tag)
  local name, content = plugin_of(value)
  T.eq(name, "pr_curves")
  local pd = pb(content)
  T.check(pd[1] == nil, "version 0")
  T.eq(pd[2][1], n, "num_thresholds")
  local dtype, dims, t = tensor_of(value)
  T.eq(dtype, 1, "DT_FLOAT")
  T.eq(dims, { 6, width or n })
  T.eq(packed_floats(t[5][1]), want_flat)
end

T.test("add_pr_curve: counts, precision and recall per threshold", function()
  local dir = root .. "/pr"
  local w = SummaryWriter(dir)
  local labels = { 1, 0, 1, 1, 0, 0, 1, 0, 1, 1 }
  local preds = { 0.1, 0.5, 0.9, 1.0, 0.3, 0.0, 0.55, 0.95, -0.2, 1.5 }
  local lt, pt = torch.tensor(labels), torch.tensor(preds, { dtype = torch.float32 })
  w:add_pr_curve("pr", lt, pt, 3, 11)
  w:add_pr_curve("prw", lt:to(torch.bool), pt, { global_step = 4, num_thresholds = 5, weights = 2.0 })
  local wts = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }
  w:add_pr_curve("prt", lt, pt, 5, 7, torch.tensor(wts, { dtype = torch.float64 }))
  w:add_pr_curve("big", lt, pt, 6, 1000)
  w:add_pr_curve("def", lt, pt)
  w:close()
  local evs = only_file(dir)
  T.eq(#evs, 6)
  T.eq(evs[2].step, 3)
  local fl = {}
  for i, p in ipairs(preds) do fl[i] = r32(p) end
  check_pr(evs[2].values[1], "pr", 11, pr_reference(labels, fl, 11))
  -- hand check of the first column: 6 positives, 4 negatives counted (-0.2 and 1.5 left out)
  local flat = packed_floats(pb(evs[2].values[1].fields[8][1])[5][1])
  T.eq({ flat[1], flat[12], flat[23], flat[34] }, { 4.0, 4.0, 0.0, 0.0 })
  T.eq(evs[3].step, 4)
  check_pr(evs[3].values[1], "prw", 5, pr_reference(labels, fl, 5, 2.0))
  check_pr(evs[4].values[1], "prt", 7, pr_reference(labels, fl, 7, wts))
  check_pr(evs[5].values[1], "big", 127, pr_reference(labels, fl, 127), 127)
  check_pr(evs[6].values[1], "def", 127, pr_reference(labels, fl, 127), 127)
  T.eq(evs[6].step, 0)
  T.raises(function() SummaryWriter(root .. "/pr2"):add_pr_curve("x", lt, pt, 0, 0) end, "~num_thresholds must be a positive integer")
  T.raises(function() SummaryWriter(root .. "/pr2"):add_pr_curve("x", lt, torch.ones(3), 0) end, "~same number of elements")
end)

T.test("add_pr_curve_raw: the six rows as given", function()
  local dir = root .. "/prraw"
  local w = SummaryWriter(dir)
  local rows = { { 5, 3, 1 }, { 4, 2, 0 }, { 0, 2, 4 }, { 0, 2, 4 }, { 0.5, 0.6, 1.0 }, { 1.0, 0.6, 0.2 } }
  w:add_pr_curve_raw("raw", torch.tensor(rows[1]), rows[2], rows[3], rows[4], torch.tensor(rows[5]), rows[6], 2, 3)
  w:add_pr_curve_raw("raw2", rows[1], rows[2], rows[3], rows[4], rows[5], rows[6], { global_step = 9, num_thresholds = 500 })
  w:close()
  local evs = only_file(dir)
  local flat = {}
  for _, r in ipairs(rows) do for _, x in ipairs(r) do flat[#flat + 1] = r32(x) end end
  check_pr(evs[2].values[1], "raw", 3, flat)
  T.eq(evs[2].step, 2)
  check_pr(evs[3].values[1], "raw2", 127, flat, 3)
  T.eq(evs[3].step, 9)
  T.raises(function() w:add_pr_curve_raw("x", { 1, 2 }, { 1 }, { 1 }, { 1 }, { 1 }, { 1 }) end, "~all input arrays must have the same shape")
end)

-- ---- tensors ----

T.test("add_tensor: DataType, shape and value field per dtype, as PyTorch maps them", function()
  local dir = root .. "/tensor"
  local w = SummaryWriter(dir)
  w:add_tensor("f32", torch.tensor({ { 0.1, -2 }, { 3, 4 } }, { dtype = torch.float32 }), 1)
  w:add_tensor("f64", torch.tensor({ 0.1, 1e300 }, { dtype = torch.float64 }), { global_step = 2, walltime = 5.5 })
  w:add_tensor("i64", torch.tensor({ -3, 2 ^ 40 }, { dtype = torch.int64 }))
  w:add_tensor("i32", torch.tensor({ { -1 }, { 7 } }, { dtype = torch.int32 }))
  w:add_tensor("u8", torch.tensor({ 0, 255 }, { dtype = torch.uint8 }))
  w:add_tensor("b", torch.tensor({ true, false, true }))
  w:add_tensor("h", torch.tensor({ 1.5, -2 }, { dtype = torch.float16 }))
  w:add_tensor("c", torch.tensor({ 1, 2 }, { dtype = torch.complex64 }))
  w:add_tensor("s", torch.tensor(2.5))
  T.raises(function() w:add_tensor("x", { 1 }) end, "add_tensor: tensor must be a tensor, got table")
  w:close()
  local evs = only_file(dir)
  T.eq(#evs, 10)
  T.eq({ evs[3].step, evs[3].wall_time }, { 2, 5.5 })
  local function check(ev, tag, dtype, dims, field, decode, want)
    local v = ev.values[1]
    T.eq(v.tag, tag)
    T.eq(plugin_of(v), "tensor")
    local dt, ds, t = tensor_of(v)
    T.eq(dt, dtype, tag .. " dtype")
    T.eq(ds, dims, tag .. " shape")
    T.eq(decode(t[field][1]), want, tag .. " values")
    for f in pairs(t) do T.check(f == 1 or f == 2 or f == field, tag .. ": no other field " .. f) end
  end
  local doubles = R.packed_doubles
  check(evs[2], "f32", 1, { 2, 2 }, 5, packed_floats, { r32(0.1), -2.0, 3.0, 4.0 })
  check(evs[3], "f64", 2, { 2 }, 6, doubles, { 0.1, 1e300 })
  check(evs[4], "i64", 9, { 2 }, 10, packed_varints, { -3, 1 << 40 })
  check(evs[5], "i32", 3, { 2, 1 }, 7, packed_varints, { -1, 7 })
  check(evs[6], "u8", 4, { 2 }, 16, packed_varints, { 0, 255 })
  check(evs[7], "b", 10, { 3 }, 11, packed_varints, { 1, 0, 1 })
  -- half_val: the value's float32 bits as an int32 (PyTorch's half_to_int)
  check(evs[8], "h", 19, { 2 }, 13, packed_varints, { 0x3FC00000, -0x40000000 })
  check(evs[9], "c", 8, { 2 }, 9, packed_floats, { 1.0, 0.0, 2.0, 0.0 })
  check(evs[10], "s", 1, {}, 5, packed_floats, { 2.5 })
end)

-- ---- raw histograms ----

T.test("add_histogram_raw: the HistogramProto as given, and the length check", function()
  local dir = root .. "/hraw"
  local w = SummaryWriter(dir)
  w:add_histogram_raw("h", -1, 3, 4, 6, 14, { 0, 1.5, 3 }, torch.tensor({ 1, 2, 1 }), 5)
  w:add_histogram_raw("z", 0, 0, 1, 0, 0, { 0 }, { 1 })
  T.raises(function() w:add_histogram_raw("x", 0, 1, 2, 1, 1, { 1, 2 }, { 2 }) end,
    "ValueError: len(bucket_limits) != len(bucket_counts), see the document.")
  w:close()
  local evs = only_file(dir)
  local v = evs[2].values[1]
  T.eq(v.tag, "h")
  T.eq(evs[2].step, 5)
  local h = pb(v.fields[5][1])
  T.eq({ f64(h[1][1]), f64(h[2][1]), f64(h[3][1]), f64(h[4][1]), f64(h[5][1]) }, { -1.0, 3.0, 4.0, 6.0, 14.0 })
  T.eq(R.packed_doubles(h[6][1]), { 0.0, 1.5, 3.0 })
  T.eq(R.packed_doubles(h[7][1]), { 1.0, 2.0, 1.0 })
  h = pb(evs[3].values[1].fields[5][1])
  T.check(h[1] == nil and h[2] == nil and h[4] == nil and h[5] == nil, "zeros left out (proto3)")
  T.eq(f64(h[3][1]), 1.0)
end)

-- ---- embeddings ----

T.test("add_embedding: tensors.tsv, metadata.tsv, sprite.png and projector_config.pbtxt", function()
  local dir = root .. "/emb"
  local w = SummaryWriter(dir)
  local mat = torch.tensor({ { 0.1, -2 }, { 1e-5, 3.5 }, { 1e17, 0 } }, { dtype = torch.float32 })
  -- three 1 x 2 x 2 images: sprite of ceil(sqrt(3)) = 2 columns, 4 x 4
  local imgs = torch.tensor({ { { { 1, 0.5 }, { 0, 1 } } }, { { { 0.2, 0.2 }, { 2, -1 } } }, { { { 0, 0 }, { 0, 0.004 } } } })
  w:add_embedding(mat, { "cat", 7, 2.5 }, imgs)
  w:add_embedding(torch.tensor({ { 1, 2 }, { 3, 4 } }), { { "a", 1 }, { "b", 0.5 } }, nil, 3, "x/y",
    { "name", "score" })
  w:add_embedding(torch.tensor({ { 1.0 } }), { global_step = 12, tag = "plain" })
  w:close()
  T.eq(read_file(dir .. "/00000/default/tensors.tsv"),
    "0.10000000149011612\t-2.0\n9.999999747378752e-06\t3.5\n9.999999843067494e+16\t0.0\n",
    "str() of each float32 element as a Python float")
  T.eq(read_file(dir .. "/00000/default/metadata.tsv"), "cat\n7\n2.5\n")
  T.eq(read_file(dir .. "/00003/x%2fy/tensors.tsv"), "1\t2\n3\t4\n")
  T.eq(read_file(dir .. "/00003/x%2fy/metadata.tsv"), "name\tscore\na\t1\nb\t0.5\n")
  T.eq(read_file(dir .. "/00012/plain/tensors.tsv"), "1.0\n")
  T.eq(read_file(dir .. "/00012/plain/metadata.tsv"), nil)
  T.eq(read_file(dir .. "/projector_config.pbtxt"), table.concat({
    "embeddings {",
    '  tensor_name: "default:00000"',
    '  metadata_path: "00000/default/metadata.tsv"',
    "  sprite {",
    '    image_path: "00000/default/sprite.png"',
    "    single_image_dim: 2",
    "    single_image_dim: 2",
    "  }",
    '  tensor_path: "00000/default/tensors.tsv"',
    "}",
    "embeddings {",
    '  tensor_name: "x/y:00003"',
    '  metadata_path: "00003/x%2fy/metadata.tsv"',
    '  tensor_path: "00003/x%2fy/tensors.tsv"',
    "}",
    "embeddings {",
    '  tensor_name: "plain:00012"',
    '  tensor_path: "00012/plain/tensors.tsv"',
    "}", "" }, "\n"))
  local png = read_file(dir .. "/00000/default/sprite.png")
  local bytes = {}
  for i = 1, #png do bytes[i] = png:byte(i) end
  local img = torch._image.decode(torch.tensor(bytes, { dtype = torch.uint8 }), 0)
  T.eq(img.shape, torch.Size({ 4, 4, 3 }))
  local function px(v) return math.floor(math.max(0, math.min(255, v * 255))) end
  local want = {}
  for y = 0, 3 do
    want[y + 1] = {}
    for x = 0, 3 do
      local k = (y // 2) * 2 + x // 2
      local v = k < 3 and imgs[k][0][y % 2][x % 2]:item() or 0
      want[y + 1][x + 1] = { px(v), px(v), px(v) }
    end
  end
  T.eq(img:tolist(), want, "the images on a square, black where none")
  T.eq(want[1][2][1], 127)
  T.eq(want[4][2][1], 1, "0.004 * 255 truncated")
  T.eq(want[4][4][1], 0, "no fourth image")
end)

T.test("add_embedding: checks", function()
  local dir = root .. "/emb2"
  local w = SummaryWriter(dir)
  T.raises(function() w:add_embedding(torch.zeros(2, 2), { "a" }) end, "AssertionError: #labels should equal with #data points")
  T.raises(function() w:add_embedding(torch.zeros(2, 2), nil, torch.zeros(3, 1, 2, 2)) end,
    "AssertionError: #images should equal with #data points")
  T.raises(function() w:add_embedding(torch.zeros(2), nil, nil, 1) end,
    "AssertionError: mat should be 2D, where mat.size(0) is the number of data points")
  T.raises(function() w:add_embedding(torch.zeros(2, 2), { { "a", 1 }, { "b", 2 } }, nil, 2, "t", { "x" }) end,
    "AssertionError: len of header must be equal to the number of columns in metadata")
  torch._io.makedirs(dir .. "/00005")
  local f = io.open(dir .. "/00005/file", "w")
  f:write("x")
  f:close()
  T.raises(function() w:add_embedding(torch.zeros(2, 2), nil, nil, 5, "file") end,
    "~/emb2/00005/file` exists, but is a file. Cannot proceed.")
  w:close()
end)

-- ---- audio ----

T.test("add_audio: a 16-bit PCM mono WAV in Summary.Audio", function()
  local dir = root .. "/audio"
  local w = SummaryWriter(dir)
  local snd = { 0, 0.5, -0.5, 1, -1, 0.25, 0.1 }
  w:add_audio("a", torch.tensor({ snd }, { dtype = torch.float32 }), 2)
  w:add_audio("clip", torch.tensor({ 2.0, -3.0, 0.5 }, { dtype = torch.float64 }), { global_step = 3, sample_rate = 8000 })
  T.raises(function() w:add_audio("x", torch.zeros(2, 3)) end, "AssertionError: input tensor should be 1 dimensional.")
  w:close()
  local evs = only_file(dir)
  local function check(ev, tag, step, rate, samples)
    T.eq(ev.values[1].tag, tag)
    T.eq(ev.step, step)
    local a = pb(ev.values[1].fields[6][1])
    T.eq(f32(a[1][1]), rate + 0.0)
    T.eq(a[2][1], 1, "num_channels")
    T.eq(a[3][1], #samples, "length_frames")
    T.eq(a[5][1], "audio/wav")
    local data = {}
    for i, s in ipairs(samples) do data[i] = string.pack("<i2", s) end
    data = table.concat(data)
    local header = "RIFF" .. string.pack("<I4", 36 + #data) .. "WAVEfmt " .. string.pack("<I4", 16)
      .. string.pack("<I2", 1) .. string.pack("<I2", 1) .. string.pack("<I4", rate) .. string.pack("<I4", rate * 2)
      .. string.pack("<I2", 2) .. string.pack("<I2", 16) .. "data" .. string.pack("<I4", #data)
    T.eq(#header, 44)
    T.eq(a[4][1], header .. data)
  end
  -- x * 32767 in float32, truncated toward zero
  local want = {}
  for i, x in ipairs(snd) do
    local v = r32(r32(x) * 32767)
    want[i] = v < 0 and math.ceil(v) or math.floor(v)
  end
  T.eq({ want[2], want[3], want[4], want[5] }, { 16383, -16383, 32767, -32767 })
  check(evs[2], "a", 2, 44100, want)
  check(evs[3], "clip", 3, 8000, { 32767, -32767, 16383 })
end)

-- ---- images with boxes ----

T.test("add_image_with_boxes: red 2-pixel outlines as PIL draws them", function()
  local dir = root .. "/boxes"
  local w = SummaryWriter(dir)
  local img = torch.zeros(3, 10, 12)
  img[1]:fill_(0.5)
  w:add_image_with_boxes("b", img, torch.tensor({ { 2.7, 3, 7, 8 }, { 10, 0, 11, 1 } }), 4)
  w:add_image_with_boxes("hwc", torch.full({ 6, 5, 3 }, 255, { dtype = torch.uint8 }), torch.tensor({ 1, 1, 3, 4 }),
    { dataformats = "HWC", labels = { "a", "b" } }) -- labels of the wrong length are dropped, as in PyTorch
  T.raises(function() w:add_image_with_boxes("x", img, torch.tensor({ { 0, 0, 1, 1 } }), 0, nil, 1, "CHW", { "cat" }) end,
    "~labels need text rendering")
  w:add_image_with_boxes("big", img, torch.tensor({ { 2.7, 3, 7, 8 } }), 5, nil, 1.5) -- drawn, then LANCZOS-resized
  T.raises(function() w:add_image_with_boxes("x", img, torch.tensor({ { 0, 0, 1, 1 } }), 0, nil, 0) end,
    "~rescale must be a positive number")
  T.raises(function() w:add_image_with_boxes("x", img, torch.tensor({ 0, 0, 1 })) end, "~box_tensor must be N x 4")
  w:close()
  local evs = only_file(dir)
  local function image_of(ev)
    local im = pb(ev.values[1].fields[4][1])
    local bytes = {}
    for i = 1, #im[4][1] do bytes[i] = im[4][1]:byte(i) end
    return im[1][1], im[2][1], im[3][1], torch._image.decode(torch.tensor(bytes, { dtype = torch.uint8 }), 0):tolist()
  end
  -- a box (l, t, r, b): the left side covers columns l, l+1, the right side r-1, r; the bottom
  -- rows b, b+1, the top t-1, t (the lines run l,t -> l,b -> r,b -> r,t -> l,t)
  local function on_box(y, x, l, t, r, b)
    return ((y == t - 1 or y == t) and x >= l and x <= r) or ((y == b or y == b + 1) and x >= l and x <= r)
      or ((x == l or x == l + 1) and y >= t and y <= b) or ((x == r - 1 or x == r) and y >= t and y <= b)
  end
  local h, wd, c, px = image_of(evs[2])
  T.eq({ h, wd, c }, { 10, 12, 3 })
  T.eq(evs[2].step, 4)
  local ok, nred = true, 0
  for y = 0, 9 do
    for x = 0, 11 do
      local red = on_box(y, x, 2, 3, 7, 8) or on_box(y, x, 10, 0, 11, 1)
      local want = red and { 255, 0, 0 } or { 0, 127, 0 }
      if red then nred = nred + 1 end
      if not T.eq(px[y + 1][x + 1], want, string.format("pixel (%d, %d)", y, x)) then ok = false end
    end
  end
  T.check(ok and nred == 46, "46 red pixels: " .. nred)
  h, wd, c, px = image_of(evs[3])
  T.eq({ h, wd, c }, { 6, 5, 3 })
  for y = 0, 5 do
    for x = 0, 4 do
      T.eq(px[y + 1][x + 1], on_box(y, x, 1, 1, 3, 4) and { 255, 0, 0 } or { 255, 255, 255 })
    end
  end
  -- rescale 1.5: the drawn 10 x 12 image through Pillow's LANCZOS (checked against Pillow in
  -- tests/parity/image_parity.py) to 15 x 18
  h, wd, c, px = image_of(evs[4])
  T.eq({ h, wd, c, evs[4].step }, { 15, 18, 3, 5 })
  local drawn = torch.zeros(10, 12, 3, { dtype = torch.uint8 })
  for y = 0, 9 do
    for x = 0, 11 do
      local v = on_box(y, x, 2, 3, 7, 8) and { 255, 0, 0 } or { 0, 127, 0 }
      for k = 1, 3 do drawn[y][x][k - 1] = v[k] end
    end
  end
  local Image = require("tv_io").Image
  T.eq(px, Image.fromarray(drawn):resize({ 18, 15 }, Image.LANCZOS)._data:tolist(), "the LANCZOS-resized drawing")
end)

-- ---- custom scalars ----

local function layout_of(ev)
  local v = ev.values[1]
  T.eq(v.tag, "custom_scalars__config__")
  T.eq(plugin_of(v), "custom_scalars")
  local dtype, dims, t = tensor_of(v)
  T.eq(dtype, 7, "DT_STRING")
  T.eq(dims, {}, "an empty shape")
  T.eq(#t[8], 1)
  local cats = {}
  for _, cb in ipairs(pb(t[8][1])[2]) do
    local cat = pb(cb)
    local charts = {}
    for _, chb in ipairs(cat[2] or {}) do
      local ch = pb(chb)
      local entry = { title = ch[1][1] }
      if ch[2] then entry.multiline = pb(ch[2][1])[1] or {} end
      if ch[3] then
        local s = pb(pb(ch[3][1])[1][1])
        entry.margin = { s[1][1], s[2][1], s[3][1] }
      end
      charts[#charts + 1] = entry
    end
    cats[#cats + 1] = { title = cat[1][1], charts = charts }
  end
  return cats
end

T.test("add_custom_scalars and its multiline / margin charts: the Layout proto", function()
  local dir = root .. "/custom"
  local w = SummaryWriter(dir)
  w:add_custom_scalars({
    Taiwan = { twse = { "Multiline", { "twse/0050", "twse/2330" } } },
    USA = { dow = { "Margin", { "dow/aaa", "dow/bbb", "dow/ccc" } }, nasdaq = { "Multiline", { "nasdaq/aaa" } } },
  })
  w:add_custom_scalars_multilinechart({ "loss/train", "loss/valid" })
  w:add_custom_scalars_marginchart({ "v", "lo", "hi" }, "cat", "band")
  w:add_custom_scalars_multilinechart({}, { title = "empty" })
  T.raises(function() w:add_custom_scalars_marginchart({ "a", "b" }) end, "~tags must hold 3")
  T.raises(function() w:add_custom_scalars({ c = { t = { "Margin", { "a" } } } }) end, "AssertionError: len(tags) != 3")
  w:close()
  local evs = only_file(dir)
  T.eq(#evs, 5)
  T.eq(evs[2].step, 0)
  T.eq(layout_of(evs[2]), {
    { title = "Taiwan", charts = { { title = "twse", multiline = { "twse/0050", "twse/2330" } } } },
    { title = "USA", charts = { { title = "dow", margin = { "dow/aaa", "dow/bbb", "dow/ccc" } },
      { title = "nasdaq", multiline = { "nasdaq/aaa" } } } },
  })
  T.eq(layout_of(evs[3]), { { title = "default", charts = { { title = "untitled", multiline = { "loss/train", "loss/valid" } } } } })
  T.eq(layout_of(evs[4]), { { title = "cat", charts = { { title = "band", margin = { "v", "lo", "hi" } } } } })
  T.eq(layout_of(evs[5]), { { title = "default", charts = { { title = "empty", multiline = {} } } } })
end)

-- ---- meshes ----

T.test("add_mesh: one summary value per component with MeshPluginData", function()
  local dir = root .. "/mesh"
  local w = SummaryWriter(dir)
  local verts = torch.tensor({ { { 1, 1, 1 }, { -1, -1, 1 }, { 1, -1, -1 }, { -1, 1, -1 } } }, { dtype = torch.float32 })
  local colors = torch.tensor({ { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 }, { 255, 0, 255 } } }, { dtype = torch.int32 })
  local faces = torch.tensor({ { { 0, 2, 3 }, { 0, 3, 1 }, { 0, 1, 2 }, { 1, 3, 2 } } }, { dtype = torch.int32 })
  local config = { camera = { cls = "PerspectiveCamera", fov = 75 },
    lights = { { cls = "AmbientLight", color = "#ffffff", intensity = 0.75 } }, material = { size = 0.1, name = "\xc3\xa9" } }
  w:add_mesh("my_mesh", verts, colors, faces, config, 5)
  w:add_mesh("cloud", torch.tensor({ { { 0.5, 0, 0 } } }), { global_step = 6 })
  T.raises(function() w:add_mesh("bad", torch.zeros(4, 3)) end, "~vertices must have 3 dims")
  w:close()
  local evs = only_file(dir)
  T.eq(#evs, 3)
  T.eq(evs[2].step, 5)
  local vals = evs[2].values
  T.eq(#vals, 3)
  local json = '{"camera": {"cls": "PerspectiveCamera", "fov": 75}, "lights": [{"cls": "AmbientLight", '
    .. '"color": "#ffffff", "intensity": 0.75}], "material": {"name": "\\u00e9", "size": 0.1}}'
  local parts = { { "my_mesh_VERTEX", 1, verts }, { "my_mesh_FACE", 2, faces }, { "my_mesh_COLOR", 3, colors } }
  for i, part in ipairs(parts) do
    local v = vals[i]
    T.eq(v.tag, part[1])
    local name, content = plugin_of(v)
    T.eq(name, "mesh")
    local md = pb(content)
    T.check(md[1] == nil, "version 0")
    T.eq(md[2][1], "my_mesh")
    T.eq(md[3][1], part[2], "content_type")
    T.eq(md[5][1], json, "json.dumps(config_dict, sort_keys=True)")
    T.eq(packed_varints(md[6][1]), { 1, 4, 3 }, "shape")
    T.eq(md[7][1], 14, "components: 1<<1 | 1<<2 | 1<<3")
    local dtype, dims, t = tensor_of(v)
    T.eq(dtype, 1)
    T.eq(dims, { 1, 4, 3 })
    local want = {}
    for _, x in ipairs(part[3]:reshape(-1):tolist()) do want[#want + 1] = r32(x) end
    T.eq(packed_floats(t[5][1]), want)
  end
  vals = evs[3].values
  T.eq(#vals, 1)
  T.eq(vals[1].tag, "cloud_VERTEX")
  local _, content = plugin_of(vals[1])
  local md = pb(content)
  T.eq(md[5][1], "{}")
  T.eq(md[7][1], 2)
  T.eq(packed_floats(pb(vals[1].fields[8][1])[5][1]), { 0.5, 0.0, 0.0 })
end)

-- ---- not supported ----

T.test("add_video, add_figure, add_onnx_graph say what is not supported", function()
  local w = SummaryWriter(root .. "/unsupported")
  T.raises(function() w:add_video("v", torch.zeros(1, 2, 3, 4, 4)) end, "~add_video: the animated GIF needs an encoder")
  T.raises(function() w:add_figure("f", {}) end, "~render the plot to an image tensor and use add_image")
  T.raises(function() w:add_onnx_graph("m.onnx") end, "~add_onnx_graph: reading ONNX models needs the onnx package")
  T.raises(function() w:add_audio("a", torch.zeros(3), { rate = 1 }) end, "add_audio() got an unexpected keyword argument 'rate'")
  w:close()
end)

-- ---- CUDA tensors give the same files ----

if torch.cuda.is_available() then
  T.test("CUDA tensors: the same summaries as from CPU tensors", function()
    local function log(dir, dev)
      local w = SummaryWriter(dir)
      local g = torch.Generator():manual_seed(3)
      local preds = torch.rand(50, { generator = g }):to(dev)
      local labels = torch.rand(50, { generator = g }):gt(0.5):to(dev)
      w:add_pr_curve("pr", labels, preds, 1, 21)
      w:add_audio("a", (torch.rand(20, { generator = g }) * 2 - 1):to(dev), 1)
      w:add_mesh("m", torch.rand(1, 5, 3, { generator = g }):to(dev), nil, nil, nil, 1)
      w:add_image_with_boxes("b", torch.rand(3, 8, 8, { generator = g }):to(dev), torch.tensor({ { 1, 1, 5, 6 } }):to(dev), 1)
      w:add_histogram_raw("h", 0, 1, 2, 1, 1, torch.tensor({ 0.5, 1 }):to(dev), torch.tensor({ 1, 1 }):to(dev), 1)
      w:add_embedding(torch.rand(4, 3, { generator = g }):to(dev), nil, torch.rand(4, 3, 2, 2, { generator = g }):to(dev), 1)
      w:add_tensor("t", torch.rand(2, 3, { generator = g }):to(dev), 1)
      w:add_hparams({ lr = torch.tensor(0.5):to(dev) }, { acc = torch.tensor(0.25):to(dev) }, { run_name = "hp" })
      w:close()
    end
    log(root .. "/cpu", "cpu")
    log(root .. "/cuda", "cuda")
    for _, sub in ipairs({ "", "/hp" }) do
      local a, b = only_file(root .. "/cpu" .. sub), only_file(root .. "/cuda" .. sub)
      T.eq(#a, #b)
      for i = 2, #a do T.eq(a[i].values, b[i].values, "event " .. i .. sub) end
    end
    for _, f in ipairs({ "tensors.tsv", "sprite.png" }) do
      T.eq(read_file(root .. "/cuda/00001/default/" .. f), read_file(root .. "/cpu/00001/default/" .. f), f)
    end
  end)
else
  T.skip("no CUDA device", 1)
end

os.execute('rm -rf "' .. root .. '"')
