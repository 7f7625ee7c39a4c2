-- torch.distributed.checkpoint: save and load of fully_shard-ed, DDP and plain models and their
-- optimizers. Run by test_dist.sh through the launcher (gloo), or on GPUs with "nccl":
--   dcp.lua save DIR [nccl]   train 2 steps, save; dcp.lua load DIR [nccl]   load (any world size), check, train on
--   dcp.lua self DIR [nccl]   save and load in one world: DDP, plain models, errors, format_utils
-- Training on a global batch of 6 rows split evenly is the same on 2 and 3 ranks, and the same
-- as one process's on the whole batch (the reference).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local dcp = dist.checkpoint
local SD = dcp.state_dict
local mode, dir = arg[1], arg[2]
local _, dev = H.init(arg[3])
local rank, world = dist.get_rank(), dist.get_world_size()
local FULL = SD.StateDictOptions { full_state_dict = true }
local SAVED_STEPS, MORE = 2, 2

local Block = nn.Module:extend("Block")
function Block:__init()
  self.fc1 = nn.Linear(6, 5) -- 5 rows: uneven over 2 and 3 ranks
  self.fc2 = nn.Linear(5, 6)
end
function Block:forward(x) return x + self.fc2(torch.tanh(self.fc1(x))) end

local Net = nn.Module:extend("Net")
function Net:__init()
  self.layers = nn.ModuleList({ Block(), Block() })
  self.out = nn.Linear(6, 1) -- 1 row: some ranks hold none
end
function Net:forward(x)
  for _, l in pairs(self.layers) do x = l(x) end
  return self.out(x)
end

local function net(seed)
  torch.manual_seed(seed)
  return Net():to(dev)
end
local function sharded(seed)
  local m = net(seed)
  for _, l in pairs(m.layers) do dist.fsdp.fully_shard(l) end
  return dist.fsdp.fully_shard(m)
end
local function adam(m) return optim.Adam(m:parameters(), { lr = 0.05 }) end

torch.manual_seed(7)
local X, Y = torch.randn(SAVED_STEPS + MORE, 6, 6):to(dev), torch.randn(SAVED_STEPS + MORE, 6, 1):to(dev)
local B = 6 // world
local function train(m, opt, from, to, whole)
  for step = from, to - 1 do
    opt:zero_grad()
    local x, y = X[step], Y[step]
    if not whole then x, y = x:narrow(0, rank * B, B), y:narrow(0, rank * B, B) end
    F.mse_loss(m(x), y):backward()
    opt:step()
  end
end
-- one process trained on the whole batches
local function reference(steps)
  local m = net(100)
  train(m, adam(m), 0, steps, true)
  return m
end

local function same_params(sd, ref, tol, what)
  local worst = 0
  for k, t in pairs(ref:state_dict()) do
    local d = sd[k] and H.maxdiff(sd[k], t)
    worst = d and math.max(worst, d) or math.huge
  end
  H.check(worst <= tol, "%s: parameters differ from the reference by %s", what, tostring(worst))
end

