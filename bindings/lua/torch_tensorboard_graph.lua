-- SummaryWriter:add_graph(model, input_to_model, verbose=false, use_strict_trace=true): the model's
-- data flow as a tensorflow GraphDef in an Event (graph_def = 4), TensorBoard's GRAPHS tab.
--
-- PyTorch builds it from a torch.jit trace; nnrepl records one forward pass instead (grad enabled,
-- the inputs as fresh leaves that require grad) and walks the autograd graph from the outputs:
--   input/input.<i>                  "IO Node", the inputs
--   <scope>/<param name>             "prim::GetAttr", each parameter reached
--   <scope>/<Op>[.k]                 "aten::<op>", one per autograd node (AddmmBackward0 -> Addmm)
--   output/output.<i>                "IO Node", the outputs
-- <scope> is the module path as PyTorch writes it: Net/Conv2d[conv1]/...; a node belongs to the
-- innermost module whose forward made it (forward hooks on every submodule). Ops that autograd
-- does not record (those on tensors that need no grad, such as integer indices) are not shown,
-- and _output_shapes is known only for the inputs, the parameters and modules' outputs.
-- use_strict_trace is accepted for compatibility (it only matters to the JIT).
local torch = require "torch"
local time = require "time"
local U = require "nn_util"
local P = require "tb_protobuf"
local TB = require "torch.utils.tensorboard"
local H = TB._helpers

local SummaryWriter = TB.SummaryWriter

