-- SummaryWriter's plugin methods (torch_tensorboard.lua has the writer):
--
--   writer:add_hparams(hparam_dict, metric_dict, {hparam_domain_discrete=, run_name=, global_step=})
--       the hparams plugin's experiment / session_start_info / session_end_info summaries and
--       the metric scalars, in the run <log_dir>/<run_name or time.time()>
--   writer:add_pr_curve(tag, labels, predictions, global_step, num_thresholds=127, weights, walltime)
--   writer:add_pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, global_step, num_thresholds=127,
--       weights, walltime)                                   the pr_curves plugin's [6, n] tensor
--   writer:add_histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
--       global_step, walltime)
--   writer:add_embedding(mat, metadata, label_img, global_step, tag="default", metadata_header)
--       the projector's <log_dir>/<step as 00000>/<tag>/tensors.tsv, metadata.tsv, sprite.png
--       and <log_dir>/projector_config.pbtxt
--   writer:add_audio(tag, snd_tensor, global_step, sample_rate=44100, walltime)   16-bit PCM WAV
--   writer:add_image_with_boxes(tag, img_tensor, box_tensor, global_step, walltime, rescale=1,
--       dataformats="CHW", labels)   boxes (x1, y1, x2, y2) outlined in red, 2 pixels, as PIL draws
--   writer:add_custom_scalars(layout)      layout = {category = {title = {"Multiline" | "Margin", tags}}}
--   writer:add_custom_scalars_multilinechart(tags, category="default", title="untitled")
--   writer:add_custom_scalars_marginchart(tags, category="default", title="untitled")  tags: 3 of them
--   writer:add_mesh(tag, vertices, colors, faces, config_dict, global_step, walltime)
--   writer:add_tensor(tag, tensor, global_step, walltime)   the tensor plugin's TensorProto
--
-- Lua tables have no order: the keys of hparam_dict, metric_dict and layout are written sorted.
-- Not supported, with an error that says what to do instead: labels in add_image_with_boxes
-- (needs PIL's fonts),
-- add_video (needs moviepy's GIF encoder), add_figure (matplotlib), add_onnx_graph (onnx).
local torch = require "torch"
local time = require "time"
local U = require "nn_util"
local P = require "tb_protobuf"
local TB = require "torch.utils.tensorboard"
local H = TB._helpers
local C = torch._io
local image_C = torch._image

local SummaryWriter = TB.SummaryWriter
local number_of, step_of, walltime_of = H.number_of, H.step_of, H.walltime_of

-- H.args, except that a trailing table in the place of a dict parameter (config_dict,
-- hparam_domain_discrete) whose keys are not all parameter names is that parameter.
local function args(fname, spec, ...)
  local n = select("#", ...)
  local last = select(n, ...)
  if n > spec.min and spec.dicts and spec.dicts[spec[n]] and type(last) == "table" and getmetatable(last) == nil then
    local known = {}
    for _, name in ipairs(spec) do known[name] = true end
    for k in pairs(last) do
      if not known[k] then
        local a = table.pack(...)
        a[n + 1] = {} -- empty keywords: `last` is positional
        return H.args(fname, spec, table.unpack(a, 1, n + 1))
      end
    end
  end
  return H.args(fname, spec, ...)
end

local function check_tag(fname, tag)
  if type(tag) ~= "string" then U.errorf("%s: tag must be a string, got %s", fname, type(tag)) end
end

-- sorted keys of a plain table
local function keys_of(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function is_dict(v) return type(v) == "table" and getmetatable(v) == nil and not torch.is_tensor(v) end

-- a tensor or a list of numbers as a float64 CPU tensor (make_np)
local function as_f64(fname, what, v)
  if torch.is_tensor(v) then return v:detach():cpu():to(torch.float64) end
  if type(v) == "table" then return torch.tensor(v, { dtype = torch.float64 }) end
  if type(v) == "number" then return torch.tensor({ v }, { dtype = torch.float64 }) end
  U.errorf("%s: %s must be a tensor or a list of numbers, got %s", fname, what, type(v))
end

local function write(self, fname, values, global_step, walltime)
  self:_writer():summary(P.summary(values), step_of(fname, global_step), walltime_of(fname, walltime))
end

-- ---- hparams ----

local HPARAMS = "hparams"
local DATA_TYPE_STRING, DATA_TYPE_FLOAT64 = 1, 3
local STATUS_SUCCESS = 1

-- Python's type of a value for the domain check (bools and ints are distinct types there)
local function pytype(v)
  if type(v) == "number" then return math.type(v) end
  return type(v)
end

-- HParamsPluginData { int32 version = 1 (0); experiment = 2 | session_start_info = 3 | session_end_info = 4 }
local function hparams_value(tag, field, body)
  return P.value(tag, { metadata = P.metadata(HPARAMS, P.msg(field, body)) })
end

local function hparams_summaries(hparam_dict, metric_dict, domains)
  domains = domains or {}
  if not is_dict(domains) then
    U.error("TypeError: parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
  end
  for _, k in ipairs(keys_of(domains)) do
    local v, hv = domains[k], hparam_dict[k]
    local ok = hv ~= nil and type(v) == "table" and getmetatable(v) == nil
    if ok then
      for _, d in pairs(v) do if pytype(d) ~= pytype(hv) then ok = false end end
    end
    if not ok then
      U.errorf("TypeError: parameter: hparam_domain_discrete[%s] should be a list of same type as hparam_dict[%s].",
        tostring(k), tostring(k))
    end
  end
  local infos, entries = {}, {}
  for _, k in ipairs(keys_of(hparam_dict)) do
    local v = hparam_dict[k]
    local kind, value, dtype
    if type(v) == "number" or type(v) == "boolean" then -- a Python bool is an int: a number too
      kind, value, dtype = "number", (v == true and 1.0) or (v == false and 0.0) or v + 0.0, DATA_TYPE_FLOAT64
    elseif type(v) == "string" then
      kind, value, dtype = "string", v, DATA_TYPE_STRING
    elseif torch.is_tensor(v) then
      if v:numel() ~= 1 then
        U.errorf("add_hparams: a tensor value must have one element, got shape %s for '%s'", U.shape_str(v), k)
      end
      kind, value, dtype = "number", v:item() + 0.0, DATA_TYPE_FLOAT64
    else
      U.error("ValueError: value should be one of int, float, str, bool, or torch.Tensor")
    end
    -- SessionStartInfo.hparams: map entry { string key = 1; Value value = 2 }
    entries[#entries + 1] = P.msg(1, P.msg(1, k) .. P.msg(2, P.struct_value(kind, value)))
    -- HParamInfo { name = 1; type = 4; ListValue domain_discrete = 5 { repeated Value values = 1 } }
    local domain = ""
    if domains[k] ~= nil and not torch.is_tensor(v) then
      local list = {}
      for i, d in ipairs(domains[k]) do
        if kind == "number" then d = (d == true and 1.0) or (d == false and 0.0) or d + 0.0 end
        list[i] = P.msg(1, P.struct_value(kind, d))
      end
      domain = P.msg(5, table.concat(list))
    end
    infos[#infos + 1] = P.msg(4, P.msg(1, k) .. P.int(4, dtype) .. domain)
  end
  -- Experiment { hparam_infos = 4; metric_infos = 5 { MetricName name = 1 { group = 1; tag = 2 } } }
  local metrics = {}
  for _, k in ipairs(keys_of(metric_dict)) do metrics[#metrics + 1] = P.msg(5, P.msg(1, P.msg(2, tostring(k)))) end
  local exp = hparams_value("_hparams_/experiment", 2, table.concat(infos) .. table.concat(metrics))
  local ssi = hparams_value("_hparams_/session_start_info", 3, table.concat(entries))
  local sei = hparams_value("_hparams_/session_end_info", 4, P.int(1, STATUS_SUCCESS)) -- SessionEndInfo.status
  return exp, ssi, sei
end

function SummaryWriter:add_hparams(...)
  local o = args("add_hparams", { "hparam_dict", "metric_dict", "hparam_domain_discrete", "run_name", "global_step",
    min = 2, dicts = { hparam_domain_discrete = true } }, ...)
  if not is_dict(o.hparam_dict) or not is_dict(o.metric_dict) then
    U.error("TypeError: hparam_dict and metric_dict should be dictionary.")
  end
  local exp, ssi, sei = hparams_summaries(o.hparam_dict, o.metric_dict, o.hparam_domain_discrete)
  local run_name = o.run_name
  if run_name == nil or run_name == "" then run_name = U.pyfloat(time.time()) end
  local w = SummaryWriter(self.log_dir .. "/" .. tostring(run_name))
  for _, v in ipairs({ exp, ssi, sei }) do write(w, "add_hparams", { v }, o.global_step) end
  for _, k in ipairs(keys_of(o.metric_dict)) do w:add_scalar(tostring(k), o.metric_dict[k], o.global_step) end
  w:close()
end

-- ---- PR curves ----

local MINIMUM_COUNT = 1e-7

-- PrCurvePluginData { int32 version = 1 (0); uint32 num_thresholds = 2 }; the tensor's rows are
-- tp, fp, tn, fn, precision, recall
local function pr_value(tag, rows, num_thresholds)
  local flat = {}
  for _, row in ipairs(rows) do for _, x in ipairs(row) do flat[#flat + 1] = x end end
  return P.value(tag, { tensor = P.float_tensor({ #rows, #rows[1] }, flat),
    metadata = P.metadata("pr_curves", P.int(2, num_thresholds)) })
end

local function thresholds_of(fname, n)
  if n == nil then return 127 end
  if math.type(n) ~= "integer" or n < 1 then
    U.errorf("%s: num_thresholds must be a positive integer, got %s", fname, tostring(n))
  end
  return math.min(n, 127) -- PyTorch caps it
end

-- TensorBoard's compute_curve: predictions bucketed by floor(p * (n - 1)) (those outside
-- [0, n - 1] not counted), reverse cumulative sums of the (weighted) labels per bucket.
local function compute_curve(labels, predictions, n, weights)
  local p = predictions:detach():cpu()
  if not p:is_floating_point() then p = p:to(torch.float64) end
  local idx = torch.floor(p * (n - 1)):to(torch.float64):reshape(-1) -- in the predictions' dtype, as numpy does
  local lab = labels:detach():cpu():to(torch.float64):reshape(-1)
  if lab:numel() ~= idx:numel() then
    U.errorf("add_pr_curve: labels and predictions must have the same number of elements, got %d and %d",
      lab:numel(), idx:numel())
  end
  local w = weights
  if w == nil then w = 1.0 end
  if torch.is_tensor(w) then w = w:detach():cpu():to(torch.float64):reshape(-1) end
  local keep = torch.logical_and(idx:ge(0), idx:le(n - 1))
  local bins = idx[keep]:to(torch.int64)
  local tpw, fpw = (lab * w), ((1.0 - lab) * w)
  if torch.is_tensor(tpw) and tpw:numel() == keep:numel() then tpw, fpw = tpw[keep], fpw[keep] end
  local tp_b = torch.zeros(n, { dtype = torch.float64 }):index_add(0, bins, tpw)
  local fp_b = torch.zeros(n, { dtype = torch.float64 }):index_add(0, bins, fpw)
  local tp = tp_b:flip({ 0 }):cumsum(0):flip({ 0 })
  local fp = fp_b:flip({ 0 }):cumsum(0):flip({ 0 })
  local tn = fp[0] - fp
  local fn = tp[0] - tp
  local precision = tp / torch.clamp(tp + fp, MINIMUM_COUNT)
  local recall = tp / torch.clamp(tp + fn, MINIMUM_COUNT)
  return { tp:tolist(), fp:tolist(), tn:tolist(), fn:tolist(), precision:tolist(), recall:tolist() }
end

function SummaryWriter:add_pr_curve(...)
  local o = args("add_pr_curve", { "tag", "labels", "predictions", "global_step", "num_thresholds", "weights",
    "walltime", min = 3 }, ...)
  check_tag("add_pr_curve", o.tag)
  local n = thresholds_of("add_pr_curve", o.num_thresholds)
  local labels = torch.is_tensor(o.labels) and o.labels or as_f64("add_pr_curve", "labels", o.labels)
  local preds = torch.is_tensor(o.predictions) and o.predictions or as_f64("add_pr_curve", "predictions", o.predictions)
  local rows = compute_curve(labels, preds, n, o.weights)
  write(self, "add_pr_curve", { pr_value(o.tag, rows, n) }, o.global_step, o.walltime)
end

local PR_RAW = { "true_positive_counts", "false_positive_counts", "true_negative_counts", "false_negative_counts",
  "precision", "recall" }

function SummaryWriter:add_pr_curve_raw(...)
  local spec = { "tag" }
  for _, k in ipairs(PR_RAW) do spec[#spec + 1] = k end
  for _, k in ipairs({ "global_step", "num_thresholds", "weights", "walltime" }) do spec[#spec + 1] = k end
  spec.min = 7
  local o = args("add_pr_curve_raw", spec, ...)
  check_tag("add_pr_curve_raw", o.tag)
  local rows = {}
  for i, k in ipairs(PR_RAW) do
    if o[k] == nil then U.errorf("add_pr_curve_raw() missing required argument '%s'", k) end
    local t = as_f64("add_pr_curve_raw", k, o[k])
    if t:dim() ~= 1 then U.errorf("add_pr_curve_raw: %s must be 1-D, got shape %s", k, U.shape_str(t)) end
    rows[i] = t:tolist()
    if #rows[i] ~= #rows[1] then U.error("ValueError: add_pr_curve_raw: all input arrays must have the same shape") end
  end
  local n = o.num_thresholds or 127
  if math.type(n) ~= "integer" then U.errorf("add_pr_curve_raw: num_thresholds must be an integer, got %s", tostring(n)) end
  write(self, "add_pr_curve_raw", { pr_value(o.tag, rows, math.min(n, 127)) }, o.global_step, o.walltime)
end

-- ---- tensors ----

-- dtype -> TensorProto's DataType and value field (float_val 5, double_val 6, int_val 7, scomplex_val 9,
-- int64_val 10, bool_val 11, dcomplex_val 12, half_val 13, uint32_val 16), as PyTorch maps them
local TENSOR_TYPES = {
  float16 = { 19, 13, "half" }, bfloat16 = { 14, 13, "half" }, float32 = { 1, 5, "f" }, float64 = { 2, 6, "d" },
  int8 = { 6, 7, "i" }, int16 = { 5, 7, "i" }, int32 = { 3, 7, "i" }, int64 = { 9, 10, "i" }, uint8 = { 4, 16, "i" },
  bool = { 10, 11, "i" }, complex64 = { 8, 9, "f" }, complex128 = { 18, 12, "d" },
}

function SummaryWriter:add_tensor(...)
  local o = args("add_tensor", { "tag", "tensor", "global_step", "walltime", min = 2 }, ...)
  check_tag("add_tensor", o.tag)
  if not torch.is_tensor(o.tensor) then U.errorf("add_tensor: tensor must be a tensor, got %s", type(o.tensor)) end
  local t = o.tensor:detach():cpu()
  local name = tostring(t.dtype):gsub("^torch%.", "")
  local ty = TENSOR_TYPES[name]
  if not ty then U.errorf("ValueError: %s has unsupported tensor dtype %s", o.tag, tostring(t.dtype)) end
  local dims = {}
  for i = 0, t:dim() - 1 do dims[#dims + 1] = t:size(i) end
  local flat = t
  if name:find("^complex") then flat = torch.view_as_real(t) end
  local values
  if ty[3] == "half" then
    values = {}
    -- PyTorch's half_to_int: the bits of the value as a float32, read as an int32
    for i, x in ipairs(flat:to(torch.float64):reshape(-1):tolist()) do values[i] = string.unpack("<i4", string.pack("<f", x)) end
  elseif name == "bool" then
    values = flat:to(torch.int64):reshape(-1):tolist()
  else
    values = flat:reshape(-1):tolist()
  end
  local body
  if ty[3] == "f" then body = P.packed_floats(ty[2], values)
  elseif ty[3] == "d" then body = P.packed_doubles(ty[2], values)
  else body = P.packed_ints(ty[2], values) end
  local tensor = P.int(1, ty[1]) .. P.msg(2, P.shape(dims)) .. body
  write(self, "add_tensor", { P.value(o.tag, { tensor = tensor, metadata = P.metadata("tensor") }) }, o.global_step,
    o.walltime)
end

-- ---- raw histograms ----

function SummaryWriter:add_histogram_raw(...)
  local o = args("add_histogram_raw", { "tag", "min", "max", "num", "sum", "sum_squares", "bucket_limits",
    "bucket_counts", "global_step", "walltime", min = 8 }, ...)
  check_tag("add_histogram_raw", o.tag)
  local h = {}
  for _, k in ipairs({ "min", "max", "num", "sum", "sum_squares" }) do
    h[k] = number_of("add_histogram_raw", o[k], k)
  end
  h.limits = as_f64("add_histogram_raw", "bucket_limits", o.bucket_limits):reshape(-1):tolist()
  h.counts = as_f64("add_histogram_raw", "bucket_counts", o.bucket_counts):reshape(-1):tolist()
  if #h.limits ~= #h.counts then
    U.error("ValueError: len(bucket_limits) != len(bucket_counts), see the document.")
  end
  write(self, "add_histogram_raw", { P.value(o.tag, { histo = P.histogram(h) }) }, o.global_step, o.walltime)
end

-- ---- embeddings (the projector plugin) ----

local function write_file(path, text)
  local f, err = io.open(path, "wb")
  if not f then U.errorf("add_embedding: cannot write '%s': %s", path, err) end
  f:write(text)
  f:close()
end

-- "dir" if path is a directory, "file" if something else, nil if absent
local function path_kind(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local _, _, code = f:read(1)
  f:close()
  return code == 21 and "dir" or "file" -- EISDIR
end

-- text_format's string escaping (C escapes, bytes >= 0x80 in octal)
local function pbtxt_string(s)
  return '"' .. s:gsub('[%c"\'\\\128-\255]', function(c)
    local named = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t", ['"'] = '\\"', ["'"] = "\\'", ["\\"] = "\\\\" }
    return named[c] or string.format("\\%03o", c:byte())
  end) .. '"'
end

-- EmbeddingInfo in text format, fields in number order (tensor_name 1, metadata_path 2, sprite 5, tensor_path 6)
local function embedding_pbtxt(e)
  local out = { "embeddings {", "  tensor_name: " .. pbtxt_string(e.tensor_name) }
  if e.metadata_path then out[#out + 1] = "  metadata_path: " .. pbtxt_string(e.metadata_path) end
  if e.sprite_path then
    out[#out + 1] = "  sprite {"
    out[#out + 1] = "    image_path: " .. pbtxt_string(e.sprite_path)
    out[#out + 1] = "    single_image_dim: " .. e.dims[1]
    out[#out + 1] = "    single_image_dim: " .. e.dims[2]
    out[#out + 1] = "  }"
  end
  out[#out + 1] = "  tensor_path: " .. pbtxt_string(e.tensor_path)
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

-- PyTorch's make_sprite: the images in a grid of ceil(sqrt(N)) columns, on a black square
-- as wide as the grid, times 255, clipped, to uint8
local function make_sprite(label_img, path)
  local n = label_img:size(0)
  local nrow = math.ceil(math.sqrt(n))
  local grid = H.make_grid(label_img:detach():cpu():to(torch.float64), nrow)
  local side = grid:size(2)
  if grid:size(1) > side then
    U.errorf("add_embedding: the sprite of %d images of %dx%d does not fit a square %d pixels wide", n,
      label_img:size(2), label_img:size(3), side)
  end
  local square = torch.zeros(3, side, side, { dtype = torch.float64 })
  square:narrow(1, 0, grid:size(1)):copy_(grid)
  local hwc = (square * 255):clamp(0, 255):to(torch.uint8):permute({ 1, 2, 0 }):contiguous()
  image_C.write_file(path, image_C.encode_png(hwc, 6), "add_embedding")
end

local function encode_tag(tag)
  return (tag:gsub("[%%/\\]", function(c) return string.format("%%%02x", c:byte()) end))
end

local function tsv_row(values)
  local parts = {}
  for i, v in ipairs(values) do parts[i] = U.pystr(v) end
  return table.concat(parts, "\t")
end

function SummaryWriter:add_embedding(...)
  local o = args("add_embedding", { "mat", "metadata", "label_img", "global_step", "tag", "metadata_header",
    min = 1 }, ...)
  local mat = o.mat
  if type(mat) == "table" and not torch.is_tensor(mat) then mat = torch.tensor(mat) end
  if not torch.is_tensor(mat) then U.errorf("add_embedding: mat must be a tensor, got %s", type(mat)) end
  mat = mat:detach():cpu()
  local step = step_of("add_embedding", o.global_step) or 0
  local tag = o.tag or "default"
  check_tag("add_embedding", tag)
  local subdir = string.format("%05d", step) .. "/" .. encode_tag(tag)
  local save_path = self.log_dir .. "/" .. subdir
  local kind = path_kind(save_path)
  if kind == "dir" then
    print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
  elseif kind == "file" then
    U.errorf("NotADirectoryError: Path: `%s` exists, but is a file. Cannot proceed.", save_path)
  else
    C.makedirs(save_path)
  end
  local metadata = o.metadata
  if torch.is_tensor(metadata) then metadata = metadata:tolist() end
  local info = { tensor_name = tag .. ":" .. string.format("%05d", step), tensor_path = subdir .. "/tensors.tsv" }
  if metadata ~= nil then
    if type(metadata) ~= "table" then U.errorf("add_embedding: metadata must be a list, got %s", type(metadata)) end
    if mat:dim() < 1 or mat:size(0) ~= #metadata then U.error("AssertionError: #labels should equal with #data points") end
    local lines = {}
    if o.metadata_header == nil or #o.metadata_header == 0 then
      for i, v in ipairs(metadata) do lines[i] = U.pystr(v) end
    else
      if type(metadata[1]) ~= "table" or #o.metadata_header ~= #metadata[1] then
        U.error("AssertionError: len of header must be equal to the number of columns in metadata")
      end
      lines[1] = tsv_row(o.metadata_header)
      for i, row in ipairs(metadata) do lines[i + 1] = tsv_row(row) end
    end
    write_file(save_path .. "/metadata.tsv", table.concat(lines, "\n") .. "\n")
    info.metadata_path = subdir .. "/metadata.tsv"
  end
  if o.label_img ~= nil then
    local img = o.label_img
    if not torch.is_tensor(img) or img:dim() ~= 4 then U.error("add_embedding: label_img must be an N x C x H x W tensor") end
    if mat:dim() < 1 or mat:size(0) ~= img:size(0) then U.error("AssertionError: #images should equal with #data points") end
    make_sprite(img, save_path .. "/sprite.png")
    info.sprite_path, info.dims = subdir .. "/sprite.png", { img:size(3), img:size(2) }
  end
  if mat:dim() ~= 2 then U.error("AssertionError: mat should be 2D, where mat.size(0) is the number of data points") end
  local lines = {}
  for i, row in ipairs(mat:tolist()) do lines[i] = tsv_row(row) .. "\n" end
  write_file(save_path .. "/tensors.tsv", table.concat(lines))
  self._projector_config = (self._projector_config or "") .. embedding_pbtxt(info)
  write_file(self.log_dir .. "/projector_config.pbtxt", self._projector_config)
end

-- ---- audio ----

-- a RIFF/WAVE file of 16-bit mono PCM samples (as Python's wave module writes it)
local function wav_bytes(samples, rate)
  local parts = {}
  for i = 1, #samples do parts[i] = string.pack("<i2", samples[i]) end
  local data = table.concat(parts)
  return "RIFF" .. string.pack("<I4", 36 + #data) .. "WAVE" .. "fmt " .. string.pack("<I4I2I2I4I4I2I2", 16, 1, 1, rate,
    rate * 2, 2, 16) .. "data" .. string.pack("<I4", #data) .. data
end

function SummaryWriter:add_audio(...)
  local o = args("add_audio", { "tag", "snd_tensor", "global_step", "sample_rate", "walltime", min = 2 }, ...)
  check_tag("add_audio", o.tag)
  local snd = o.snd_tensor
  if not torch.is_tensor(snd) then snd = as_f64("add_audio", "snd_tensor", snd) end
  snd = snd:detach():cpu():squeeze()
  if snd:numel() == 0 then U.error("ValueError: zero-size array to reduction operation maximum which has no identity") end
  if not snd:is_floating_point() then snd = snd:to(torch.float64) end
  if snd:abs():max():item() > 1 then
    print("warning: audio amplitude out of range, auto clipped.")
    snd = snd:clamp(-1, 1)
  end
  if snd:dim() ~= 1 then U.error("AssertionError: input tensor should be 1 dimensional.") end
  local rate = o.sample_rate or 44100
  if type(rate) ~= "number" or rate <= 0 then U.errorf("add_audio: sample_rate must be a positive number, got %s", tostring(rate)) end
  -- x * 32767 in the tensor's dtype, truncated to int16
  local samples = (snd * 32767):trunc():to(torch.int64):tolist()
  local wav = wav_bytes(samples, math.floor(rate + 0.5))
  local audio = P.audio(rate, 1, #samples, wav, "audio/wav")
  write(self, "add_audio", { P.value(o.tag, { audio = audio }) }, o.global_step, o.walltime)
end

-- ---- images with boxes ----

-- Fill the pixels PIL's 2-pixel-wide line from (x0, y0) to (x1, y1) covers (axis-aligned):
-- the line and the row (column) below (right of) it, or above (left of) it when it runs backwards.
local function wide_segment(img, x0, y0, x1, y1, color)
  local h, w = img:size(0), img:size(1)
  local r0, r1, c0, c1
  if x0 == x1 and y0 == y1 then
    r0, r1, c0, c1 = y0, y0, x0, x0
  elseif y0 == y1 then
    local off = x1 > x0 and 0 or -1
    r0, r1, c0, c1 = y0 + off, y0 + off + 1, math.min(x0, x1), math.max(x0, x1)
  else
    local off = y1 > y0 and 0 or -1
    r0, r1, c0, c1 = math.min(y0, y1), math.max(y0, y1), x0 + off, x0 + off + 1
  end
  r0, r1, c0, c1 = math.max(r0, 0), math.min(r1, h - 1), math.max(c0, 0), math.min(c1, w - 1)
  if r0 > r1 or c0 > c1 then return end
  local region = img:narrow(0, r0, r1 - r0 + 1):narrow(1, c0, c1 - c0 + 1)
  for c = 0, img:size(2) - 1 do region:select(2, c):fill_(color[c + 1]) end
end

local function draw_box(img, box)
  local t = {}
  for i = 1, 4 do t[i] = math.tointeger(box[i] < 0 and math.ceil(box[i]) or math.floor(box[i])) end -- C's (int)
  local l, top, r, b = t[1], t[2], t[3], t[4]
  local red = { 255, 0, 0, 255 }
  local pts = { { l, top }, { l, b }, { r, b }, { r, top }, { l, top } }
  for i = 1, 4 do wide_segment(img, pts[i][1], pts[i][2], pts[i + 1][1], pts[i + 1][2], red) end
end

function SummaryWriter:add_image_with_boxes(...)
  local o = args("add_image_with_boxes", { "tag", "img_tensor", "box_tensor", "global_step", "walltime", "rescale",
    "dataformats", "labels", min = 3 }, ...)
  check_tag("add_image_with_boxes", o.tag)
  local boxes = as_f64("add_image_with_boxes", "box_tensor", o.box_tensor)
  if boxes:dim() == 1 and boxes:numel() == 4 then boxes = boxes:reshape({ 1, 4 }) end
  if boxes:dim() ~= 2 or boxes:size(1) ~= 4 then
    U.errorf("add_image_with_boxes: box_tensor must be N x 4 (x1, y1, x2, y2), got shape %s", U.shape_str(boxes))
  end
  local labels = o.labels
  if type(labels) == "string" then labels = { labels } end
  if labels ~= nil and #labels ~= boxes:size(0) then labels = nil end -- PyTorch drops labels of the wrong length
  for _, s in ipairs(labels or {}) do
    if s ~= "" then
      U.error("add_image_with_boxes: labels need text rendering (PIL's fonts), which nnrepl does not have; "
        .. "log the boxes without labels and the labels with add_text")
    end
  end
  local rescale = o.rescale or 1
  if type(rescale) ~= "number" or rescale <= 0 then
    U.errorf("add_image_with_boxes: rescale must be a positive number, got %s", tostring(rescale))
  end
  local hwc = H.to_hwc("add_image_with_boxes", o.img_tensor, o.dataformats or "CHW"):clone()
  for _, box in ipairs(boxes:tolist()) do draw_box(hwc, box) end
  -- then the whole image resized by rescale with Pillow's LANCZOS, as PyTorch's make_image does
  local sh, sw = math.floor(hwc:size(0) * rescale), math.floor(hwc:size(1) * rescale)
  if sh < 1 or sw < 1 then U.errorf("add_image_with_boxes: rescale %s leaves no pixels", tostring(rescale)) end
  if sh ~= hwc:size(0) or sw ~= hwc:size(1) then hwc = image_C.resize(hwc, "hwc", sh, sw, "lanczos") end
  local png = image_C.encode_png(hwc, 6)
  self:_writer():image(o.tag, png, hwc:size(0), hwc:size(1), hwc:size(2), step_of("add_image_with_boxes", o.global_step),
    walltime_of("add_image_with_boxes", o.walltime))
end

-- ---- custom scalars ----

-- Layout { repeated Category category = 2 { title = 1; repeated Chart chart = 2 { title = 1;
--   multiline = 2 { repeated string tag = 1 } | margin = 3 { repeated Series series = 1 { value = 1; lower = 2; upper = 3 } } } } }
local function layout_bytes(layout)
  if not is_dict(layout) then U.errorf("add_custom_scalars: layout must be a table, got %s", type(layout)) end
  local cats = {}
  for _, cat in ipairs(keys_of(layout)) do
    local charts = {}
    local v = layout[cat]
    if not is_dict(v) then U.errorf("add_custom_scalars: layout['%s'] must be a table of charts", tostring(cat)) end
    for _, title in ipairs(keys_of(v)) do
      local meta = v[title]
      if type(meta) ~= "table" or type(meta[2]) ~= "table" then
        U.errorf("add_custom_scalars: layout['%s']['%s'] must be {\"Multiline\" or \"Margin\", tags}", tostring(cat),
          tostring(title))
      end
      local tags, content = meta[2]
      if meta[1] == "Margin" then
        if #tags ~= 3 then U.error("AssertionError: len(tags) != 3") end
        content = P.msg(3, P.msg(1, P.str(1, tags[1]) .. P.str(2, tags[2]) .. P.str(3, tags[3])))
      else
        content = P.msg(2, P.repeated_str(1, tags))
      end
      charts[#charts + 1] = P.msg(2, P.str(1, tostring(title)) .. content)
    end
    cats[#cats + 1] = P.msg(2, P.str(1, tostring(cat)) .. table.concat(charts))
  end
  return table.concat(cats)
end

local function write_layout(self, layout)
  local value = P.value("custom_scalars__config__", { tensor = P.string_tensor({}, { layout_bytes(layout) }),
    metadata = P.metadata("custom_scalars") })
  write(self, "add_custom_scalars", { value })
end

function SummaryWriter:add_custom_scalars(...)
  local o = args("add_custom_scalars", { "layout", min = 1 }, ...)
  write_layout(self, o.layout)
end

local function chart_args(fname, ...)
  local o = args(fname, { "tags", "category", "title", min = 1 }, ...)
  if type(o.tags) ~= "table" then U.errorf("%s: tags must be a list of strings", fname) end
  return o.tags, o.category or "default", o.title or "untitled"
end

function SummaryWriter:add_custom_scalars_multilinechart(...)
  local tags, category, title = chart_args("add_custom_scalars_multilinechart", ...)
  write_layout(self, { [category] = { [title] = { "Multiline", tags } } })
end

function SummaryWriter:add_custom_scalars_marginchart(...)
  local tags, category, title = chart_args("add_custom_scalars_marginchart", ...)
  if #tags ~= 3 then U.error("AssertionError: add_custom_scalars_marginchart: tags must hold 3 tags (value, lower, upper)") end
  write_layout(self, { [category] = { [title] = { "Margin", tags } } })
end

-- ---- meshes ----

-- json.dumps(v, sort_keys=True): ", " and ": " separators, non-ASCII as \uXXXX
local function pyjson(v)
  local t = type(v)
  if v == nil then return "null" end
  if t == "boolean" then return v and "true" or "false" end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    return U.pyfloat(v)
  end
  if t == "string" then
    local out = {}
    for _, cp in utf8.codes(v) do
      local named = { [34] = '\\"', [92] = "\\\\", [10] = "\\n", [13] = "\\r", [9] = "\\t", [8] = "\\b", [12] = "\\f" }
      if named[cp] then out[#out + 1] = named[cp]
      elseif cp < 0x20 or (cp >= 0x7F and cp < 0x10000) then out[#out + 1] = string.format("\\u%04x", cp)
      elseif cp >= 0x10000 then
        local c = cp - 0x10000
        out[#out + 1] = string.format("\\u%04x\\u%04x", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF))
      else out[#out + 1] = string.char(cp) end
    end
    return '"' .. table.concat(out) .. '"'
  end
  if t == "table" then
    if #v > 0 then
      local parts = {}
      for i = 1, #v do parts[i] = pyjson(v[i]) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    local parts = {}
    for _, k in ipairs(keys_of(v)) do parts[#parts + 1] = pyjson(tostring(k)) .. ": " .. pyjson(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  U.errorf("TypeError: Object of type %s is not JSON serializable", t)
end

-- MeshPluginData { version = 1 (0); name = 2; content_type = 3; json_config = 5; shape = 6; components = 7 }
local MESH_PARTS = { { "vertices", 1, "VERTEX" }, { "faces", 2, "FACE" }, { "colors", 3, "COLOR" } }

function SummaryWriter:add_mesh(...)
  local o = args("add_mesh", { "tag", "vertices", "colors", "faces", "config_dict", "global_step", "walltime",
    min = 2, dicts = { config_dict = true } }, ...)
  check_tag("add_mesh", o.tag)
  local json = o.config_dict == nil and "{}" or pyjson(o.config_dict)
  local present, components = {}, 0
  for _, part in ipairs(MESH_PARTS) do
    local t = o[part[1]]
    if t ~= nil then
      if not torch.is_tensor(t) then t = torch.tensor(t) end
      if t:dim() ~= 3 then
        U.errorf("AssertionError: add_mesh: %s must have 3 dims (B x N x 3), got shape %s", part[1], U.shape_str(t))
      end
      present[#present + 1] = { t = t:detach():cpu(), part = part }
      components = components | (1 << part[2])
    end
  end
  local values = {}
  for _, p in ipairs(present) do
    local t, ctype = p.t, p.part[2]
    local dims = { t:size(0), t:size(1), t:size(2) }
    local content = P.str(2, o.tag) .. P.int(3, ctype) .. P.str(5, json) .. P.packed_ints(6, dims) .. P.int(7, components)
    values[#values + 1] = P.value(o.tag .. "_" .. p.part[3], {
      tensor = P.float_tensor(dims, t:to(torch.float64):reshape(-1):tolist()), metadata = P.metadata("mesh", content) })
  end
  write(self, "add_mesh", values, o.global_step, o.walltime)
end

-- ---- not supported here ----

function SummaryWriter:add_video(...)
  args("add_video", { "tag", "vid_tensor", "global_step", "fps", "walltime", min = 2 }, ...)
  U.error("add_video: the animated GIF needs an encoder (moviepy in PyTorch) that nnrepl does not have; "
    .. "log the frames with add_images instead")
end

function SummaryWriter:add_figure(...)
  args("add_figure", { "tag", "figure", "global_step", "close", "walltime", min = 2 }, ...)
  U.error("add_figure: matplotlib figures do not exist in nnrepl; render the plot to an image tensor and use add_image")
end

function SummaryWriter:add_onnx_graph(...)
  args("add_onnx_graph", { "prototxt", min = 1 }, ...)
  U.error("add_onnx_graph: reading ONNX models needs the onnx package, which nnrepl does not have")
end

return SummaryWriter
