-- torch.load of checkpoints written by PyTorch's torch.save (zip format): tests/data/pth/, made
-- by PyTorch 2.11 with tests/data/pth/make_fixtures.py, whose values are closed forms of the
-- position, recomputed here; plus corrupt and refused files.
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local with_hub_dir = dofile(here .. "hub_dir.lua")
local data = here .. "../data/pth/"
local FX = dofile(here .. "fixture_dir.lua")("load_pth")

local function values(t) return t:double():flatten():tolist() end
local function closed(n, f)
  local out = {}
  for i = 0, n - 1 do out[#out + 1] = f(i) end
  return out
end

T.test("a state_dict: OrderedDict order, values, dtypes, load_state_dict", function()
  local sd = torch.load(data .. "state_dict.pth")
  local keys = {}
  for k in pairs(sd) do keys[#keys + 1] = k end
  T.eq(keys, { "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
    "2.weight", "2.bias" }, "keys in the saved order")
  local i = 0
  for k, v in pairs(sd) do
    if k ~= "1.num_batches_tracked" then
      T.eq(v.dtype, torch.float32, k .. " dtype")
      T.eq(values(v), closed(v:numel(), function(j) return j * 0.25 - i end), k .. " values")
    end
    i = i + 1
  end
  T.eq(tostring(sd["0.weight"]:size()), "torch.Size([3, 2, 3, 3])")
  T.eq(sd["1.num_batches_tracked"].dtype, torch.int64)
  T.eq(sd["1.num_batches_tracked"]:item(), 7)
  local m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Linear(4, 2))
  m:load_state_dict(sd)
  T.eq(values(m[2].bias), { -8.0, -7.75 }, "loaded into a model")
  T.eq(m[1].num_batches_tracked:item(), 7)
end)

T.test("every dtype, shared storages, views, nested containers", function()
  local x = torch.load(data .. "mixed.pth")
  local base = closed(24, function(j) return j * 0.5 - 3 end)
  T.eq(values(x.f32), base)
  T.eq(tostring(x.f32:size()), "torch.Size([4, 6])")
  T.eq(x.view_t:stride(), { 1, 6 }, "a transposed view keeps its strides")
  T.eq(values(x.view_t), values(x.f32:t()))
  T.eq(values(x.view_off), closed(12, function(j) return base[j + 6] end), "storage offset 5")
  T.eq(values(x.step), closed(8, function(j) return base[3 * j + 1] end), "stride 3")
  x.f32[0][0] = 100
  T.eq(x.view_t[0][0]:item(), 100.0, "views of one storage share it")
  T.eq(x.step[0]:item(), 100.0)
  T.eq(x.f64.dtype, torch.float64)
  T.near(values(x.f64), closed(5, function(j) return j / 3 end), 1e-15)
  T.eq(x.f16.dtype, torch.float16)
  T.eq(values(x.f16), closed(6, function(j) return j * 0.125 end))
  T.eq(x.bf16.dtype, torch.bfloat16)
  T.eq(values(x.bf16), closed(6, function(j) return j - 2.5 end))
  T.eq(x.i64.dtype, torch.int64)
  T.eq(x.i64:tolist(), closed(7, function(j) return j * 1000000007 - 3 end))
  T.eq(x.i32.dtype, torch.int32)
  T.eq(x.i32:tolist(), closed(5, function(j) return j * -70000 end))
  T.eq(x.i16:tolist(), closed(4, function(j) return j * -300 end))
  T.eq(x.i8:tolist(), closed(6, function(j) return j - 3 end))
  T.eq(x.u8:tolist(), closed(6, function(j) return j * 40 end))
  T.eq(x.bool:tolist(), { true, false, true, false, true })
  T.eq(x.scalar:dim(), 0)
  T.eq(x.scalar:item(), 2.75)
  T.eq(tostring(x.empty:size()), "torch.Size([0, 3])")
  T.check(x.param.requires_grad and x.param.is_leaf, "a Parameter loads as a leaf that requires grad")
  T.eq(values(x.param), { 1.0, 2.0, 3.0 })
  T.eq(x.nested.list, { 1, 2.5, "three", true }, "None in a list leaves a hole at its end")
  T.eq(x.nested.tuple, { 4, -5 })
  T.eq(x.nested.int_keys, { [0] = "a", [1] = "b" }, "integer keys stay as they are")
  T.eq(x.big_int, (1 << 40) + 1)
  T.eq(x.neg_int, -129)
  T.eq(x.float, -0.1)
  T.eq(x.string, "caf\u{e9}")
  T.eq(x.bytes, "\0\255ab", "bytes come back as their bytes")
  T.eq(x.flag, false)
  T.eq(x.none, nil)
  T.eq(tostring(x.size), "torch.Size([2, 3])")
  T.eq(x.dtype, torch.float16)
end)

T.test("an optimizer's state_dict loads into the same optimizer", function()
  local sd = torch.load(data .. "adam.pth")
  T.eq(sd.param_groups[1].params, { 0 })
  T.eq(sd.param_groups[1].betas, { 0.9, 0.999 })
  T.eq(sd.param_groups[1].lr, 0.01)
  local p = nn.Parameter(torch.arange(4.0))
  local opt = optim.Adam({ p }, { lr = 0.01 })
  opt:load_state_dict(sd)
  p.grad = torch.ones(4)
  opt:step()
  -- a constant gradient of 1: after two steps exp_avg = 1 - 0.9^2, exp_avg_sq = 1 - 0.999^2
  local st = opt.state[p] or opt:state_dict().state[0]
  T.near(values(st.exp_avg), closed(4, function() return 1 - 0.81 end), 1e-6)
  T.near(values(st.exp_avg_sq), closed(4, function() return 1 - 0.999 ^ 2 end), 1e-6)
  local step = torch.is_tensor(st.step) and st.step:item() or st.step
  T.eq(step, 2.0, "the step count went on from the file's 1")
end)

T.test("a tensor alone; map_location; CUDA storages", function()
  local t = torch.load(data .. "tensor.pth")
  T.eq(t.dtype, torch.float64)
  T.eq(values(t), { 0.0, 1.5, 3.0 })
  local w = torch.load(data .. "cuda.pth", { map_location = "cpu" })
  T.eq(w.w.device.type, "cpu")
  T.eq(values(w.w), { 0.0, 2.0, 4.0, 6.0, 8.0, 10.0 })
  local seen
  torch.load(data .. "cuda.pth", function(s, loc) seen = loc; return s end)
  T.eq(seen, "cuda:0", "the storage's saved location reaches map_location")
  if torch.cuda.is_available() then
    local g = torch.load(data .. "cuda.pth")
    T.eq(g.w.device.type, "cuda", "saved on cuda:0, loaded there")
    T.eq(values(g.w:cpu()), { 0.0, 2.0, 4.0, 6.0, 8.0, 10.0 })
  else
    T.raises(function() torch.load(data .. "cuda.pth") end, "~torch.cuda.is_available() is False")
  end
end)

T.test("refused and corrupt files say what is wrong", function()
  T.raises(function() torch.load(data .. "module.pth") end,
    "~the file holds the Python object 'torch.nn.modules.linear.Linear', which nnrepl cannot rebuild")
  T.raises(function() torch.load(data .. "legacy.pth") end, "~the file is in PyTorch's legacy format")
  local f = assert(io.open(data .. "mixed.pth", "rb"))
  local whole = f:read("a")
  f:close()
  local cut = FX.dir .. "/cut.pth"
  FX.write(cut, whole:sub(1, #whole - 30))
  T.raises(function() torch.load(cut) end, "~not a zip archive")
  local no_storage = FX.dir .. "/no_storage.pth" -- storage 0's entry renamed
  FX.write(no_storage, (whole:gsub("mixed/data/0", "mixed/data/X")))
  T.raises(function() torch.load(no_storage) end, "~storage '0' is missing from the archive")
  local bad_op = FX.dir .. "/bad_op.pth" -- the pickle's first opcode after PROTO replaced by an unknown one
  local at = whole:find("\x80\x02}", 1, true)
  FX.write(bad_op, whole:sub(1, at + 1) .. "\xff" .. whole:sub(at + 3))
  T.raises(function() torch.load(bad_op) end, "~unsupported pickle opcode 0xff")
end)

T.test("torchvision weights= and torch.hub.load_state_dict_from_url read the local cache", function()
  local models = require("torchvision").models
  with_hub_dir(function(cache)
    FX.mkdir(cache)
    torch.manual_seed(3)
    local src = models.resnet18()
    torch.save(src:state_dict(), cache .. "resnet18-f37072fd.pth")
    local function same_as_src(m)
      for k, v in pairs(src:state_dict()) do
        if not torch.equal(m:state_dict()[k], v) then return false end
      end
      return true
    end
    T.check(same_as_src(models.resnet18({ weights = "IMAGENET1K_V1" })), "weights by name")
    T.check(same_as_src(models.resnet18({ weights = models.ResNet18_Weights.DEFAULT })), "weights by enum member")
    T.check(same_as_src(models.resnet.resnet18({ pretrained = true })), "pretrained=true, through models.resnet")
    T.check(same_as_src(models.get_model("resnet18", { weights = "DEFAULT" })), "get_model")
    T.check(not same_as_src(models.resnet18()), "without weights: a fresh initialisation")
    local sd = models.ResNet18_Weights.IMAGENET1K_V1:get_state_dict({ progress = false })
    T.check(torch.equal(sd["fc.bias"], src.fc.bias), "Weights:get_state_dict")
    sd = torch.hub.load_state_dict_from_url("https://example.org/x/resnet18-f37072fd.pth?dl=1", { map_location = "cpu" })
    T.check(torch.equal(sd["conv1.weight"], src.conv1.weight), "load_state_dict_from_url: the url's file name, query dropped")
    torch.save({ a = torch.ones(2) }, FX.dir .. "/own.pth")
    sd = torch.hub.load_state_dict_from_url("https://h/any", { model_dir = FX.dir, file_name = "own.pth" })
    T.eq(sd.a:tolist(), { 1.0, 1.0 }, "model_dir and file_name")
    T.raises(function() models.resnet18({ weights = "DEFAULT", num_classes = 10 }) end,
      "The parameter 'num_classes' expected value 1000 but got 10 instead.")
    T.raises(function() models.resnet34({ weights = "DEFAULT" }) end,
      "~resnet34-b627a593.pth is not in the cache, and nnrepl downloads nothing at run time: fetch " ..
      "https://download.pytorch.org/models/resnet34-b627a593.pth on a machine with network and put it at " ..
      cache .. "resnet34-b627a593.pth")
    -- DenseNet's checkpoints use the old names ("norm.1.weight" for "norm1.weight")
    torch.manual_seed(4)
    local dn = models.densenet121()
    local old = require("nn_util").OrderedDict.new()
    for k, v in pairs(dn:state_dict()) do old[(k:gsub("(denselayer%d+%.[a-z]+)([12])%.", "%1.%2."))] = v end
    T.check(old["features.denseblock1.denselayer1.norm.1.weight"] ~= nil, "the old key form is written")
    torch.save(old, cache .. "densenet121-a639ec97.pth")
    local loaded = models.densenet121({ weights = "DEFAULT" })
    T.check(torch.equal(loaded.features.denseblock1.denselayer1.norm1.weight, dn.features.denseblock1.denselayer1.norm1.weight),
      "densenet's old keys are renamed on load")
  end, FX.dir .. "/hub")
end)
