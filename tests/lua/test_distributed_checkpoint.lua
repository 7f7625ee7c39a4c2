-- torch.distributed.checkpoint in one process (no process group): nested state dicts of every
-- dtype round-tripping in place, ShardedTensor pieces read back at other offsets (a resharding
-- by hand), format_utils, state dicts of a plain model and its optimizer, and the errors.
-- The multi-rank tests (fully_shard, DDP, 2 <-> 3 ranks) are tests/dist/dcp.lua.
local T = ...
local dcp = torch.distributed.checkpoint
local SD = dcp.state_dict
local U = require "nn_util"

local root = os.tmpname()
os.remove(root)
local n = 0
local function newdir()
  n = n + 1
  return root .. "/c" .. n
end

local function run(dev)
  -- nested values of every kind, loaded in place
  local function state(fill)
    local od = U.OrderedDict.new()
    od["b.weight"] = torch.full({ 2, 3 }, fill, { dtype = torch.float32 }):to(dev)
    od["a"] = torch.arange(4, { dtype = torch.int64 }):mul(fill):to(dev)
    return { model = od, list = { torch.tensor(fill, { dtype = torch.float64 }):to(dev), torch.zeros(0, 2):to(dev) },
      flags = torch.tensor({ fill > 0, false }):to(dev), half = torch.full({ 3 }, fill, { dtype = torch.float16 }):to(dev),
      epoch = fill, lr = fill * 0.5, name = "n" .. fill, groups = { { lr = fill, betas = { 0.9, 0.99 } } } }
  end
  local d = newdir()
  dcp.save(state(3), { checkpoint_id = d })
  local s = state(0)
  local w = s.model["b.weight"]
  dcp.load(s, { checkpoint_id = d })
  T.check(rawequal(s.model["b.weight"], w) and w.device.type == (dev == "cpu" and "cpu" or "cuda"), "tensors load in place")
  T.eq(w:sum():item(), 18.0, "float32 values")
  T.eq(s.model.a:tolist(), { 0, 3, 6, 9 }, "int64 values")
  T.eq(s.list[1]:item(), 3.0, "a 0-dim float64 in a list")
  T.eq(s.list[2]:size():totable(), { 0, 2 }, "an empty tensor")
  T.eq(s.flags:tolist(), { true, false }, "bool values")
  T.eq(s.half:tolist(), { 3.0, 3.0, 3.0 }, "float16 values")
  T.eq(s.epoch, 3, "an integer value keeps its type")
  T.eq(s.lr, 1.5, "a float value")
  T.eq(s.name, "n3", "a string value")
  T.eq(s.groups[1].betas, { 0.9, 0.99 }, "a table without tensors is one value")

  -- pieces of a 5 x 3 tensor read into other pieces (offsets as another world size would have)
  local full = torch.arange(15.0):reshape(5, 3):to(dev)
  d = newdir()
  local pieces = { { 0, 2 }, { 2, 2 }, { 4, 1 } }
  local sd = {}
  for i, p in ipairs(pieces) do sd["w" .. i] = dcp.ShardedTensor(full:narrow(0, p[1], p[2]), { 5, 3 }, { p[1], 0 }) end
  T.raises(function() dcp.save(sd, { checkpoint_id = d }) end, "~hold 6 elements of its 15", "pieces that do not cover a tensor")
  local cover = {}
  for i, p in ipairs(pieces) do cover[i] = { x = dcp.ShardedTensor(full:narrow(0, p[1], p[2]), { 5, 3 }, { p[1], 0 }) } end
  -- one process cannot save three ranks' pieces under one name: write each as its own checkpoint and check the reads
  for _, target in ipairs({ { 0, 3 }, { 3, 2 }, { 1, 3 } }) do
    local dst = torch.zeros(target[2], 3):to(dev)
    d = newdir()
    dcp.save({ x = full }, { checkpoint_id = d })
    dcp.load({ x = dcp.ShardedTensor(dst, { 5, 3 }, { target[1], 0 }) }, { checkpoint_id = d })
    T.eq(dst:cpu():tolist(), full:narrow(0, target[1], target[2]):cpu():tolist(), "rows " .. target[1] .. ".. of a whole tensor")
  end
  local cols = torch.zeros(5, 2):to(dev)
  dcp.load({ x = dcp.ShardedTensor(cols, { 5, 3 }, { 0, 1 }) }, { checkpoint_id = d })
  T.eq(cols:cpu():tolist(), full:narrow(1, 1, 2):cpu():tolist(), "a column piece")
  T.eq(cover[2].x:to_local():size(0), 2, "ShardedTensor:to_local")
  T.eq(cover[2].x:size():totable(), { 5, 3 }, "ShardedTensor:size is the global shape")
  T.eq(cover[3].x:full_tensor():cpu():tolist()[5], { 12.0, 13.0, 14.0 }, "full_tensor of one process: its piece in zeros")

  -- a plain model and its optimizer through the state dict API
  torch.manual_seed(0)
  local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)):to(dev)
  local opt = optim.Adam(m:parameters(), { lr = 0.01 })
  local x = torch.randn(5, 3):to(dev)
  m(x):sum():backward()
  opt:step()
  local msd, osd = SD.get_state_dict(m, opt)
  T.eq(osd.param_groups[1].params, { "0.weight", "0.bias", "2.weight", "2.bias" }, "optimizer groups keyed by parameter names")
  d = newdir()
  dcp.save({ model = msd, optim = osd }, { storage_writer = dcp.FileSystemWriter(d) })
  local saved_w = msd["2.weight"]:cpu():clone()
  torch.manual_seed(1)
  local m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)):to(dev)
  local opt2 = optim.Adam(m2:parameters(), { lr = 0.5 })
  local a, b = SD.get_state_dict(m2, opt2)
  T.eq(next(opt2.state) ~= nil, true, "a fresh optimizer's state is made for the load")
  T.eq((m2[0].weight - a["0.weight"]):abs():max():item(), 0.0, "making it does not move the parameters")
  local st = { model = a, optim = b }
  dcp.load(st, { storage_reader = dcp.FileSystemReader(d) })
  SD.set_state_dict(m2, opt2, { model_state_dict = st.model, optim_state_dict = st.optim })
  T.eq(opt2.param_groups[1].lr, 0.01, "the optimizer's options are loaded")
  local o1, o2 = opt, opt2
  for _ = 1, 2 do
    for _, pair in ipairs({ { m, o1 }, { m2, o2 } }) do
      pair[2]:zero_grad()
      pair[1](x):pow(2):sum():backward()
      pair[2]:step()
    end
  end
  T.eq((m2[2].weight - m[2].weight):abs():max():item(), 0.0, "training continues identically after the load")
  local cpu = SD.get_model_state_dict(m, { options = SD.StateDictOptions { cpu_offload = true } })
  T.eq(cpu["0.weight"].device.type, "cpu", "cpu_offload")

  -- format_utils
  local file = root .. "/full" .. n .. ".pt"
  dcp.format_utils.dcp_to_torch_save(d, file)
  local loaded = torch.load(file)
  T.eq(loaded.model:keys(), { "0.weight", "0.bias", "2.weight", "2.bias" }, "dcp_to_torch_save keeps the order")
  T.eq(loaded.optim.param_groups[1].lr, 0.01, "dcp_to_torch_save: plain values")
  T.eq((loaded.model["2.weight"] - saved_w):abs():max():item(), 0.0, "dcp_to_torch_save: the saved values")
  local d2 = newdir()
  dcp.format_utils.torch_save_to_dcp(file, d2)
  local back = { model = m2:state_dict() }
  dcp.load(back, { checkpoint_id = d2 })
  T.eq((back.model["0.bias"]:cpu() - loaded.model["0.bias"]):abs():max():item(), 0.0, "torch_save_to_dcp")
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 28) end

