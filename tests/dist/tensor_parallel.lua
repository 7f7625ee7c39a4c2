-- torch.distributed.tensor.parallel against the same modules unsharded in one process: each
-- rank compares its outputs and its pieces of the parameters and gradients (before and after
-- optimizer steps) with the slices torch.chunk makes of the reference's.
-- Run by test_dist.sh through the launcher with 2 and 3 ranks (gloo), or with "nccl" on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local tp = dist.tensor.parallel
local Shard, Replicate = dist.tensor.Shard, dist.tensor.Replicate
local Colwise, Rowwise = tp.ColwiseParallel, tp.RowwiseParallel
local parallelize_module = tp.parallelize_module

H.raises(function() parallelize_module(nn.Linear(2, 2), {}, Colwise()) end, "has not been initialized", "before init_process_group")
local backend, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local mesh = dist.init_device_mesh(backend == "nccl" and "cuda" or "cpu", { world })
local TOL = 1e-5

-- this rank's torch.chunk piece of t along d (empty on ranks past the last chunk)
local function piece(t, d)
  local chunks = t:chunk(world, d)
  if chunks[rank + 1] then return chunks[rank + 1] end
  return t:narrow(d, 0, 0)
end

-- the reference and the parallelized module: made alike from one seed
local function pair(make, plan, seed)
  torch.manual_seed(seed or 1)
  local ref = make():to(dev)
  torch.manual_seed(seed or 1)
  local par = make():to(dev)
  parallelize_module(par, mesh, plan)
  return ref, par
end

-- layout: name -> dim it is cut along (nil: replicated)
local function check_params(ref, par, layout, what, grads)
  for _, e in ipairs(par:named_parameters()) do
    local name, p = e[1], e[2]
    local r = ref:get_parameter(name)
    local d = layout[name]
    local want = grads and r.grad or r:detach()
    local got = grads and p.grad or p:detach()
    if d then want = piece(want, d) end
    if grads and want:numel() == 0 then
      H.check(got == nil or got:numel() == 0, "%s: %s of an empty piece", what, name)
    else
      H.close(got, want, TOL, "%s: %s %s", what, grads and "gradient of" or "parameter", name)
    end
  end
end

-- forward and backward of both, then steps of SGD with momentum; loss(out) a scalar
-- (sharded_loss: each rank's loss is its piece of the whole, summed over the ranks)
local function parity(what, ref, par, layout, x, loss, steps, sharded_loss)
  loss = loss or function(y) return (y * y):sum() end
  local oref, opar = optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 }), optim.SGD(par:parameters(), { lr = 0.05, momentum = 0.9 })
  check_params(ref, par, layout, what .. " (after sharding)")
  for step = 1, steps or 2 do
    oref:zero_grad(); opar:zero_grad()
    local yr, yp = ref(x), par(x)
    local lr, lp = loss(yr, true), loss(yp, false)
    local whole = lp:detach():clone()
    if sharded_loss then dist.all_reduce(whole) end
    H.close(whole, lr:detach(), TOL, "%s step %d: loss", what, step)
    lr:backward(); lp:backward()
    if step == 1 then check_params(ref, par, layout, what .. " step 1", true) end
    oref:step(); opar:step()
  end
  check_params(ref, par, layout, what .. " (after the steps)")
end

-- ---- the Megatron MLP: Colwise then Rowwise, hidden sizes even, uneven, with empty pieces ----

local MLP = nn.Module:extend("MLP")
function MLP:__init(d, h)
  self.fc1 = nn.Linear(d, h)
  self.fc2 = nn.Linear(h, d)
end
function MLP:forward(x) return self.fc2(F.gelu(self.fc1(x))) end

local MLP_LAYOUT = { ["fc1.weight"] = 0, ["fc1.bias"] = 0, ["fc2.weight"] = 1 }
torch.manual_seed(5)
local X = torch.randn(3, 4, 6):to(dev)
for _, h in ipairs({ 12, 5, 4 }) do
  local ref, par = pair(function() return MLP(6, h) end, { fc1 = Colwise(), fc2 = Rowwise() })
  local c = (h + world - 1) // world
  H.check(par.fc1.weight:size(0) == math.max(0, math.min(c, h - rank * c)), "hidden %d: fc1 keeps its torch.chunk rows", h)
  H.check(par.fc1.in_features == 6 and par.fc2.in_features == h, "hidden %d: in_features stay global", h)
  H.close(par.fc1(X), piece(ref.fc1(X), -1), TOL, "hidden %d: Colwise output sharded on the last dim", h)
  parity("MLP hidden " .. h, ref, par, MLP_LAYOUT, X)