local function tensors_in(v, out)
  out = out or {}
  if torch.is_tensor(v) then out[#out + 1] = v
  elseif type(v) == "table" and getmetatable(v) == nil then
    for _, x in ipairs(v) do tensors_in(x, out) end
  end
  return out
end

local function key_of(fn) return tostring(fn) end -- a node's identity (its address)

local function op_of(fn)
  local name = fn:name():gsub("Backward%d*$", "")
  return "aten::" .. name:gsub("(%l)(%u)", "%1_%2"):lower()
end

-- "Net", "Net/Conv2d[conv1]", "Net/Sequential[seq]/Linear[0]" for every module of the model
local function scopes_of(model)
  local by_name, scope = {}, {}
  for name, m in model:named_modules() do
    if name == "" then
      scope[m] = m:_get_name()
    else
      local parent, leaf = name:match("^(.*)%.([^.]+)$")
      if not parent then parent, leaf = "", name end
      scope[m] = scope[by_name[parent]] .. "/" .. m:_get_name() .. "[" .. leaf .. "]"
    end
    by_name[name] = m
  end
  return scope
end

-- Run the model once with hooks that give each new autograd node the scope of the innermost module
-- whose forward produced it: a module's nodes are those reachable from its outputs before its inputs.
local function trace(model, inputs)
  local scope = scopes_of(model)
  local node_scope, shapes, stops, handles = {}, {}, {}, {}
  local function walk(fn, sc, stop, seen)
    local k = key_of(fn)
    if seen[k] or stop[k] then return end
    seen[k] = true
    if node_scope[k] == nil and fn:name() ~= "AccumulateGrad" then node_scope[k] = sc end
    for _, nf in ipairs(fn.next_functions) do
      if nf[1] then walk(nf[1], sc, stop, seen) end
    end
  end
  for m, sc in pairs(scope) do
    handles[#handles + 1] = m:register_forward_pre_hook(function(_, inp)
      local stop = {}
      for _, t in ipairs(tensors_in(inp)) do
        if t.grad_fn then stop[key_of(t.grad_fn)] = true end
      end
      stops[#stops + 1] = stop
    end)
    handles[#handles + 1] = m:register_forward_hook(function(_, _, out)
      local stop = table.remove(stops)
      local seen = {}
      for _, t in ipairs(tensors_in(out)) do
        if t.grad_fn then
          shapes[key_of(t.grad_fn)] = shapes[key_of(t.grad_fn)] or t:size():totable()
          walk(t.grad_fn, sc, stop, seen)
        end
      end
    end)
  end
  local ok, out = pcall(function() return torch.enable_grad(function() return model(table.unpack(inputs)) end) end)
  for _, h in ipairs(handles) do h:remove() end
  if not ok then error(out, 0) end
  return tensors_in(out), node_scope, shapes
end

local function shapes_attr(list)
  local parts = {}
  for i, dims in ipairs(list) do parts[i] = P.msg(7, P.shape(dims)) end
  return P.msg(5, P.msg(1, "_output_shapes") .. P.msg(2, P.msg(1, table.concat(parts))))
end

-- NodeDef { name = 1; op = 2; repeated input = 3; device = 4; map<string, AttrValue> attr = 5 }
local function node_def(n, device)
  return P.str(1, n.name) .. P.str(2, n.op) .. P.repeated_str(3, n.inputs) .. P.str(4, device)
    .. (n.shape and shapes_attr({ n.shape }) or "")
end

function SummaryWriter:add_graph(...)
  local o = H.args("add_graph", { "model", "input_to_model", "verbose", "use_strict_trace", min = 1 }, ...)
  local model = o.model
  if type(model) ~= "table" or type(model.named_modules) ~= "function" then
    U.errorf("add_graph: model must be a torch.nn.Module, got %s", type(model))
  end
  local given = o.input_to_model
  if given == nil then U.error("add_graph: input_to_model is required: nnrepl records one forward pass of the model") end
  if torch.is_tensor(given) then given = { given } end
  if type(given) ~= "table" then U.errorf("add_graph: input_to_model must be a tensor or a list of tensors, got %s", type(given)) end
  local inputs, nodes, by_ptr = {}, {}, {}
  local device = "/device:CPU:0"
  for i, x in ipairs(given) do
    if torch.is_tensor(x) then
      if x.device.type == "cuda" then device = "/device:CUDA:0" end
      local leaf = x:detach()
      if leaf:is_floating_point() then leaf = leaf:clone():requires_grad_(true) end
      nodes[#nodes + 1] = { name = "input/input." .. i, op = "IO Node", inputs = {}, shape = x:size():totable() }
      by_ptr[leaf:data_ptr()] = nodes[#nodes].name
      x = leaf
    end
    inputs[i] = x
  end
  local outputs, node_scope, shapes = trace(model, inputs)

  local scope = scopes_of(model)
  for pname, p in model:named_parameters() do
    local owner, leaf = pname:match("^(.*)%.([^.]+)$")
    local m = owner and model:get_submodule(owner) or model
    by_ptr[p:data_ptr()] = by_ptr[p:data_ptr()] or scope[m] .. "/" .. (leaf or pname)
  end
  -- name every node reached from the outputs, inputs before users
  local names, used = {}, {}
  local function visit(fn)
    local k = key_of(fn)
    if names[k] ~= nil then return names[k] end
    names[k] = false -- on the stack
    if fn:name() == "AccumulateGrad" then
      local v = fn.variable
      local name = v and by_ptr[v:data_ptr()]
      if name and not used[name] and not name:find("^input/") then -- inputs are listed already
        used[name] = true
        nodes[#nodes + 1] = { name = name, op = "prim::GetAttr", inputs = {}, shape = v:size():totable() }
      end
      names[k] = name or false
      return names[k]
    end
    local ins = {}
    for _, nf in ipairs(fn.next_functions) do
      if nf[1] then
        local n = visit(nf[1])
        if n then ins[#ins + 1] = n end
      end
    end
    local op = op_of(fn)
    local base = (node_scope[k] or scope[model]) .. "/" .. fn:name():gsub("Backward%d*$", "")
    local name, i = base, 1
    while used[name] do name, i = base .. "." .. i, i + 1 end
    used[name] = true
    nodes[#nodes + 1] = { name = name, op = op, inputs = ins, shape = shapes[k] }
    names[k] = name
    return name
  end
  for i, t in ipairs(outputs) do
    local src = t.grad_fn and visit(t.grad_fn) or by_ptr[t:data_ptr()]
    nodes[#nodes + 1] = { name = "output/output." .. i, op = "IO Node", inputs = { src }, shape = t:size():totable() }
  end
  if o.verbose then
    for _, n in ipairs(nodes) do print(string.format("%s = %s(%s)", n.name, n.op, table.concat(n.inputs, ", "))) end
  end
  local parts = {}
  for i, n in ipairs(nodes) do parts[i] = P.msg(1, node_def(n, device)) end
  -- GraphDef { repeated NodeDef node = 1; VersionDef versions = 4 { producer = 1 } }
  local graph = table.concat(parts) .. P.msg(4, P.int(1, 22))
  -- Event { double wall_time = 1; bytes graph_def = 4 }
  self:_writer():record(P.double(1, time.time()) .. P.msg(4, graph))
end

return SummaryWriter