-- errors
local d = newdir()
dcp.save({ x = torch.ones(2, 3), v = 1 }, { checkpoint_id = d })
T.raises(function() dcp.load({ x = torch.zeros(3, 2) }, { checkpoint_id = d }) end,
  "load: Size mismatch between saved torch.Size([2, 3]) and current: torch.Size([3, 2]) for x", "shape mismatch")
T.raises(function() dcp.load({ y = torch.zeros(1) }, { checkpoint_id = d }) end, "load: Missing key in checkpoint state_dict: y.", "missing key")
T.raises(function() dcp.load({ v = torch.zeros(1) }, { checkpoint_id = d }) end, "~'v' is a tensor in the state dict but not in the checkpoint", "tensor against value")
T.raises(function() dcp.load({ x = 3 }, { checkpoint_id = d }) end, "~'x' is a tensor in the checkpoint but int in the state dict", "value against tensor")
T.raises(function() dcp.load({ x = torch.zeros(2, 3) }, { checkpoint_id = root .. "/none" }) end,
  "load: checkpoint directory '" .. root .. "/none' does not exist", "no directory")
torch._io.makedirs(root .. "/plain")
T.raises(function() dcp.load({}, { checkpoint_id = root .. "/plain" }) end, "~is not a checkpoint: it has no .metadata file", "not a checkpoint")
local f = io.open(d .. "/.metadata", "wb")
f:write("{}")
f:close()
T.raises(function() dcp.load({ x = torch.zeros(2, 3) }, { checkpoint_id = d }) end, "~(not an nnrepl checkpoint's)", "foreign metadata")
T.raises(function() dcp.save({ x = torch.ones(1) }, { storage_writer = dcp.FileSystemWriter(d, { overwrite = false }) }) end, "~has overwrite=false", "overwrite=false")
T.raises(function() dcp.FileSystemWriter(d, { single_file_per_rank = false }) end, "~single_file_per_rank=false is not supported", "one file a tensor")
T.raises(function() dcp.save({ x = torch.ones(1) }, { storage_writer = d }) end, "~storage_writer must be a FileSystemWriter", "a string writer")
T.raises(function() dcp.load({ x = torch.ones(1) }, { storage_reader = dcp.FileSystemWriter(d) }) end, "~storage_reader must be a FileSystemReader", "a writer to load")
T.raises(function() dcp.save(torch.ones(1), { checkpoint_id = d }) end, "~state_dict must be a table", "a tensor as state dict")
T.raises(function() dcp.save({ [true] = torch.ones(1) }, { checkpoint_id = d }) end, "~keys must be strings or integers", "a boolean key")
T.raises(function() dcp.load({}, { checkpoint = d }) end, "~unknown keyword 'checkpoint'", "unknown keyword")
T.raises(function() dcp.ShardedTensor(torch.ones(2, 3), { 3, 3 }, { 2, 0 }) end, "~does not fit in the global shape [3, 3]", "a piece outside")
T.raises(function() SD.get_state_dict(nn.Linear(2, 2), {}) end, "~optimizers must be an optimizer or a list", "no optimizer")
T.raises(function() SD.get_model_state_dict(nn.Linear(2, 2), { options = SD.StateDictOptions { broadcast_from_rank0 = true } }) end,
  "~broadcast_from_rank0=true is for set_model_state_dict", "broadcast_from_rank0 when getting")
T.raises(function() SD.get_model_state_dict(nn.Linear(2, 2), { submodules = {} }) end, "~submodules is not supported", "submodules")
os.execute("rm -rf '" .. root .. "'")