end

-- the plan's values as one style applied to a module directly
do
  torch.manual_seed(3)
  local ref = nn.Linear(6, 5):to(dev)
  torch.manual_seed(3)
  local par = parallelize_module(nn.Linear(6, 5):to(dev), mesh, Colwise({ output_layouts = Replicate() }))
  parity("Colwise with a replicated output", ref, par, { weight = 0, bias = 0 }, X)
  -- Rowwise with a replicated input (cut here) and a sharded output
  torch.manual_seed(4)
  ref = nn.Linear(6, 7):to(dev)
  torch.manual_seed(4)
  par = parallelize_module(nn.Linear(6, 7):to(dev), mesh, Rowwise({ input_layouts = Replicate(), output_layouts = Shard(-1) }))
  local w = torch.randn(3, 4, 7):to(dev)
  H.close(par(X), piece(ref(X), -1), TOL, "Rowwise: output sharded on the last dim")
  parity("Rowwise Replicate -> Shard(-1)", ref, par, { weight = 1 }, X,
    function(y, whole) return (y * (whole and w or piece(w, -1))):sum() end, 2, true)
end

-- ---- attention: q / k / v Colwise, out-projection Rowwise, heads split over the ranks ----

local Attention = nn.Module:extend("Attention")
function Attention:__init(e, head_dim)
  self.head_dim = head_dim
  self.q, self.k, self.v, self.o = nn.Linear(e, e), nn.Linear(e, e), nn.Linear(e, e), nn.Linear(e, e)
end
function Attention:forward(x)
  local B, S = x:size(0), x:size(1)
  local function heads(t) return t:view(B, S, -1, self.head_dim):transpose(1, 2) end -- this rank's heads
  local q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
  local a = torch.softmax(q:matmul(k:transpose(-2, -1)) / math.sqrt(self.head_dim), -1):matmul(v)
  return self.o(a:transpose(1, 2):reshape(B, S, -1))
end

