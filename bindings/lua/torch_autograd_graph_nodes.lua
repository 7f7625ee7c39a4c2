-- torch.autograd.graph's nodes and edges: Node (the type of every grad_fn; Node.is(v) is
-- Python's isinstance(v, Node)), GradientEdge and get_gradient_edge, increment_version,
-- register_multi_grad_hook and allow_mutation_on_saved_tensors; and torch.autograd's
-- set_multithreading_enabled and view-replay switches. A node's own methods (name,
-- register_hook, register_prehook, metadata, next_functions) are in bindings/autograd.c.
require "torch_autograd_graph"
require "torch_autograd_more"
local torch = require "torch"
local U = require "nn_util"

local autograd = torch.autograd
local graph = autograd.graph

local function is_node(v)
  local mt = type(v) == "userdata" and getmetatable(v)
  return mt and mt.__name == "torch.autograd.Node" or false
end

-- Node: the class of grad_fn objects (AccumulateGrad, MulBackward0, a Function's node, ...)
local Node = { __name = "Node" }
function Node.is(v) return is_node(v) end
graph.Node = Node

-- GradientEdge(node, output_nr): where a gradient enters the graph, as PyTorch's named tuple
-- (fields node and output_nr, also edge[1] and edge[2])
local GradientEdge = { __name = "GradientEdge" }
GradientEdge.__index = function(e, k)
  if k == 1 then return rawget(e, "node") elseif k == 2 then return rawget(e, "output_nr") end
  return GradientEdge[k]
end
function GradientEdge.__tostring(e) return string.format("GradientEdge(node=%s, output_nr=%d)", tostring(e.node), e.output_nr) end
function GradientEdge.__eq(a, b) return a.node == b.node and a.output_nr == b.output_nr end
function GradientEdge.is(v) return getmetatable(v) == GradientEdge end
setmetatable(GradientEdge, {
  __call = function(_, ...)
    local o = U.parse("GradientEdge", { { "node", U.REQUIRED }, { "output_nr", U.REQUIRED } }, ...)
    if not is_node(o.node) then U.errorf("GradientEdge: node must be a Node, got %s", U.typename(o.node)) end
    U.check_int("GradientEdge", "output_nr", o.output_nr, 0)
    return setmetatable({ node = o.node, output_nr = math.tointeger(o.output_nr) }, GradientEdge)
  end,
})
graph.GradientEdge = GradientEdge

-- get_gradient_edge(tensor): its grad_fn and output_nr, or for a leaf its AccumulateGrad node
-- (hooks and metadata put on it are the leaf's, as on the node next_functions reaches)
function graph.get_gradient_edge(tensor)
  U.check_tensor("get_gradient_edge", "tensor", 1, tensor)
  local node, nr = torch._gradient_edge(tensor)
  return setmetatable({ node = node, output_nr = nr }, GradientEdge)
end

-- increment_version(tensor or list of tensors): bump the version counter, as an in-place change
-- made outside autograd's sight would, so a saved copy of it fails at backward
function graph.increment_version(tensor)
  if torch.is_tensor(tensor) then return torch._increment_version(tensor) end
  if type(tensor) ~= "table" then U.errorf("increment_version: expected a Tensor or a list of Tensors, got %s", U.typename(tensor)) end
  for i, t in ipairs(tensor) do
    if not torch.is_tensor(t) then U.errorf("increment_version: element %d must be a Tensor, got %s", i, U.typename(t)) end
  end
  for _, t in ipairs(tensor) do torch._increment_version(t) end
end

local function remove_all(handles)
  return { remove = function() for _, h in ipairs(handles) do h:remove() end end }
end

-- register_multi_grad_hook(tensors, fn, {mode="all"}): mode "all": once per backward pass, after
-- the gradients of all the tensors that pass computes, fn(grads) with grads[i] the gradient of
-- tensors[i] (nil where the pass computes none); mode "any": fn(grad) with the first of them
-- computed in each pass. Returns a handle whose remove() takes it off. A pass run from inside fn
-- (a nested backward) starts the count afresh. Unlike PyTorch, a tensor hook is not called for an
-- output of a multi-output node that gets no gradient while the node runs; such a tensor in mode
-- "all" keeps fn from being called in that pass.
function graph.register_multi_grad_hook(tensors, fn, ...)
  local o = U.parse("register_multi_grad_hook", { { "mode", "all" } }, ...)
  if type(tensors) ~= "table" or torch.is_tensor(tensors) then
    U.errorf("register_multi_grad_hook: tensors must be a list of Tensors, got %s", U.typename(tensors))
  end
  for i, t in ipairs(tensors) do
    if not torch.is_tensor(t) then U.errorf("register_multi_grad_hook: element %d of tensors must be a Tensor, got %s", i, U.typename(t)) end
  end
  if type(fn) ~= "function" then U.errorf("register_multi_grad_hook: fn must be a function, got %s", U.typename(fn)) end
  if o.mode ~= "all" and o.mode ~= "any" then
    U.errorf("Expects mode to be one of ('all', 'any') but got %s", tostring(o.mode))
  end
  local n, handles = #tensors, {}
  if o.mode == "any" then
    local fired -- the pass fn last ran in
    for _, t in ipairs(tensors) do
      if t.requires_grad then
        handles[#handles + 1] = t:register_hook(function(grad)
          local id = torch._backward_pass_id()
          if id == fired then return end
          fired = id
          fn(grad)
        end)
      end
    end
    return remove_all(handles)
  end
  local pass, grads, got, expected -- the pass being counted, its gradients and their counts
  for i, t in ipairs(tensors) do
    if t.requires_grad then
      handles[#handles + 1] = t:register_hook(function(grad)
        local id = torch._backward_pass_id()
        if id ~= pass then -- the first of this pass: how many it will compute
          pass, grads, got, expected = id, {}, 0, 0
          for _, u in ipairs(tensors) do
            if u.requires_grad and torch._backward_computes(u) then expected = expected + 1 end
          end
        end
        grads[i], got = grad, got + 1
        if got == expected then
          local all = grads
          pass, grads = nil, nil
          fn(table.pack(table.unpack(all, 1, n)))
        end
      end)
    end
  end
  return remove_all(handles)
end

-- allow_mutation_on_saved_tensors([fn]): inside, a tensor autograd saves may be changed in place
-- and backward still sees its value from when it was saved. Each saved tensor is cloned as it
-- is saved (PyTorch clones only those later changed: same gradients, more memory here). Not
-- nestable; backward through what was recorded inside must run inside too.
local mutation_open = false
function graph.allow_mutation_on_saved_tensors(fn)
  if fn ~= nil and type(fn) ~= "function" then
    U.errorf("allow_mutation_on_saved_tensors: expected a function or nothing, got %s", U.typename(fn))
  end
  if mutation_open then error("allow_mutation_on_saved_tensors contexts cannot be nested", 2) end
  local scope = { open = true }
  local function pack(t) return t:detach():clone() end
  local function unpack(c)
    if not scope.open then
      error("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the graph was originally recorded.", 0)
    end
    return c
  end
  local hooks = graph.saved_tensors_hooks(pack, unpack)
  mutation_open = true
  setmetatable(scope, { __close = function(s)
    if not s.open then return end
    s.open, mutation_open = false, false
    getmetatable(hooks).__close(hooks)
  end })
  return U.with(scope, fn)
end

-- set_multithreading_enabled(mode[, fn]) and is_multithreading_enabled(): PyTorch's switch for
-- running backward on one thread per device. nnrepl's backward always runs on the calling
-- thread (it takes the devices' ready nodes in turn), so the setting is only kept and reported;
-- gradients and hook order are the same either way.
local multithreading = true
function autograd.is_multithreading_enabled() return multithreading end
function autograd.set_multithreading_enabled(mode, fn)
  if type(mode) ~= "boolean" then U.errorf("set_multithreading_enabled: mode must be a boolean, got %s", U.typename(mode)) end
  local prev = multithreading
  multithreading = mode
  return U.scoped(function() multithreading = prev end, fn)
end

-- is_view_replay_enabled() and _force_original_view_tracking(mode[, fn]): a view whose base was
-- changed in place gets its history regenerated as AsStridedBackward0, as PyTorch's default
-- (view replay off); replaying the original view ops is not supported.
function autograd.is_view_replay_enabled() return false end
function autograd._force_original_view_tracking(mode, fn)
  if type(mode) ~= "boolean" then U.errorf("_force_original_view_tracking: mode must be a boolean, got %s", U.typename(mode)) end
  if mode then
    error("_force_original_view_tracking(true) is not supported: nnrepl regenerates the history of a view whose base " ..
      "changed in place as AsStridedBackward0 (view replay is always off)", 2)
  end
  return U.scoped(function() end, fn)
end

if autograd.grad_mode then
  autograd.grad_mode.set_multithreading_enabled = autograd.set_multithreading_enabled
  autograd.grad_mode._force_original_view_tracking = autograd._force_original_view_tracking
end

return graph
