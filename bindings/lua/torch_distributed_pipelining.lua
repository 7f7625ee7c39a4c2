-- torch.distributed.pipelining with manual stages: PipelineStage (one stage per rank of the
-- pipeline group) and the single-stage schedules ScheduleGPipe and Schedule1F1B, over
-- P2POp / batch_isend_irecv (gloo on CPU, nccl on CUDA).
--
--   local stage = pipelining.PipelineStage(part, rank, world, "cpu")
--   local sched = pipelining.ScheduleGPipe(stage, 4, {loss_fn = F.mse_loss})
--   if rank == 0 then sched:step(x) elseif rank == world - 1 then sched:step({target = y, losses = l}) else sched:step() end
--
-- As in PyTorch 2.11: the batch is split along dim 0 with tensor_split; the shapes passed
-- between stages are learnt from the first micro-batch of the first step (the metadata goes to
-- the next stage with send_object_list) and then fixed, so every micro-batch must have them;
-- each micro-batch's loss is loss_fn(output, target chunk) and, with scale_grads (default
-- true), the parameter gradients are divided by n_microbatches after the last backward.
-- Stage modules pass tensors: several return values (or one list) go to the next stage's
-- forward as positional arguments.
local torch = require "torch"
local U = require "nn_util"
local dist = require "torch_distributed"
require "torch_distributed_more" -- P2POp, batch_isend_irecv, send_object_list

local pipelining = {}
dist.pipelining = pipelining

local function dtype_name(dt) return (tostring(dt):gsub("^torch%.", "")) end
local function shape_str(shape) return "torch.Size([" .. table.concat(shape, ", ") .. "])" end

-- {shape = {...}, dtype = "float32"} of a tensor
local function meta_of(t)
  local shape = {}
  for d = 0, t:dim() - 1 do shape[d + 1] = t:size(d) end
  return { shape = shape, dtype = dtype_name(t.dtype) }
end

local floats = { float32 = true, float64 = true, float16 = true, bfloat16 = true }
local function is_float(meta) return floats[meta.dtype] == true end