if mode == "save" then
  local m = sharded(100)
  local opt = adam(m)
  train(m, opt, 0, SAVED_STEPS)
  local msd, osd = SD.get_state_dict(m, opt)
  H.check(dcp._is_sharded(msd["layers.0.fc1.weight"]) and msd["layers.0.fc1.weight"]:size(0) == 5
    and msd["layers.0.fc1.weight"]:to_local():size(0) == math.max(0, math.min((5 + world - 1) // world, 5 - rank * ((5 + world - 1) // world))),
    "the default state dict of a fully_shard-ed model holds this rank's chunk of the global shape")
  H.check(dcp._is_sharded(osd.state["layers.0.fc1.weight"].exp_avg) and torch.is_tensor(osd.state["out.bias"].step),
    "optimizer state: exp_avg sharded, step plain")
  dcp.save({ model = msd, optim = osd, steps = SAVED_STEPS }, { checkpoint_id = dir })
  H.check(io.open(string.format("%s/__%d_0.distcp", dir, rank)) ~= nil, "rank %d wrote its file", rank)
  local f = io.open(dir .. "/.metadata")
  H.check(f ~= nil, "the metadata file is there after save")
  local text = f:read("a")
  f:close()
  local holders = 0
  for r = 0, world - 1 do if r * ((5 + world - 1) // world) < 5 then holders = holders + 1 end end
  local item = text:match('{"chunks":(%b[]),"dtype":"float32","fqn":"model.layers.0.fc1.weight"')
  local _, n = (item or ""):gsub('"file"', "")
  H.check(n == holders, "model.layers.0.fc1.weight: %d chunks, one a rank holding rows (%d)", n, holders)
  same_params(SD.get_model_state_dict(m, { options = FULL }), reference(SAVED_STEPS), 2e-5, "saved model")
elseif mode == "load" then
  local m = sharded(5) -- other values, all overwritten by the load
  local opt = adam(m)
  local msd, osd = SD.get_state_dict(m, opt)
  local state = { model = msd, optim = osd, steps = 0 }
  dcp.load(state, { storage_reader = dcp.FileSystemReader(dir) })
  H.check(state.steps == SAVED_STEPS, "a plain value loads in place (%s)", tostring(state.steps))
  SD.set_state_dict(m, opt, { model_state_dict = state.model, optim_state_dict = state.optim })
  same_params(SD.get_model_state_dict(m, { options = FULL }), reference(SAVED_STEPS), 2e-5, "loaded on " .. world .. " ranks")
  local step = opt.state[m.out.bias].step
  H.check((torch.is_tensor(step) and step:item() or step) == SAVED_STEPS, "the optimizer's step count is loaded")
  train(m, opt, SAVED_STEPS, SAVED_STEPS + MORE)
  same_params(SD.get_model_state_dict(m, { options = FULL }), reference(SAVED_STEPS + MORE), 5e-5, "training continued after the load")
  -- the full optimizer state equals the reference's
  local ref = net(100)
  local ropt = adam(ref)
  train(ref, ropt, 0, SAVED_STEPS + MORE, true)
  local full_osd = SD.get_optimizer_state_dict(m, opt, { options = FULL })
  H.close(full_osd.state["layers.1.fc1.weight"].exp_avg_sq, ropt.state[ref.layers[1].fc1.weight].exp_avg_sq, 1e-6,
    "the full optimizer state gathers the chunks")
  H.check(full_osd.param_groups[1].params[1] == "layers.0.fc1.weight" and full_osd.param_groups[1].lr == 0.05,
    "optimizer param_groups keyed by parameter names")
else
  assert(mode == "self", "mode: save, load or self")
  -- DDP: names without "module.", a round trip of model and optimizer
  local function ddp(seed)
    local m = net(seed)
    return nn.parallel.DistributedDataParallel(m) -- m is on this rank's device
  end
  local a = ddp(100)
  local aopt = adam(a)
  train(a, aopt, 0, SAVED_STEPS)
  local msd, osd = SD.get_state_dict(a, aopt)
  H.check(msd["layers.0.fc1.weight"] ~= nil and msd["module.layers.0.fc1.weight"] == nil, "DDP: keys without 'module.'")
  local ddir = dir .. "/ddp"
  dcp.async_save({ model = msd, optim = osd }, { checkpoint_id = ddir }):wait()
  local files = torch.load(string.format("%s/__%d_0.distcp", ddir, rank))
  local n = 0
  for _ in pairs(files.tensors) do n = n + 1 end
  H.check((rank == 0) == (n > 0), "replicated tensors are written once, by rank 0 (rank %d wrote %d)", rank, n)
  local b = ddp(9)
  local bopt = adam(b)
  local st = { model = SD.get_model_state_dict(b), optim = SD.get_optimizer_state_dict(b, bopt) }
  dcp.load(st, { checkpoint_id = ddir })
  SD.set_state_dict(b, bopt, { model_state_dict = st.model, optim_state_dict = st.optim })
  same_params(b.module:state_dict(), a.module, 0, "DDP round trip")
  H.close(bopt.state[b.module.out.weight].exp_avg, aopt.state[a.module.out.weight].exp_avg, 0, "DDP: optimizer state round trip")
  train(a, aopt, SAVED_STEPS, SAVED_STEPS + MORE)
  train(b, bopt, SAVED_STEPS, SAVED_STEPS + MORE)
  same_params(b.module:state_dict(), a.module, 1e-6, "DDP: training continues identically")

  -- a plain model, one process's checkpoint (no_dist) read on every rank
  local pdir = dir .. "/plain" .. rank
  local p = net(3)
  dcp.save(p:state_dict(), { checkpoint_id = pdir, no_dist = true })
  local q = net(4)
  local qsd = q:state_dict()
  dcp.load(qsd, { checkpoint_id = pdir, no_dist = true })
  same_params(q:state_dict(), p, 0, "plain model")

  -- format_utils: a sharded checkpoint as one torch.save file and back
  local s = sharded(100)
  dcp.save({ model = SD.get_model_state_dict(s) }, { checkpoint_id = dir .. "/fsdp" })
  if rank == 0 then
    dcp.format_utils.dcp_to_torch_save(dir .. "/fsdp", dir .. "/full.pt")
    local full = torch.load(dir .. "/full.pt")
    same_params(full.model, net(100), 0, "dcp_to_torch_save")
    dcp.format_utils.torch_save_to_dcp(dir .. "/full.pt", dir .. "/back")
  end
  dist.barrier()
  local s2 = sharded(1)
  local sd2 = { model = SD.get_model_state_dict(s2) }
  dcp.load(sd2, { checkpoint_id = dir .. "/back" })
  SD.set_model_state_dict(s2, sd2.model)
  same_params(SD.get_model_state_dict(s2, { options = FULL }), net(100), 0, "torch_save_to_dcp, then a sharded load")

  -- FullyShardedDataParallel: full state dicts of model and optimizer, a round trip
  local function fsdp1(seed)
    torch.manual_seed(seed)
    local m = dist.fsdp.FullyShardedDataParallel(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)):to(dev))
    return m, adam(m)
  end
  local f1, fopt = fsdp1(0)
  f1(torch.randn(2, 4):to(dev)):sum():backward()
  fopt:step()
  local fm, fo = SD.get_state_dict(f1, fopt, { options = FULL })
  dcp.save({ model = fm, optim = fo }, { checkpoint_id = dir .. "/fsdp1" })
  local f2, fopt2 = fsdp1(1)
  local m2, o2 = SD.get_state_dict(f2, fopt2, { options = FULL })
  local fst = { model = m2, optim = o2 }
  dcp.load(fst, { checkpoint_id = dir .. "/fsdp1" })
  SD.set_state_dict(f2, fopt2, { model_state_dict = fst.model, optim_state_dict = fst.optim, options = FULL })
  local m3, o3 = SD.get_state_dict(f2, fopt2, { options = FULL })
  H.close(m3["0.weight"], fm["0.weight"], 0, "FSDP: model round trip")
  H.close(o3.state["1.weight"].exp_avg, fo.state["1.weight"].exp_avg, 0, "FSDP: optimizer round trip")
  H.raises(function() SD.get_state_dict(f2, fopt2) end, "full state dicts only", "FSDP: sharded state dicts")

  -- errors
  local big = net(1):state_dict()
  big["out.weight"] = torch.zeros(2, 6)
  H.raises(function() dcp.load(big, { checkpoint_id = pdir }) end,
    "Size mismatch between saved torch.Size([1, 6]) and current: torch.Size([2, 6]) for out.weight", "shape mismatch")
  H.raises(function() dcp.load({ extra = torch.zeros(1) }, { checkpoint_id = pdir }) end,
    "Missing key in checkpoint state_dict: extra.", "missing key")
  H.raises(function() dcp.load(net(1):state_dict(), { checkpoint_id = dir .. "/nothing" }) end,
    "checkpoint directory '" .. dir .. "/nothing' does not exist", "no directory")
  torch._io.makedirs(dir .. "/empty" .. rank)
  H.raises(function() dcp.load(net(1):state_dict(), { checkpoint_id = dir .. "/empty" .. rank }) end,
    "is not a checkpoint: it has no .metadata file", "a directory that is not a checkpoint")
  local cdir = dir .. "/corrupt" .. rank
  dcp.save({ x = torch.ones(2) }, { checkpoint_id = cdir, no_dist = true })
  local f = io.open(cdir .. "/.metadata", "w")
  f:write('{"format": "nnrepl-dcp", "items": [')
  f:close()
  H.raises(function() dcp.load({ x = torch.zeros(2) }, { checkpoint_id = cdir }) end, "corrupt checkpoint metadata", "corrupt metadata")
  local mdir = dir .. "/missing" .. rank
  dcp.save({ x = torch.ones(2) }, { checkpoint_id = mdir, no_dist = true })
  os.remove(mdir .. "/__0_0.distcp")
  H.raises(function() dcp.load({ x = torch.zeros(2) }, { checkpoint_id = mdir }) end, "__0_0.distcp is missing (it holds 'x')", "a missing data file")
  H.raises(function() dcp.save({ x = torch.ones(1) }, { checkpoint_id = mdir, storage_writer = dcp.FileSystemWriter(pdir) }) end,
    "differ", "checkpoint_id and storage_writer disagree")
  H.raises(function() dcp.save({ x = torch.ones(1) }, { checkpoint_id = mdir, planner = {} }) end, "planner is not supported", "a planner")
  H.raises(function() dcp.save({ x = torch.ones(1) }, { dir = mdir }) end, "unknown keyword 'dir'", "an unknown keyword")
  H.raises(function() dcp.save({ x = torch.ones(1) }, { no_dist = true }) end, "give checkpoint_id", "no directory given")
  H.raises(function() SD.get_model_state_dict(s, { options = { full_state_dict = true } }) end, "StateDictOptions", "options not a StateDictOptions")
end

dist.destroy_process_group()
H.report()