local ATT_PLAN = { q = Colwise(), k = Colwise(), v = Colwise(), o = Rowwise() }
local ATT_LAYOUT = { ["q.weight"] = 0, ["q.bias"] = 0, ["k.weight"] = 0, ["k.bias"] = 0, ["v.weight"] = 0, ["v.bias"] = 0, ["o.weight"] = 1 }
do
  local ref, par = pair(function() return Attention(12, 2) end, ATT_PLAN, 7)
  H.check(par.q.weight:size(0) == 12 // world, "attention: %d of 6 heads' rows on this rank", 6 // world)
  torch.manual_seed(8)
  local x = torch.randn(2, 5, 12):to(dev)
  H.close(par(x), ref(x), TOL, "attention: output")
  parity("attention", ref, par, ATT_LAYOUT, x)
end

-- ---- a wildcard plan over several layers ----

local Stack = nn.Module:extend("Stack")
function Stack:__init(n)
  self.layers = nn.ModuleList()
  for _ = 1, n do self.layers:append(MLP(6, 8)) end
  self.head = nn.Linear(6, 2)
end
function Stack:forward(x)
  for _, l in pairs(self.layers) do x = x + l(x) end
  return self.head(x)
end

do
  local ref, par = pair(function() return Stack(3) end, { ["layers.*.fc1"] = Colwise(), ["layers.*.fc[2]"] = Rowwise() }, 9)
  local layout = {}
  for i = 0, 2 do
    layout["layers." .. i .. ".fc1.weight"], layout["layers." .. i .. ".fc1.bias"], layout["layers." .. i .. ".fc2.weight"] = 0, 0, 1
    H.check(par.layers[i].fc1.weight:size(0) == piece(torch.empty(8), 0):size(0), "wildcard: layer %d's fc1 sharded", i)
  end
  H.check(par.head.weight:size(0) == 2, "wildcard: head left whole")
  parity("wildcard plan", ref, par, layout, X, nil, 3)
end

-- ---- sequence parallel: vocabulary-sharded embedding, SequenceParallel norm, attention fed
-- through PrepareModuleInput, an output head gathering the sequence (5 positions: uneven) ----

local SPNet = nn.Module:extend("SPNet")
function SPNet:__init()
  self.emb = nn.Embedding(7, 12, { padding_idx = 6 })
  self.norm = nn.LayerNorm(12)
  self.attn = Attention(12, 2)
  self.head = nn.Linear(12, 3)
end
function SPNet:forward(x)
  local h = self.emb(x)
  h = h + self.attn(self.norm(h))
  return self.head(h)
end

do
  local plan = {
    emb = Rowwise({ input_layouts = Replicate(), output_layouts = Shard(1) }),
    norm = tp.SequenceParallel(),
    attn = tp.PrepareModuleInput({ input_layouts = { Shard(1) }, desired_input_layouts = { Replicate() } }),
    ["attn.q"] = Colwise(), ["attn.k"] = Colwise(), ["attn.v"] = Colwise(),
    ["attn.o"] = Rowwise({ output_layouts = Shard(1) }),
    head = Colwise({ input_layouts = Shard(1), output_layouts = Replicate() }),
  }
  local layout = { ["emb.weight"] = 0, ["head.weight"] = 0, ["head.bias"] = 0 }
  for k, v in pairs(ATT_LAYOUT) do layout["attn." .. k] = v end
  local ref, par = pair(SPNet, plan, 11)
  local ids = torch.tensor({ { 0, 1, 2, 3, 6 }, { 4, 5, 6, 1, 0 } }, { dtype = torch.int64 }):to(dev)
  H.close(par.emb(ids), piece(ref.emb(ids), 1), TOL, "Rowwise Embedding: this rank's sequence piece")
  H.close(par(ids), ref(ids), TOL, "sequence parallel: output")
  parity("sequence parallel", ref, par, layout, ids, nil, 2)
end

-- Colwise Embedding (embedding dim cut), then a Rowwise Linear
do
  local Net = nn.Module:extend("EmbNet")
  function Net:__init() self.emb = nn.Embedding(6, 5); self.fc = nn.Linear(5, 4) end
  function Net:forward(x) return self.fc(self.emb(x)) end
  local ref, par = pair(Net, { emb = Colwise(), fc = Rowwise() }, 12)
  local ids = torch.tensor({ { 0, 5, 2 }, { 3, 3, 1 } }, { dtype = torch.int64 }):to(dev)
  parity("Colwise Embedding", ref, par, { ["emb.weight"] = 1, ["fc.weight"] = 1 }, ids)
end

-- PrepareModuleOutput as the whole plan of a module
do
  torch.manual_seed(13)
  local ref = nn.Sequential(nn.Linear(6, 5)):to(dev)
  torch.manual_seed(13)
  local par = nn.Sequential(nn.Linear(6, 5)):to(dev)
  parallelize_module(par, mesh, { ["0"] = Colwise() })
  parallelize_module(par, mesh, tp.PrepareModuleOutput({ output_layouts = Shard(-1), desired_output_layouts = Replicate() }))
  parity("PrepareModuleOutput", ref, par, { ["0.weight"] = 0, ["0.bias"] = 0 }, X)
end

-- src_data_rank: every rank gets rank 0's values (here each rank made different ones)
do
  torch.manual_seed(20 + rank)
  local par = parallelize_module(nn.Linear(4, 6):to(dev), mesh, Rowwise(), { src_data_rank = 0 })
  local b = par.bias:detach():clone()
  dist.broadcast(b, { src = 0 })
  H.close(par.bias:detach(), b, 0, "src_data_rank=0: the replicated bias is rank 0's")
  torch.manual_seed(20 + rank)
  local mine = nn.Linear(4, 6):to(dev)
  torch.manual_seed(20 + rank)
  par = parallelize_module(nn.Linear(4, 6):to(dev), mesh, Rowwise(), { src_data_rank = false })
  H.close(par.bias:detach(), mine.bias:detach(), 0, "src_data_rank=false (None): this rank's own values")
end

-- nccl: a module on the CPU moves to this rank's GPU, as PyTorch's distribute_tensor does
if backend == "nccl" then
  local par = parallelize_module(nn.Linear(4, 6), mesh, Colwise())
  H.check(par.weight.device.type == "cuda" and par.bias.device.type == "cuda", "a CPU module's pieces go to the GPU")
end

-- ---- errors ----

H.raises(function() parallelize_module(nn.LayerNorm(4), mesh, Colwise()) end, "ColwiseParallel currently only support nn.Linear and nn.Embedding!", "Colwise on a LayerNorm")
H.raises(function() parallelize_module(nn.Sequential(nn.Conv2d(1, 2, 3)), mesh, { ["0"] = Rowwise() }) end,
  "RowwiseParallel currently only support nn.Linear and nn.Embedding!", "Rowwise on a Conv2d")
H.raises(function() Colwise({ use_local_output = false }) end, "use_local_output=false is not supported", "use_local_output=false")
H.raises(function() Colwise({ input_layout = Replicate() }) end, "input_layout", "an unknown keyword")
H.raises(function() Rowwise({ output_layouts = "Replicate" }) end, "output_layouts must be a placement", "a layout that is not a placement")
H.raises(function() parallelize_module(nn.Linear(2, 2), mesh, { fc = "col" }) end, "must be a ParallelStyle", "a plan value that is not a style")
H.raises(function() parallelize_module(nn.Linear(2, 2), mesh, { [""] = Colwise() }) end, "Expect module path to be non-empty", "an empty plan key")
H.raises(function() parallelize_module(nn.Linear(2, 2), mesh, 3) end, "Expect Union[ParallelStyle, Dict[str, ParallelStyle]]", "a plan of the wrong type")
H.raises(function() parallelize_module(nn.Linear(2, 2), dist.group.WORLD, Colwise()) end, "must be a DeviceMesh", "a process group as the mesh")
H.raises(function() tp.loss_parallel() end, "loss_parallel is not supported", "loss_parallel")
H.raises(function() tp.PrepareModuleInput({ input_layouts = { Shard(1), Replicate() }, desired_input_layouts = { Replicate() } }) end,
  "should have same length", "PrepareModuleInput with lists of different lengths")
do
  local m = parallelize_module(nn.Sequential(nn.Linear(4, 4)), mesh, { ["0"] = tp.PrepareModuleInput({ input_layouts = Shard(0), desired_input_layouts = Shard(1) }) })
  H.raises(function() m(torch.randn(2, 4):to(dev)) end, "(an all-to-all) is not supported", "Shard(0) -> Shard(1)")
end
-- a key naming no submodule: PyTorch's warning, the module left as it was
do
  local m = nn.Sequential(nn.Linear(4, 4))
  local lines, stderr = {}, io.stderr
  io.stderr = { write = function(_, ...) for _, s in ipairs({ ... }) do lines[#lines + 1] = s end end }
  local ok, err = pcall(parallelize_module, m, mesh, { ["1"] = Colwise(), ["0.fc"] = Colwise() })
  io.stderr = stderr
  local text = table.concat(lines)
  H.check(ok, "a plan key naming no submodule is not an error: %s", tostring(err))
  H.check(text:find("Parallelize plan key '1' could not be resolved: no submodule matching token '1' in module Sequential, skipping this plan entry.", 1, true) ~= nil,
    "the warning names the key: %s", text)
  H.check(text:find("no submodule matching token 'fc' in module Linear", 1, true) ~= nil, "a nested key warns at its level: %s", text)
  H.check(m[0].weight:size(0) == 4, "the module is left whole")
end
-- a 2-D mesh: refused; its "tp" dimension (here of one rank) works
do
  local mesh2 = dist.init_device_mesh(mesh.device_type, { world, 1 }, { mesh_dim_names = { "dp", "tp" } })
  H.raises(function() parallelize_module(nn.Linear(4, 4), mesh2, Colwise()) end,
    "Tensor Parallel only accepts a 1D DeviceMesh, but found 2D!", "a 2-D mesh")
  local ref, par = nn.Linear(4, 3):to(dev), nn.Linear(4, 3):to(dev)
  par:load_state_dict(ref:state_dict())
  parallelize_module(par, mesh2["tp"], Colwise())
  H.check(par.weight:size(0) == 3, "a tp dimension of one rank keeps the whole weight")
  H.close(par(X:narrow(2, 0, 4)), ref(X:narrow(2, 0, 4)), TOL, "a tp dimension of one rank: output")
end

dist.destroy_process_group()
H.report()