-- the tensors of a list of values (a module's return values, or one plain list of them)
local function tensor_list(what, vals)
  if vals.n == 1 and type(vals[1]) == "table" and not torch.is_tensor(vals[1]) then
    vals = { n = #vals[1], table.unpack(vals[1]) }
  end
  local out = {}
  for i = 1, vals.n do
    if not torch.is_tensor(vals[i]) then
      U.errorf("%s: a pipeline stage passes tensors only, value %d is %s", what, i, U.typename(vals[i]))
    end
    out[i] = vals[i]
  end
  return out
end

-- PyTorch's validate_tensors_metadata (PipeliningShapeError), on metadata
local function validate(desc, metas, got)
  if #metas ~= #got then
    U.errorf("%s: Number of values (%d) does not match expected number (%d)", desc, #got, #metas)
  end
  for i, m in ipairs(metas) do
    if table.concat(got[i].shape, ",") ~= table.concat(m.shape, ",") then
      U.errorf("%s has a shape mismatch: expected %s actual %s", desc, shape_str(m.shape), shape_str(got[i].shape))
    end
    if got[i].dtype ~= m.dtype then
      U.errorf("%s has a dtype mismatch: expected torch.%s actual torch.%s", desc, m.dtype, got[i].dtype)
    end
  end
end

local function metas_of_list(tensors)
  local out = {}
  for i, t in ipairs(tensors) do out[i] = meta_of(t) end
  return out
end

local function metas_of(what, v)
  if v == nil then return nil end
  return metas_of_list(tensor_list(what, { n = 1, v }))
end

-- ---- PipelineStage ----

local Stage = { __name = "torch.distributed.pipelining.PipelineStage" }
Stage.__index = Stage
Stage.__tostring = function(s) return string.format("PipelineStage(stage_index=%d, num_stages=%d)", s.stage_index, s.num_stages) end

pipelining.PipelineStage = setmetatable({}, { __index = Stage, __call = function(_, ...)
  local o = U.parse("PipelineStage", { { "submodule", U.REQUIRED }, { "stage_index", U.REQUIRED }, { "num_stages", U.REQUIRED },
    { "device", U.REQUIRED }, { "input_args", nil }, { "output_args", nil }, { "group", nil }, { "dw_builder", nil } }, ...)
  local index = U.check_int("PipelineStage", "stage_index", o.stage_index)
  local n = U.check_int("PipelineStage", "num_stages", o.num_stages, 1)
  if index >= n or index < 0 then U.errorf("Stage index %d is out of range of %d", index, n) end
  if o.dw_builder ~= nil then
    U.error("PipelineStage: dw_builder is not supported (it serves the zero-bubble schedules, which nnrepl does not have)")
  end
  if not dist.is_initialized() then
    U.error("Default process group has not been initialized, please make sure to call init_process_group.")
  end
  local size = dist.get_world_size(o.group)
  if size > n then U.errorf("Pipeline group size %d cannot be larger than number of stages %d", size, n) end
  local s = setmetatable({ submod = o.submodule, stage_index = index, num_stages = n, device = o.device, group = o.group,
    group_rank = dist.get_rank(o.group), group_size = size, is_first = index == 0, is_last = index == n - 1 }, Stage)
  s.inputs_meta = metas_of("PipelineStage input_args", o.input_args)
  s._given_inputs = s.inputs_meta ~= nil
  s.outputs_meta = metas_of("PipelineStage output_args", o.output_args)
  s:_clear()
  return s
end })

function Stage:_clear()
  self._cache, self._grads, self._input_grads, self.output_chunks = {}, {}, {}, {}
end

local function p2p(op, t, peer, group) return dist.P2POp(op, t, { group_peer = peer, group = group }) end

-- the receives of micro-batch i's activations (first time: their metadata, synchronously)
function Stage:_fwd_recv_ops(i)
  if self.is_first then return {} end
  if not self._meta_received then
    local got = { false } -- recv_object_list fills the list's length
    dist.recv_object_list(got, { group_src = self.stage_index - 1, group = self.group })
    local metas = got[1]
    if self._given_inputs then validate(string.format("Stage %d forward inputs", self.stage_index), self.inputs_meta, metas) end
    self.inputs_meta, self._meta_received = metas, true
  end
  local bufs, ops = {}, {}
  for k, m in ipairs(self.inputs_meta) do
    bufs[k] = torch.empty(m.shape, { dtype = torch[m.dtype], device = self.device })
    ops[k] = p2p(dist.irecv, bufs[k], self.stage_index - 1, self.group)
  end
  self._cache[i] = { inputs = bufs }
  return ops
end

-- the first stage's micro-batches against its input shapes (learnt from the first one)
function Stage:_check_inputs(arg_mbs)
  if self.inputs_meta == nil then
    self.inputs_meta = metas_of_list(arg_mbs[1])
  end
  for _, args in ipairs(arg_mbs) do
    validate(string.format("Stage %d forward inputs", self.stage_index), self.inputs_meta, metas_of_list(args))
  end
end

function Stage:_forward(i, args, has_backward)
  local entry = self._cache[i] or {}
  local inputs = args
  if self.is_first then
    -- checked by step before any micro-batch runs
  else
    inputs = entry.inputs
    if has_backward then
      for k, t in ipairs(inputs) do if t:is_floating_point() then t:requires_grad_(true) end end
    end
  end
  local vals = table.pack(self.submod(table.unpack(inputs)))
  local outs = tensor_list(string.format("stage %d's module", self.stage_index), vals)
  self.outputs_meta = self.outputs_meta or metas_of_list(outs)
  validate(string.format("Stage %d forward outputs", self.stage_index), self.outputs_meta, metas_of_list(outs))
  self._cache[i] = { inputs = inputs, outputs = outs }
  -- the module's own form: one tensor, several values or a list
  local value = vals.n == 1 and vals[1] or outs
  self._multi = vals.n > 1
  if self.is_last then self.output_chunks[i] = value end
  return value
end

function Stage:_fwd_send_ops(i)
  if self.is_last then return {} end
  local next_rank = self.stage_index + 1
  if not self._meta_sent then
    dist.send_object_list({ self.outputs_meta }, { group_dst = next_rank, group = self.group })
    self._meta_sent = true
  end
  local ops = {}
  for k, t in ipairs(self._cache[i].outputs) do ops[k] = p2p(dist.isend, t:detach():contiguous(), next_rank, self.group) end
  return ops
end

-- the receives of the gradients of micro-batch i's floating-point outputs
function Stage:_bwd_recv_ops(i)
  if self.is_last then return {} end
  local grads, ops = {}, {}
  for k, m in ipairs(self.outputs_meta) do
    if is_float(m) then
      grads[k] = torch.empty(m.shape, { dtype = torch[m.dtype], device = self.device })
      ops[#ops + 1] = p2p(dist.irecv, grads[k], self.stage_index + 1, self.group)
    end
  end
  self._grads[i] = grads
  return ops
end

function Stage:_backward(i, loss)
  local entry = self._cache[i]
  if self.is_last then
    loss:backward()
  else
    local ts, gs = {}, {}
    for k, o in ipairs(entry.outputs) do
      local g = self._grads[i][k]
      if g and o.requires_grad then ts[#ts + 1], gs[#gs + 1] = o, g end
    end
    if #ts > 0 then torch.autograd.backward(ts, gs) end
  end
  if not self.is_first then
    local grads = {}
    for k, t in ipairs(entry.inputs) do
      if t:is_floating_point() then grads[#grads + 1] = t.grad or torch.zeros_like(t) end
    end
    self._input_grads[i] = grads
  end
  self._cache[i], self._grads[i] = nil, nil
end

function Stage:_bwd_send_ops(i)
  if self.is_first then return {} end
  local ops = {}
  for k, g in ipairs(self._input_grads[i]) do ops[k] = p2p(dist.isend, g:contiguous(), self.stage_index - 1, self.group) end
  self._input_grads[i] = nil
  return ops
end

function Stage:scale_grads(factor)
  if factor == 1 then return end
  for _, p in ipairs(self.submod:parameters()) do
    if p.grad ~= nil then p.grad:div_(factor) end
  end
end

-- ---- the schedules ----

local function fire(ops)
  if #ops == 0 then return {} end
  return dist.batch_isend_irecv(ops)
end
local function wait(works) for _, w in ipairs(works) do w:wait() end end
local function concat(a, b)
  local out = table.move(a, 1, #a, 1, {})
  return table.move(b, 1, #b, #out + 1, out)
end

local Schedule = { __name = "torch.distributed.pipelining.PipelineScheduleSingle" }
Schedule.__index = Schedule

local function schedule_class(name, run, min_microbatches)
  local cls = setmetatable({ __name = "torch.distributed.pipelining." .. name, _run = run }, { __index = Schedule })
  cls.__index = cls
  return setmetatable(cls, { __index = Schedule, __call = function(_, ...)
    local o = U.parse(name, { { "stage", U.REQUIRED }, { "n_microbatches", U.REQUIRED }, { "loss_fn", nil },
      { "args_chunk_spec", nil }, { "kwargs_chunk_spec", nil }, { "output_merge_spec", nil }, { "scale_grads", true } }, ...)
    local stage = o.stage
    if getmetatable(stage) ~= Stage then U.errorf("%s: stage must be a PipelineStage, got %s", name, U.typename(stage)) end
    local n = U.check_int(name, "n_microbatches", o.n_microbatches, 1)
    for _, k in ipairs({ "args_chunk_spec", "kwargs_chunk_spec", "output_merge_spec" }) do
      if o[k] ~= nil then U.errorf("%s: %s is not supported (inputs are split and outputs merged along dim 0)", name, k) end
    end
    if stage.group_size ~= stage.num_stages then
      U.errorf("%s: a single-stage schedule runs one stage per rank, but the pipeline has %d stages and its group %d ranks "
        .. "(schedules with several stages per rank, such as ScheduleInterleaved1F1B, are not supported)", name, stage.num_stages, stage.group_size)
    end
    if stage.stage_index ~= stage.group_rank then
      U.errorf("%s: stage %d must run on group rank %d, not %d (stage i runs on rank i of the pipeline group)", name,
        stage.stage_index, stage.stage_index, stage.group_rank)
    end
    if min_microbatches and n < stage.num_stages then
      U.errorf("Number of microbatches (%d) must be greater than or equal to the number of stages (%d).", n, stage.num_stages)
    end
    return setmetatable({ _stage = stage, _n_microbatches = n, _loss_fn = o.loss_fn, scale_grads = o.scale_grads,
      _has_backward = o.loss_fn ~= nil, _name = name }, cls)
  end })
end

-- the batch's tensors split into n micro-batches along dim 0 (tensor_split), as lists of args
local function split_args(args, n)
  local chunks = n
  local first = args[1]:dim() > 0 and args[1]:size(0) or 0
  if first < n then
    U.warn(string.format("Tensor size on chunking dimension is %d, downsizing the number of chunks from %d to %d.", first, n, first))
    chunks = first
  end
  local mbs = {}
  for c = 1, chunks do mbs[c] = {} end
  for k, a in ipairs(args) do
    local parts = { torch.tensor_split(a, chunks, 0) }
    for c = 1, chunks do mbs[c][k] = parts[c] end
  end
  if #mbs ~= n then U.errorf("Expecting %d arg_mbs but got %d", n, #mbs) end
  return mbs
end

local function merge(chunks, multi)
  if torch.is_tensor(chunks[1]) then return torch.cat(chunks, 0) end
  local out = {}
  for k = 1, #chunks[1] do
    local parts = {}
    for c, ch in ipairs(chunks) do parts[c] = ch[k] end
    out[k] = torch.cat(parts, 0)
  end
  if multi then return table.unpack(out) end
  return out
end

-- step(batch tensors..., {target=, losses=, return_outputs=true})
function Schedule:step(...)
  local n = select("#", ...)
  local opts = {}
  if n > 0 and U.is_opts((select(n, ...))) then
    opts = (select(n, ...))
    n = n - 1
    for k in pairs(opts) do
      if k ~= "target" and k ~= "losses" and k ~= "return_outputs" then
        U.errorf("bad argument #%d to 'step' (unknown keyword '%s'; keyword arguments to the stage module are not supported)", n + 1, tostring(k))
      end
    end
  end
  local args = {}
  for i = 1, n do
    local a = (select(i, ...))
    if not torch.is_tensor(a) then U.errorf("step: the batch must be tensors, argument %d is %s", i, U.typename(a)) end
    args[i] = a
  end
  if self._has_backward and not torch.is_grad_enabled() then
    U.error("step() requires gradients to be enabled for backward computation; it should not be used under torch.no_grad() context. Please call eval() instead.")
  end
  local stage, nmb = self._stage, self._n_microbatches
  if opts.losses ~= nil and type(opts.losses) ~= "table" then U.errorf("losses must be a list but got a %s", U.typename(opts.losses)) end
  local arg_mbs = {}
  if stage.is_first then
    if n == 0 then U.errorf("%s.step: the first stage needs the batch (its module's arguments)", self._name) end
    arg_mbs = split_args(args, nmb)
    stage:_check_inputs(arg_mbs)
  end
  local targets
  if opts.target ~= nil then targets = { torch.tensor_split(opts.target, nmb) } end
  stage:_clear()
  self._losses = {}
  self:_run(arg_mbs, targets)
  if stage.is_last and opts.losses ~= nil then
    if #self._losses ~= nmb then U.errorf("Expecting %d losses but got %d", nmb, #self._losses) end
    for k in pairs(opts.losses) do opts.losses[k] = nil end
    for k, l in ipairs(self._losses) do opts.losses[k] = l end
  end
  self._losses = {}
  if self._has_backward then stage:scale_grads(self.scale_grads and nmb or 1) end
  if stage.is_last and opts.return_outputs ~= false then return merge(stage.output_chunks, stage._multi) end
  return nil
end

-- the forward passes only (no loss backward), as step
function Schedule:eval(...)
  local saved = self._has_backward
  self._has_backward = false
  local res = table.pack(pcall(self.step, self, ...))
  self._has_backward = saved
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function Schedule:_forward(i, arg_mbs, targets)
  local stage = self._stage
  local out = stage:_forward(i, arg_mbs[i], self._has_backward)
  if stage.is_last and self._loss_fn ~= nil then
    if targets == nil then U.errorf("%s.step: the last stage needs {target=} to compute the loss", self._name) end
    self._losses[i] = self._loss_fn(out, targets[i])
  end
end

function Schedule:_backward(i)
  self._stage:_backward(i, self._losses[i])
end

-- GPipe: every forward, then every backward
local function run_gpipe(self, arg_mbs, targets)
  local stage, n = self._stage, self._n_microbatches
  local sends = {}
  for i = 1, n do
    wait(fire(stage:_fwd_recv_ops(i)))
    self:_forward(i, arg_mbs, targets)
    sends[#sends + 1] = fire(stage:_fwd_send_ops(i))
  end
  for _, w in ipairs(sends) do wait(w) end
  if not self._has_backward then return end
  sends = {}
  for i = 1, n do
    wait(fire(stage:_bwd_recv_ops(i)))
    self:_backward(i)
    sends[#sends + 1] = fire(stage:_bwd_send_ops(i))
  end
  for _, w in ipairs(sends) do wait(w) end
end

-- 1F1B: num_stages - stage_index warm-up forwards, then one backward and one forward in
-- turn (a forward's send travels with the next backward's receive), then the backwards left
local function run_1f1b(self, arg_mbs, targets)
  if not self._has_backward then return run_gpipe(self, arg_mbs, targets) end
  local stage, n = self._stage, self._n_microbatches
  local warmup = math.min(n, stage.num_stages - stage.stage_index)
  local fwd, bwd = 1, 1
  local send_work, fwd_sends = {}, {}
  for _ = 1, warmup do
    wait(fire(stage:_fwd_recv_ops(fwd)))
    self:_forward(fwd, arg_mbs, targets)
    wait(send_work)
    fwd_sends = stage:_fwd_send_ops(fwd)
    if fwd ~= warmup then send_work, fwd_sends = fire(fwd_sends), {} end
    fwd = fwd + 1
  end
  local bwd_sends
  while true do
    wait(fire(concat(fwd_sends, stage:_bwd_recv_ops(bwd))))
    self:_backward(bwd)
    bwd_sends = stage:_bwd_send_ops(bwd)
    bwd = bwd + 1
    if fwd > n then break end
    wait(fire(concat(bwd_sends, stage:_fwd_recv_ops(fwd))))
    self:_forward(fwd, arg_mbs, targets)
    fwd_sends = stage:_fwd_send_ops(fwd)
    fwd = fwd + 1
  end
  send_work = fire(bwd_sends)
  while bwd <= n do
    wait(fire(stage:_bwd_recv_ops(bwd)))
    self:_backward(bwd)
    wait(send_work)
    send_work = fire(stage:_bwd_send_ops(bwd))
    bwd = bwd + 1
  end
  wait(send_work)
end

pipelining.PipelineScheduleSingle = Schedule
pipelining.ScheduleGPipe = schedule_class("ScheduleGPipe", run_gpipe)
pipelining.Schedule1F1B = schedule_class("Schedule1F1B", run_1f1b, true)

-- ---- what is not supported: several stages per rank, the tracing frontend ----

local function unsupported(name, why)
  return setmetatable({ __name = "torch.distributed.pipelining." .. name }, { __call = function()
    U.errorf("torch.distributed.pipelining.%s is not supported in nnrepl: %s", name, why)
  end })
end
local multi = "it runs several stages per rank; use ScheduleGPipe or Schedule1F1B with one PipelineStage per rank"
for _, name in ipairs({ "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble",
  "ScheduleDualPipeV", "PipelineScheduleMulti" }) do
  pipelining[name] = unsupported(name, multi)
end
local trace = "nnrepl has no torch.export tracing to split a model; split it by hand into one module per stage and "
  .. "wrap each in PipelineStage"
pipelining.pipeline = unsupported("pipeline", trace)
pipelining.pipe_split = unsupported("pipe_split", trace)
pipelining.build_stage = unsupported("build_stage", trace)
-- the split points of pipeline()'s split_spec (pipeline itself raises)
pipelining.SplitPoint = { BEGINNING = setmetatable({ name = "BEGINNING" }, { __tostring = function() return "SplitPoint.BEGINNING" end }),
  END = setmetatable({ name = "END" }, { __tostring = function() return "SplitPoint.END" end }) }

-- get_schedule_class(name): the class of a schedule by name, case-insensitive
local schedule_names = { "1F1B", "Interleaved1F1B", "GPipe", "LoopedBFS", "InterleavedZeroBubble", "PipelineScheduleSingle",
  "PipelineScheduleMulti", "ZBVZeroBubble", "DualPipeV" }
function pipelining.get_schedule_class(name)
  for _, k in ipairs(schedule_names) do
    if k:lower() == tostring(name):lower() then
      return pipelining[k:find("^Pipeline") and k or "Schedule" .. k]
    end
  end
  U.errorf("Unknown schedule name '%s'. The valid options are %s", tostring(name), table.concat(schedule_names, ", "))
end

return pipelining
