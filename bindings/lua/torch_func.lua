-- torch.func (functional_call, grad, grad_and_value, vjp, jacrev, jvp, linearize, jacfwd, hessian,
-- vmap) and torch.nn.utils.stateless.functional_call, with PyTorch 2.x's names and argument order.
--
-- Built on torch.autograd.grad, not on functorch's level-tagged tensors, so:
--   * grad/vjp/jacrev/jacfwd differentiate detached requires-grad copies of the inputs; nested
--     inside another of them (grad(grad(f)), jacrev(grad(f)), ...), an input the outer transform
--     differentiates stays on its graph and the inner gradients are taken with create_graph.
--   * jvp runs func once on dual tensors (forward-mode AD, jvp_forward.lua) when every op on the
--     path has a forward rule. Otherwise, and for linearize, jacfwd and hessian (jacfwd of
--     jacrev), forward-mode products J v come from double backward (bindings/lua/jvp_util.lua):
--     one extra backward per tangent (jacfwd: per input element), so every op on the path needs
--     a differentiable backward.
--   * vmap first runs func once on BatchedTensors (vmap_batched.lua, rules in vmap_rules.lua;
--     grad/grad_and_value inside give per-sample gradients); when func uses anything without a
--     batching rule (or fails), it runs func again once per slice along the mapped dims and stacks
--     the results. In that loop random ops draw differently per sample whatever `randomness`
--     says ("same" replays the generator state for each sample). chunk_size runs the batched
--     pass on chunks of that many samples (the loop ignores it).
-- Lua specifics: argnums and dims are 0-based like PyTorch's; several outputs / (output, aux) are
-- several return values; an argument list is a Lua list; kwargs go to forward as a trailing table.
local torch = require "torch"
local U = require "nn_util"
local JVP = require "jvp_util"
local VB = require "vmap_batched"
local FWD = require "jvp_forward"
local OD = U.OrderedDict

local fail = U.errorf
local func = {}

local function is_tensor(v) return torch.is_tensor(v) end
local function is_module(v) return torch.nn and torch.nn.Module.is_module(v) or false end
-- a plain Lua table or OrderedDict (a pytree node); tensors and modules are leaves
local function is_node(v) return type(v) == "table" and (getmetatable(v) == nil or OD.is(v)) end

-- a copy of tree v with every tensor leaf replaced by fn(leaf); other leaves kept
local function map_tree(v, fn)
  if is_tensor(v) then return fn(v) end
  if not is_node(v) then return v end
  if OD.is(v) then
    local out = OD.new()
    for k, e in pairs(v) do out:set(k, map_tree(e, fn)) end
    return out
  end
  local out = {}
  for k, e in pairs(v) do out[k] = map_tree(e, fn) end
  return out
end

local function packed(...) return table.pack(...) end

-- ---------------------------------------------------------------- functional_call

-- the dicts as one name -> tensor table (a list of dicts is allowed, as in PyTorch)
local function merge_dicts(dicts)
  if type(dicts) ~= "table" then
    fail("Expected all elements of parameter_and_buffer_dicts to be dictionaries, got %s", U.typename(dicts))
  end
  local list = dicts
  if OD.is(dicts) or rawget(dicts, 1) == nil then list = { dicts } end
  local merged, order, seen = {}, {}, {}
  for _, d in ipairs(list) do
    if type(d) ~= "table" or is_tensor(d) then
      fail("Expected all elements of parameter_and_buffer_dicts to be dictionaries, got %s", U.typename(d))
    end
    for k, v in pairs(d) do
      if seen[k] then
        fail("%s appeared in multiple dictionaries; behavior of functional call is ambiguous", U.pyrepr(k))
      end
      seen[k] = true
      merged[k] = v
      order[#order + 1] = k
    end
  end
  return merged, order
end

local function split_name(name)
  local path, leaf = name:match("^(.*)%.([^.]*)$")
  if not path then return "", name end
  return path, leaf
end

local function quoted_sorted(keys)
  table.sort(keys)
  local q = {}
  for i, k in ipairs(keys) do q[i] = "'" .. k .. "'" end
  return table.concat(q, ", ")
end

-- functional_call(module, parameter_and_buffer_dicts, args=nil, kwargs=nil, {tie_weights=true, strict=false})
function func.functional_call(module, dicts, args, kwargs, ...)
  local o = U.parse("functional_call", { { "tie_weights", true }, { "strict", false } }, ...)
  if not is_module(module) then fail("functional_call: expected an nn.Module, got %s", U.typename(module)) end
  local given, order = merge_dicts(dicts)
  -- every parameter / buffer name, tied ones included, grouped by tensor
  local names, group_of = {}, {}
  for _, kind in ipairs({ "named_parameters", "named_buffers" }) do
    for _, e in ipairs(module[kind](module, { remove_duplicate = false })) do
      names[e[1]] = true
      local g = group_of[e[2]] or {}
      group_of[e[2]] = g
      g[#g + 1] = e[1]
      group_of[e[1]] = g
    end
  end
  local values = {}
  for k, v in pairs(given) do values[k] = v end
  if o.tie_weights then
    for _, k in ipairs(order) do
      local g = names[k] and group_of[k]
      if g and #g > 1 then
        local given_here = {}
        for _, n in ipairs(g) do
          if given[n] ~= nil then given_here[#given_here + 1] = n end
        end
        for _, n in ipairs(given_here) do
          if given[n] ~= given[given_here[1]] then
            fail("functional_call got multiple values for keys [%s], which are tied. Consider using tie_weights=False",
              quoted_sorted(given_here))
          end
        end
        for _, n in ipairs(g) do if values[n] == nil then values[n] = given[k] end end
      end
    end
  end
  if o.strict then
    local missing, unexpected = {}, {}
    for n in pairs(names) do if values[n] == nil then missing[#missing + 1] = n end end
    for n in pairs(values) do if not names[n] then unexpected[#unexpected + 1] = n end end
    local msgs = {}
    if #unexpected > 0 then msgs[#msgs + 1] = "Unexpected key(s): " .. quoted_sorted(unexpected) .. "." end
    if #missing > 0 then msgs[#msgs + 1] = "Missing key(s): " .. quoted_sorted(missing) .. "." end
    if #msgs > 0 then
      fail("Error(s) in reparametrizing for %s:\n\t%s", module:_get_name(), table.concat(msgs, "\n\t"))
    end
  end
  -- swap the values forward reads (the per-instance values tables), leaving the
  -- _parameters/_buffers registries alone; restored in reverse order, even on error
  local swapped = U.patches()
  local ok, err = pcall(function()
    local keys = {}
    for k in pairs(values) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = values[k]
      if v ~= nil and not is_tensor(v) then
        fail("functional_call: expected a Tensor for '%s', got %s", k, U.typename(v))
      end
      local path, leaf = split_name(k)
      local mod = module:get_submodule(path)
      swapped:put(getmetatable(mod).__index, leaf, v)
    end
  end)
  if not ok then swapped:undo(); error(err, 0) end
  local call_args
  if args == nil then call_args = table.pack()
  elseif type(args) == "table" and getmetatable(args) == nil then call_args = table.pack(table.unpack(args))
  else call_args = table.pack(args) end
  if kwargs ~= nil then call_args.n = call_args.n + 1; call_args[call_args.n] = kwargs end
  local r = table.pack(pcall(module, table.unpack(call_args, 1, call_args.n)))
  swapped:undo()
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- ---------------------------------------------------------------- grad transforms

-- how many grad-like transforms are running func now: an inner one records its gradients'
-- graphs for the outer ones (double backward)
local depth = 0
local function enter()
  if FWD.active() then FWD.norule("a function transform inside jvp") end
  depth = depth + 1
  return setmetatable({}, { __close = function() depth = depth - 1 end })
end
local function nested() return depth > 1 end

local function detach_unless(keep, t) return keep and t or t:detach() end

local function check_argnums(name, argnums, n)
  local list = type(argnums) == "table" and argnums or { argnums }
  if #list == 0 then fail("%s: argnums must be non-empty", name) end
  local out = {}
  for i, a in ipairs(list) do
    if math.type(a) ~= "integer" then
      fail("%s: argnums must be int or Tuple[int, ...], got: %s", name, U.typename(argnums))
    end
    if a < -n or a >= n then
      fail("Got argnums=%d, but only %d positional inputs", a, n)
    end
    out[i] = (a < 0 and a + n or a) + 1
  end
  return out, type(argnums) ~= "table"
end

-- args[i], which must be a tensor or a tree of them (the argument differentiated)
local function differentiated_arg(name, args, i)
  local a = args[i]
  if not is_tensor(a) and not is_node(a) then
    fail("%s: expected argument %d to be a Tensor or a table of Tensors, got %s", name, i - 1, U.typename(a))
  end
  return a
end

-- replaces args[i] (i in idx) by trees of detached requires-grad copies (keep: aliases on the graph
-- of those that require grad); returns the list of leaves
local function make_leaves(name, args, idx, keep)
  local leaves = {}
  for _, i in ipairs(idx) do
    args[i] = map_tree(differentiated_arg(name, args, i), function(x)
      if not x:is_floating_point() and not x:is_complex() then
        fail("%s: only Tensors of floating point and complex dtype can require gradients, got %s", name, tostring(x.dtype))
      end
      local l = keep and x.requires_grad and x:view_as(x) or x:detach():requires_grad_()
      leaves[#leaves + 1] = l
      return l
    end)
  end
  return leaves
end

-- gradients of outs (list of tensors) weighted by vs against leaves; zeros where unused
-- (create: differentiable themselves)
local function grads_of(outs, vs, leaves, retain, create)
  local os, gs = {}, {}
  for i, out in ipairs(outs) do
    if out.requires_grad then os[#os + 1] = out; gs[#gs + 1] = vs[i] end
  end
  local g = {}
  if #os > 0 and #leaves > 0 then
    g = torch.autograd.grad(os, leaves, gs, { retain_graph = retain or create, allow_unused = true, create_graph = create })
  end
  local m = {}
  for i, l in ipairs(leaves) do m[l] = g[i] ~= nil and detach_unless(create, g[i]) or torch.zeros_like(l):detach() end
  return m
end

local function detach_tree(v, keep) return map_tree(v, function(t) return detach_unless(keep, t) end) end

-- func's result with has_aux split off: output, aux
local function split_aux(name, has_aux, r)
  if not has_aux then return r[1] end
  if r.n >= 2 then return r[1], r[2] end
  local t = r[1]
  if is_node(t) and not OD.is(t) and #t == 2 then return t[1], t[2] end
  fail("%s: output of function f should be a tuple: (output, aux) if has_aux is True", name)
end

local function grad_spec(name, ...)
  return U.parse(name, { { "argnums", 0 }, { "has_aux", false } }, ...)
end

-- A grad transform inside batched vmaps sees several levels at once: its inputs become leaves
-- batched at a level set S (VB.full: [B_S[1], ..., B_S[n], ...], a batched input's own values,
-- the other levels of S expanded with stride 0), so that the gradient of the per-sample outputs'
-- sum gives every sample of every level of S its own gradient. S must hold every level an output
-- is batched at, which f can add through values it closes over (the NTK tutorial's
-- vmap(vmap(... vjp ... jvp)) closes over both vmaps' inputs): run_batched starts from the levels
-- of the arguments (and cotangents or tangents) and runs f again when an output has more.

-- replaces args[i] (i in idx) by trees of leaves batched at S (BatchedTensors over the real
-- leaves); returns the list of leaves (the real tensors)
local function batched_leaves(name, args, idx, create, S)
  local leaves = {}
  for _, i in ipairs(idx) do
    args[i] = map_tree(differentiated_arg(name, args, i), function(x)
      if not x:is_floating_point() then VB.norule("grad of a non-float tensor") end
      local u = VB.full(x, S)
      local l = create and u.requires_grad and u:view_as(u) or u:detach():requires_grad_()
      leaves[#leaves + 1] = l
      return VB.nest(l, S)
    end)
  end
  return leaves
end

-- an output of f as a real tensor [B_S..., ...]; nil for one not batched at all of S (it depends
-- on no leaf)
local function batched_output(t, S)
  if VB.at_levels(t, S) then return VB.real_of(t) end
  return nil
end

-- the level set of the tensors in the trees of list (and of the set start)
local function levels_in(list, start)
  local set = start or {}
  for _, v in ipairs(list) do map_tree(v, function(t) if VB.is(t) then VB.levels_of(t, set) end return t end) end
  return set
end

-- f on a copy of primals (packed) whose inputs idx are leaves batched at the levels of set and of
-- the primals, again on more levels while an output is batched at a level outside them (inside
-- enter()): args, leaves, S, out, aux
local function run_batched(name, f, has_aux, primals, idx, create, set)
  local all = {}
  for i = 1, primals.n do all[#all + 1] = primals[i] end
  set = levels_in(all, set)
  while true do
    local S = VB.sorted(set)
    local args = table.pack(table.unpack(primals, 1, primals.n))
    local leaves = batched_leaves(name, args, idx, create, S)
    local out, aux
    do
      local _g <close> = torch.enable_grad()
      out, aux = split_aux(name, has_aux, packed(f(table.unpack(args, 1, args.n))))
    end
    local n = #S
    levels_in({ out }, set)
    if #VB.sorted(set) == n then return args, leaves, S, out, aux end
  end
end

-- the gradient trees of the inputs idx (args[i], over leaves at S) from m (real leaf -> gradient)
local function grad_trees(args, idx, m, S)
  local trees = {}
  for k, i in ipairs(idx) do trees[k] = map_tree(args[i], function(l) return VB.nest(m[VB.real_of(l)], S) end) end
  return trees
end

-- the outputs of f batched at S (real) and their cotangents cs in full form at S
local function against_cotangents(outs, cs, S)
  local os, gs = {}, {}
  for i, y in ipairs(outs) do
    local yv = batched_output(y, S)
    if yv then os[#os + 1] = yv; gs[#gs + 1] = VB.full(cs[i], S) end
  end
  return os, gs
end

local function grad_and_value_batched(name, f, o, primals, idx, single)
  local _ <close> = enter()
  local create = nested()
  local args, leaves, S, out, aux = run_batched(name, f, o.has_aux, primals, idx, create)
  if not is_tensor(out) or out:dim() ~= 0 then VB.norule("grad of a non-scalar") end
  local ov = batched_output(out, S)
  local total = ov and ov:sum() or out
  local trees = grad_trees(args, idx, grads_of({ total }, { nil }, leaves, false, create), S)
  local g = single and trees[1] or trees
  if o.has_aux then return g, detach_unless(create, out), detach_tree(aux, create) end
  return g, detach_unless(create, out)
end

local function grad_and_value_impl(name, f, o, ...)
  local args = table.pack(...)
  local idx, single = check_argnums(name, o.argnums, args.n)
  if VB.active() then return grad_and_value_batched(name, f, o, args, idx, single) end
  local _ <close> = enter()
  local create = nested()
  local leaf_trees
  local leaves = make_leaves(name, args, idx, create)
  local out, aux
  do
    local _g <close> = torch.enable_grad()
    out, aux = split_aux(name, o.has_aux, packed(f(table.unpack(args, 1, args.n))))
  end
  if not is_tensor(out) then
    fail("%s: Expected f(*args) to return a Tensor, got %s", name, U.typename(out))
  end
  if out:dim() ~= 0 then
    fail("%s: Expected f(*args) to return a scalar Tensor, got tensor with %d dims. Maybe you wanted to use the vjp or jacrev APIs instead?", name, out:dim())
  end
  local m = grads_of({ out }, { nil }, leaves, false, create)
  leaf_trees = {}
  for k, i in ipairs(idx) do leaf_trees[k] = map_tree(args[i], function(l) return m[l] end) end
  local g = single and leaf_trees[1] or leaf_trees
  if o.has_aux then return g, detach_unless(create, out), detach_tree(aux, create) end
  return g, detach_unless(create, out)
end

-- grad(func, argnums=0, has_aux=false)(...) -> gradient(s) [, aux]
function func.grad(f, ...)
  local o = grad_spec("grad", ...)
  return function(...)
    local g, _, aux = grad_and_value_impl("grad_and_value(f)(*args)", f, o, ...)
    if o.has_aux then return g, aux end
    return g
  end
end

-- grad_and_value(func, argnums=0, has_aux=false)(...) -> gradient(s), value [, aux]
-- (PyTorch's (grad, (value, aux)) as three return values)
function func.grad_and_value(f, ...)
  local o = grad_spec("grad_and_value", ...)
  return function(...) return grad_and_value_impl("grad_and_value(f)(*args)", f, o, ...) end
end

local vjp_rerun -- (defined below)

-- a plain table's keys in a fixed order: numbers first, then strings, each sorted
local function sorted_keys(v)
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return keys
end

-- the tensors of an output tree in a fixed order (sorted keys for plain tables)
local function flatten(v, out)
  out = out or {}
  if is_tensor(v) then out[#out + 1] = v; return out end
  if OD.is(v) then
    for _, e in pairs(v) do flatten(e, out) end
  elseif is_node(v) then
    for _, k in ipairs(sorted_keys(v)) do flatten(v[k], out) end
  else
    fail("expected f to return a Tensor or a table of Tensors, got %s", U.typename(v))
  end
  return out
end

-- the output tree with its leaves (in flatten's order) replaced by vals
local function unflatten(v, vals)
  local i = 0
  local map = {}
  for _, t in ipairs(flatten(v)) do i = i + 1; map[t] = vals[i] end
  return map_tree(v, function(t) return map[t] end)
end

-- the leaves of tree v (tensors or not) in flatten's order
local function tree_leaves(v, out)
  out = out or {}
  if not is_node(v) then out[#out + 1] = v; return out end
  if OD.is(v) then
    for _, e in pairs(v) do tree_leaves(e, out) end
  else
    for _, k in ipairs(sorted_keys(v)) do tree_leaves(v[k], out) end
  end
  return out
end

-- a vjp_fn called inside batched vmaps with cotangents batched at levels its leaves are not (made
-- outside vmap, or in fewer levels): f runs again on leaves batched at those levels too, and one
-- backward of the batched outputs against the cotangents gives every sample its own product
function vjp_rerun(f, has_aux, primals, idx, cs)
  local args, out, leaves, create, S
  do
    local _ <close> = enter()
    create = nested()
    args, leaves, S, out = run_batched("vjp(f, *primals)", f, has_aux, primals, idx, create, levels_in(cs))
  end
  local os, gs = against_cotangents(flatten(out), cs, S)
  return grad_trees(args, idx, grads_of(os, gs, leaves, false, create), S)
end

-- vjp(func, ...primals, {has_aux=false}) -> output, vjp_fn [, aux]; vjp_fn(cotangents) returns
-- a list (PyTorch's tuple) with one gradient tree per primal
function func.vjp(f, ...)
  local args = table.pack(...)
  local has_aux = false
  local last = args[args.n]
  if args.n > 0 and type(last) == "table" and getmetatable(last) == nil and next(last) == "has_aux" and next(last, "has_aux") == nil then
    has_aux = last.has_aux
    args.n = args.n - 1
  end
  local idx = {}
  for i = 1, args.n do idx[i] = i end
  local primals = table.pack(table.unpack(args, 1, args.n))
  local out, aux, leaves, create, S -- S: inside a batched vmap, the levels of the per-sample vjps
  do
    local _ <close> = enter()
    create = nested()
    if VB.active() then
      args, leaves, S, out, aux = run_batched("vjp(f, *primals)", f, has_aux, primals, idx, create)
    else
      leaves = make_leaves("vjp", args, idx, create)
      local _g <close> = torch.enable_grad()
      out, aux = split_aux("vjp(f, *primals)", has_aux, packed(f(table.unpack(args, 1, args.n))))
    end
  end
  local made_at = {}
  for _, l in ipairs(S or {}) do made_at[l] = true end
  local outs = flatten(out)
  local function vjp_fn(cot)
    local cs = flatten(cot)
    if #cs ~= #outs then
      fail("Expected pytree structure of cotangents to be the same as pytree structure of outputs to the function. cotangents has %d tensors, outputs has %d", #cs, #outs)
    end
    for i, c in ipairs(cs) do
      if table.concat(c:size():totable(), ",") ~= table.concat(outs[i]:size():totable(), ",") then
        fail("Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.",
          i - 1, tostring(c:size()), i - 1, tostring(outs[i]:size()))
      end
    end
    -- cotangents batched at a level the vjp was not made at: f runs again at theirs too
    for l in pairs(levels_in(cs)) do
      if not made_at[l] then return vjp_rerun(f, has_aux, primals, idx, cs) end
    end
    if S then
      -- the batched outputs against their cotangents (batched, or the same for every sample)
      local os, gs = against_cotangents(outs, cs, S)
      return grad_trees(args, idx, grads_of(os, gs, leaves, true, create), S)
    end
    local m = grads_of(outs, cs, leaves, true, create)
    local res = {}
    for k, i in ipairs(idx) do res[k] = map_tree(args[i], function(l) return m[l] end) end
    return res
  end
  if has_aux then return detach_tree(out, create), vjp_fn, detach_tree(aux, create) end
  return detach_tree(out, create), vjp_fn
end

-- func run on differentiable copies of the argnums inputs: args, the argnums (1-based), whether
-- argnums is one int, the output tree, aux, the leaves, create (nested), the output tensors
local function run_for_jacobian(name, f, o, ...)
  local args = table.pack(...)
  local idx, single = check_argnums(name, o.argnums, args.n)
  local out, aux, leaves, create
  do
    local _ <close> = enter()
    create = nested()
    leaves = make_leaves(name, args, idx, create)
    local _g <close> = torch.enable_grad()
    out, aux = split_aux(name, o.has_aux, packed(f(table.unpack(args, 1, args.n))))
  end
  return args, idx, single, out, aux, leaves, create, flatten(out)
end

-- f as a function of its arguments idx alone (the others fixed at args): jacrev's vjp and
-- jacfwd's jvp take their primals in that order
local function of_differentiated(f, args, idx)
  return function(...)
    local a = table.pack(table.unpack(args, 1, args.n))
    for j, i in ipairs(idx) do a[i] = select(j, ...) end
    return f(table.unpack(a, 1, a.n))
  end
end

-- the Jacobians of shape out.shape .. in.shape, nested like the output, then like argnums / the
-- input trees [, aux]; mats[k][leaf] is output k's [out numel, leaf numel] matrix (or
-- [out numel, *leaf shape]: reshaped once, a view where the gradients' layout allows)
local function shaped_jacobians(o, args, idx, single, out, aux, create, outs, mats)
  local jacs = {}
  for k, y in ipairs(outs) do
    local per_arg = {}
    for a, i in ipairs(idx) do
      per_arg[a] = map_tree(args[i], function(l)
        local shape = y:size():totable()
        for _, s in ipairs(l:size():totable()) do shape[#shape + 1] = s end
        return mats[k][l]:reshape(shape)
      end)
    end
    jacs[k] = single and per_arg[1] or per_arg
  end
  local res = unflatten(out, jacs)
  if o.has_aux then return res, detach_tree(aux, create) end
  return res
end

-- the matrix of the rows (or columns, dim 1) in list, or an empty [m, n] one
local function stacked(list, dim, m, n, like)
  if #list > 0 then return torch.stack(list, dim) end
  return torch.zeros(m, n, { dtype = like.dtype, device = like.device })
end

-- jacrev as PyTorch's: vjp, then vjp_fn over the basis of all the outputs at a new vmap level
-- (f runs again batched at it: one backward gives every row of the Jacobian, of every sample
-- inside vmap; vmap loops over the basis, one backward a row, when a rule is missing)
local function jac_impl(name, f, o, ...)
  local args = table.pack(...)
  local idx, single = check_argnums(name, o.argnums, args.n)
  local call = {}
  for j, i in ipairs(idx) do call[j] = differentiated_arg(name, args, i) end
  local g = of_differentiated(f, args, idx)
  local n = #call
  if o.has_aux then call[n + 1] = { has_aux = true } end
  local out, vjp_fn, aux = func.vjp(g, table.unpack(call, 1, o.has_aux and n + 1 or n))
  local outs = flatten(out)
  local M = 0
  for _, y in ipairs(outs) do M = M + y:numel() end
  -- output k's cotangents: columns off .. off + m - 1 of the M x M identity, as [M, *shape]
  local cots, offs = {}, {}
  for k, y in ipairs(outs) do
    local s = y:size():totable()
    table.insert(s, 1, M)
    offs[k] = k == 1 and 0 or offs[k - 1] + outs[k - 1]:numel()
    cots[k] = torch.eye(M, { dtype = y.dtype, device = y.device }):narrow(1, offs[k], y:numel()):reshape(s)
  end
  local vmapped = o.chunk_size and func.vmap(vjp_fn, { chunk_size = o.chunk_size }) or func.vmap(vjp_fn)
  local grads = vmapped(unflatten(out, cots))
  local mats = {}
  for k, y in ipairs(outs) do
    mats[k] = {}
    for j, i in ipairs(idx) do
      local ls, gs = tree_leaves(args[i]), tree_leaves(grads[j])
      for e, l in ipairs(ls) do mats[k][l] = gs[e]:narrow(0, offs[k], y:numel()) end
    end
  end
  return shaped_jacobians(o, args, idx, single, out, aux, true, outs, mats)
end

-- jacrev(func, argnums=0, has_aux=false)(...) -> Jacobian(s) of shape out.shape .. in.shape,
-- nested like the output, then like argnums / the input trees
function func.jacrev(f, ...)
  local o = U.parse("jacrev", { { "argnums", 0 }, { "has_aux", false }, { "chunk_size" }, { "_preallocate_and_copy" } }, ...)
  return function(...) return jac_impl("jacrev", f, o, ...) end
end

-- ---------------------------------------------------------------- forward mode

-- the structure of tree v as a string (PyTorch's TreeSpec, simplified: * for a leaf, (...) for a
-- list, {k: ...} for a dict)
local function is_list(v) return is_node(v) and not OD.is(v) and #v == #sorted_keys(v) end
local function tree_spec(v)
  if not is_node(v) then return "*" end
  local parts = {}
  if OD.is(v) then
    for k, e in pairs(v) do parts[#parts + 1] = tostring(k) .. ": " .. tree_spec(e) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  for _, k in ipairs(sorted_keys(v)) do
    parts[#parts + 1] = (is_list(v) and "" or tostring(k) .. ": ") .. tree_spec(v[k])
  end
  if is_list(v) then return "(" .. table.concat(parts, ", ") .. (#parts == 1 and ",)" or ")") end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local jvp_str = "jvp(f, primals, tangents)"
local jvp_batched, jacfwd_batched -- (defined below)

local function only_tensors(list, argname)
  if #list == 0 then fail("%s: Expected %s to contain at least one Tensor.", jvp_str, argname) end
  for _, t in ipairs(list) do
    if not is_tensor(t) then fail("%s: Expected %s to only contain Tensors, got %s", jvp_str, argname, U.typename(t)) end
  end
end

-- a differentiable stand-in for primal x (kept on the outer graph when nested)
local function leaf_of(x, keep)
  return keep and x.requires_grad and x:view_as(x) or x:detach():requires_grad_()
end

-- func's output tensors (flattened), checked as jvp checks them
local function output_tensors(out)
  local list = tree_leaves(out)
  if #list == 0 or (#list == 1 and list[1] == nil) then
    fail("%s: Expected f to be a function that has non-empty output (got output = %s)", jvp_str, tree_spec(out))
  end
  for _, t in ipairs(list) do
    if not is_tensor(t) then fail("%s: expected f(*args) to return only tensors, got unsupported type %s", jvp_str, U.typename(t)) end
  end
  return flatten(out)
end

-- the outputs of f batched at the levels S as real tensors in a compact list, and
-- where each output is in it (nil for an unbatched one: it depends on no leaf)
local function batched_outputs(outs, S)
  local live, pos = {}, {}
  for k, y in ipairs(outs) do
    local yv = batched_output(y, S)
    if yv then live[#live + 1] = yv; pos[k] = #live end
  end
  return live, pos
end

-- tree v (primals) with its tensor leaves replaced by leaf(x), in tree_leaves' order
local function rebuild(v, leaf)
  if is_tensor(v) then return leaf(v) end
  if OD.is(v) then
    local out = OD.new()
    for key, e in pairs(v) do out:set(key, rebuild(e, leaf)) end
    return out
  end
  local out = {}
  for _, key in ipairs(sorted_keys(v)) do out[key] = rebuild(v[key], leaf) end
  return out
end

-- jvp by forward-mode AD: f once on dual tensors (jvp_forward.lua); output, jvp_out [, aux], or
-- nil when an op on f's path has no forward rule (func._forward_mode = false: always nil)
local function jvp_dual(f, o, primals, ts, create)
  if func._forward_mode == false then return nil end
  local k = 0
  local args = rebuild(primals, function(p)
    k = k + 1
    return FWD.dual(detach_unless(create, p), ts[k])
  end)
  local r = FWD.run(function()
    local _g <close> = create and torch.enable_grad() or torch.no_grad()
    local out, aux = split_aux(jvp_str, o.has_aux, packed(f(table.unpack(args, 1, #args))))
    local outs = output_tensors(out)
    local ps, tv = {}, {}
    for i, y in ipairs(outs) do
      ps[i], tv[i] = FWD.primal(y), FWD.tangent(y)
      if tv[i] == nil then
        if o.strict then
          fail("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is not allowed with strict=True.")
        end
        tv[i] = torch.zeros_like(ps[i])
      end
    end
    return unflatten(out, ps), unflatten(out, tv), map_tree(aux, FWD.primal)
  end)
  if r == nil then return nil end
  local out, res, aux = r[2], r[3], r[4]
  if o.has_aux then return detach_tree(out, create), res, detach_tree(aux, create) end
  return detach_tree(out, create), res
end

-- jvp inside batched vmaps: the primals as leaves, and the tangents, batched at the levels of the
-- primals, the tangents and the outputs (run_batched); the samples are independent, so one product
-- J t of the batched function gives every sample its own
function jvp_batched(f, o, primals, ts)
  if o.strict then VB.norule("jvp with strict=True") end
  local _ <close> = enter()
  local create = nested()
  local r = table.pack(jvp_dual(f, o, primals, ts, create))
  if r[1] ~= nil then return table.unpack(r, 1, r.n) end
  local ps = table.pack(table.unpack(primals))
  local idx = {}
  for i = 1, ps.n do idx[i] = i end
  local args, _, S, out, aux = run_batched(jvp_str, f, o.has_aux, ps, idx, create, levels_in(ts))
  -- the leaves in tree_leaves' order, the tangents' (batched_leaves walks pairs())
  local leaves = {}
  for i, l in ipairs(tree_leaves({ table.unpack(args, 1, args.n) })) do leaves[i] = VB.real_of(l) end
  local tv = {}
  for i, t in ipairs(ts) do tv[i] = VB.full(t, S) end
  local outs = output_tensors(out)
  local live, pos = batched_outputs(outs, S)
  local r = JVP.linear_map(jvp_str, live, leaves)(tv, create)
  local res = {}
  for k, y in ipairs(outs) do
    local v = pos[k] and r[pos[k]]
    res[k] = v ~= nil and VB.nest(v, S) or torch.zeros_like(y):detach()
  end
  if o.has_aux then return detach_tree(out, create), unflatten(out, res), detach_tree(aux, create) end
  return detach_tree(out, create), unflatten(out, res)
end

-- jvp(func, primals, tangents, {strict=false, has_aux=false}) -> output, jvp_out [, aux]: the
-- output of func(table.unpack(primals)) and J times tangents, computed by double backward
function func.jvp(f, primals, tangents, ...)
  local o = U.parse("jvp", { { "strict", false }, { "has_aux", false } }, ...)
  if not is_list(primals) then
    fail("%s: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).", jvp_str)
  end
  if tree_spec(primals) ~= tree_spec(tangents) then
    fail("%s: Expected primals and tangents to have the same python structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure %s and tangents with structure %s",
      jvp_str, tree_spec(primals), tree_spec(tangents))
  end
  local ps, ts = tree_leaves(primals), tree_leaves(tangents)
  only_tensors(ps, "primals")
  only_tensors(ts, "tangents")
  for i, p in ipairs(ps) do JVP.check_dual(p, ts[i]) end
  if VB.active() then return jvp_batched(f, o, primals, ts) end
  local _ <close> = enter()
  local create = nested()
  local r = table.pack(jvp_dual(f, o, primals, ts, create))
  if r[1] ~= nil then return table.unpack(r, 1, r.n) end
  local leaves, tangent_of = {}, {}
  local k = 0
  local args = rebuild(primals, function(p)
    k = k + 1
    local l = leaf_of(p, create)
    leaves[k], tangent_of[k] = l, ts[k]
    return l
  end)
  local out, aux
  do
    local _g <close> = torch.enable_grad()
    out, aux = split_aux(jvp_str, o.has_aux, packed(f(table.unpack(args, 1, #args))))
  end
  local outs = output_tensors(out)
  local res = JVP.linear_map(jvp_str, outs, leaves)(tangent_of, create)
  for i, y in ipairs(outs) do
    if res[i] == nil then
      if o.strict then
        fail("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is not allowed with strict=True.")
      end
      res[i] = torch.zeros_like(y):detach()
    end
  end
  if o.has_aux then return detach_tree(out, create), unflatten(out, res), detach_tree(aux, create) end
  return detach_tree(out, create), unflatten(out, res)
end

-- linearize(func, ...primals) -> output, jvp_fn: func runs once; jvp_fn(...tangents) gives J
-- times the tangents (one backward per call, through the graph kept from that run)
function func.linearize(f, ...)
  local primals = table.pack(...)
  local ps = tree_leaves({ table.unpack(primals, 1, primals.n) })
  local idx = {}
  for i = 1, primals.n do idx[i] = i end
  local args, leaves, out, create = { table.unpack(primals, 1, primals.n) }, nil, nil, nil
  do
    local _ <close> = enter()
    create = nested()
    leaves = make_leaves("linearize", args, idx, create)
    local _g <close> = torch.enable_grad()
    out = f(table.unpack(args, 1, primals.n))
  end
  -- make_leaves walks pairs(); tangents come in tree_leaves' order: pair them by position
  local leaf_at = tree_leaves(args)
  local outs = flatten(out)
  local apply = JVP.linear_map("linearize", outs, leaf_at)
  local spec = tree_spec({ table.unpack(primals, 1, primals.n) })
  local function jvp_fn(...)
    local tangents = { ... }
    local tspec = tree_spec(tangents)
    if tspec ~= spec then
      fail("Expected the tangents %s to have the same argspec as the primals %s", tspec, spec)
    end
    local ts = tree_leaves(tangents)
    for i, t in ipairs(ts) do
      local p = ps[i]
      for _, what in ipairs({ "shape", "device", "dtype" }) do
        local a, b = tostring(what == "shape" and t:size() or t[what]), tostring(what == "shape" and p:size() or p[what])
        if a ~= b then
          fail("tangent:%d with %s %s in flattened pytree doesn't match the %s %s of the corresponding primal.", i - 1, what, a, what, b)
        end
      end
    end
    local res = apply(ts, create)
    for i, y in ipairs(outs) do res[i] = res[i] or torch.zeros_like(y):detach() end
    return unflatten(out, res)
  end
  return detach_tree(out, create), jvp_fn
end

-- jacfwd inside batched vmaps (B samples in all at the levels run_batched finds): column j of every
-- sample's Jacobian from one product of the batched function with the basis vector e_j given to
-- every sample
function jacfwd_batched(f, o, ...)
  local args = table.pack(...)
  local idx, single = check_argnums("jacfwd", o.argnums, args.n)
  local out, aux, leaves, create, S
  do
    local _ <close> = enter()
    create = nested()
    args, leaves, S, out, aux = run_batched("jacfwd", f, o.has_aux, args, idx, create)
  end
  local B = VB.flat_size(S)
  local outs = flatten(out)
  local wrapper = {}
  for _, i in ipairs(idx) do map_tree(args[i], function(l) wrapper[VB.real_of(l)] = l; return l end) end
  local live, pos = batched_outputs(outs, S)
  local apply = JVP.linear_map("jacfwd", live, leaves)
  local mats = {}
  for k = 1, #outs do mats[k] = {} end
  for i, l in ipairs(leaves) do
    local n = l:numel() // B
    local cols = {}
    for k = 1, #outs do cols[k] = {} end
    for j = 0, n - 1 do
      local e = torch.zeros(n, { dtype = l.dtype, device = l.device })
      e[j] = 1
      local r = apply({ [i] = e:unsqueeze(0):expand(B, n):reshape(l:size()) }, create)
      for k, y in ipairs(outs) do
        local v = pos[k] and r[pos[k]]
        cols[k][j + 1] = v ~= nil and v:reshape(B, -1) or torch.zeros(B, y:numel(), { dtype = y.dtype, device = y.device })
      end
    end
    for k, y in ipairs(outs) do
      local mat = n > 0 and torch.stack(cols[k], 2) or torch.zeros(B, y:numel(), 0, { dtype = l.dtype, device = l.device })
      mats[k][wrapper[l]] = VB.nest(mat, S, true)
    end
  end
  return shaped_jacobians(o, args, idx, single, out, aux, create, outs, mats)
end

-- jacfwd by forward-mode AD: one jvp on dual tensors whose tangents are the basis vectors of all
-- the differentiated inputs, batched at a new vmap level (PyTorch's vmap of jvp); nil when an op
-- on f's path has no forward rule
local function jacfwd_dual(f, o, ...)
  if func._forward_mode == false then return nil end
  local args = table.pack(...)
  local idx, single = check_argnums("jacfwd", o.argnums, args.n)
  local _ <close> = enter()
  local create = nested()
  local primals, leaves, N = {}, {}, 0
  for j, i in ipairs(idx) do
    primals[j] = differentiated_arg("jacfwd", args, i)
    for _, l in ipairs(tree_leaves(primals[j])) do
      if not is_tensor(l) or not l:is_floating_point() then return nil end
      leaves[#leaves + 1] = l
      N = N + l:numel()
    end
  end
  if N == 0 then return nil end
  local g = of_differentiated(f, args, idx)
  require "vmap_rules"
  local r = VB.run(N, o.randomness, function(L)
    -- leaf k's tangents: columns off .. off + n - 1 of the N x N identity, as [N, *leaf shape]
    local ts, offs, off = {}, {}, 0
    for k, l in ipairs(leaves) do
      local n = l:numel()
      local e = torch.zeros(N, n, { dtype = l.dtype, device = l.device })
      e:narrow(0, off, n):copy_(torch.eye(n, { dtype = l.dtype, device = l.device }))
      local s = l:size():totable()
      table.insert(s, 1, N)
      ts[k], offs[k] = VB.wrap(e:view(s), L), off
      off = off + n
    end
    local res = table.pack(jvp_dual(g, { has_aux = o.has_aux }, primals, ts, create))
    if res[1] == nil then return nil end
    local out, tangents = res[1], flatten(res[2])
    local mats = {}
    for k, y in ipairs(flatten(out)) do
      local t = VB.at(tangents[k], L) or VB.batched(tangents[k], L)
      local rows = t:reshape(N, y:numel())
      mats[k] = {}
      for i, l in ipairs(leaves) do mats[k][l] = rows:narrow(0, offs[i], l:numel()):t() end
    end
    return out, mats, res[3]
  end)
  if not r[1] then error(r[2], 0) end
  if r[2] == nil then return nil end
  local out, mats, aux = r[2], r[3], r[4]
  return table.pack(shaped_jacobians(o, args, idx, single, out, aux, create, flatten(out), mats))
end

-- jacfwd(func, argnums=0, has_aux=false, {randomness=}): the Jacobian, shaped and nested as
-- jacrev's: by forward-mode AD when it can (jacfwd_dual), else column by column, J e_j for every
-- basis vector e_j of the inputs by double backward
local function jacfwd_impl(f, o, ...)
  local dual = jacfwd_dual(f, o, ...)
  if dual then return table.unpack(dual, 1, dual.n) end
  if VB.active() then return jacfwd_batched(f, o, ...) end
  local args, idx, single, out, aux, leaves, create, outs = run_for_jacobian("jacfwd", f, o, ...)
  local apply = JVP.linear_map("jacfwd", outs, leaves)
  local mats = {}
  for k = 1, #outs do mats[k] = {} end
  for i, l in ipairs(leaves) do
    local cols = {}
    for k = 1, #outs do cols[k] = {} end
    local n = l:numel()
    for j = 0, n - 1 do
      local e = torch.zeros(n, { dtype = l.dtype, device = l.device })
      e[j] = 1
      local r = apply({ [i] = e:view(l:size()) }, create)
      for k, y in ipairs(outs) do
        cols[k][j + 1] = r[k] ~= nil and r[k]:reshape(-1) or torch.zeros(y:numel(), { dtype = y.dtype, device = y.device })
      end
    end
    for k, y in ipairs(outs) do mats[k][l] = stacked(cols[k], 1, y:numel(), 0, y) end
  end
  return shaped_jacobians(o, args, idx, single, out, aux, create, outs, mats)
end

function func.jacfwd(f, ...)
  local o = U.parse("jacfwd", { { "argnums", 0 }, { "has_aux", false }, { "randomness", "error" } }, ...)
  return function(...) return jacfwd_impl(f, o, ...) end
end

-- hessian(func, argnums=0): jacfwd(jacrev(func, argnums), argnums)
function func.hessian(f, ...)
  local o = U.parse("hessian", { { "argnums", 0 } }, ...)
  return func.jacfwd(func.jacrev(f, o.argnums), o.argnums)
end

-- ---------------------------------------------------------------- vmap

local function dims_repr(v)
  if v == nil or v == false then return "None" end
  if type(v) ~= "table" then return tostring(v) end
  local n = 0
  for k in pairs(v) do if math.type(k) == "integer" and k > n then n = k end end
  local parts = {}
  for i = 1, n do parts[i] = dims_repr(v[i]) end
  return "(" .. table.concat(parts, ", ") .. (n == 1 and ",)" or ")")
end

-- the in_dims of child k (nil stays nil: no `and/or` here)
local function sub_dims(d, k)
  if type(d) == "table" then return d[k] end
  return d
end

-- f run once on BatchedTensors (vmap_batched.lua): its outputs (a list, .n) stacked at out_dims,
-- or nil when f used something without a batching rule (or failed): the caller then loops, with
-- the random generator put back where it was
func._vmap_batching = true
func._vmap_last = nil  -- "batched" or "loop: <reason>", for tests
local function batched_call(f, args, in_dims, out_dims, randomness, B)
  require "vmap_rules"
  local rng = randomness ~= "error" and torch.get_rng_state() or nil
  local r = VB.run(B, randomness, function(L)
    local function wrap_in(a, d)
      if d == nil or d == false then return a end
      if is_tensor(a) then
        local nd = a:dim()
        if d < 0 then d = d + nd end
        return VB.wrap(d == 0 and a or a:movedim(d, 0), L)
      end
      if not is_node(a) then return a end
      local out = OD.is(a) and OD.new() or {}
      for k, e in pairs(a) do
        local v = wrap_in(e, sub_dims(d, k))
        if OD.is(out) then out:set(k, v) else out[k] = v end
      end
      return out
    end
    local wa = {}
    for i = 1, args.n do wa[i] = wrap_in(args[i], sub_dims(in_dims, i)) end
    local res = packed(f(table.unpack(wa, 1, args.n)))
    local outs = { n = res.n }
    for k = 1, res.n do
      local od = out_dims
      if type(out_dims) == "table" then od = out_dims[k] end
      if od == nil or od == false then
        map_tree(res[k], function(t)
          if VB.is(t) and t._l == L then VB.norule("out_dims=None for a batched output") end
          return t
        end)
        outs[k] = res[k]
      else
        if type(od) == "table" then od = od[1] end
        flatten(res[k])  -- raises for a non-tensor leaf, as the loop does
        outs[k] = map_tree(res[k], function(t)
          local v = (VB.is(t) and t._l == L) and t._v or VB.batched(t, L):contiguous() -- not an alias of t
          if od ~= 0 then v = v:movedim(0, od) end
          return v
        end)
      end
    end
    return outs
  end)
  if r[1] then
    func._vmap_last = "batched"
    return r[2]
  end
  func._vmap_last = "loop: " .. tostring(r[2])
  if rng then torch.set_rng_state(rng) end
  return nil
end

-- chunk_size: samples [s, s + n) of every mapped input, batched_call on each such chunk, the
-- outputs concatenated at their out_dims (an unmapped output: the first chunk's); nil (the
-- generator put back) when a chunk falls back to the loop
local function chunked_call(f, args, in_dims, out_dims, randomness, B, n)
  local rng = randomness ~= "error" and torch.get_rng_state() or nil
  local function part(a, d, s, len)
    if d == nil or d == false then return a end
    if is_tensor(a) then return a:narrow(d, s, len) end
    if not is_node(a) then return a end
    local out = OD.is(a) and OD.new() or {}
    for k, e in pairs(a) do
      local v = part(e, sub_dims(d, k), s, len)
      if OD.is(out) then out:set(k, v) else out[k] = v end
    end
    return out
  end
  local chunks = {}
  for s = 0, B - 1, n do
    local len = math.min(n, B - s)
    local ca = { n = args.n }
    for i = 1, args.n do ca[i] = part(args[i], sub_dims(in_dims, i), s, len) end
    local outs = batched_call(f, ca, in_dims, out_dims, randomness, len)
    if not outs then
      if rng then torch.set_rng_state(rng) end
      return nil
    end
    chunks[#chunks + 1] = outs
  end
  local outs = { n = chunks[1].n }
  for k = 1, outs.n do
    local od = out_dims
    if type(out_dims) == "table" then od = out_dims[k] end
    if type(od) == "table" then od = od[1] end
    if od == nil or od == false then
      outs[k] = chunks[1][k]
    else
      local per = {}
      for c, ch in ipairs(chunks) do per[c] = flatten(ch[k]) end
      local cat = {}
      for j = 1, #per[1] do
        local col = {}
        for c = 1, #chunks do col[c] = per[c][j] end
        cat[j] = torch.cat(col, od)
      end
      outs[k] = unflatten(chunks[1][k], cat)
    end
  end
  return outs
end

-- vmap(func, in_dims=0, out_dims=0, randomness="error", {chunk_size=nil})
function func.vmap(f, ...)
  if FWD.active() then FWD.norule("vmap inside jvp") end
  -- parsed by hand: in_dims may be a list with holes ({nil, 0}), which U.parse would take for
  -- a keyword table, and an explicit nil in_dims must not become the default
  local pos = table.pack(...)
  local kw = {}
  local last = pos[pos.n]
  if pos.n > 0 and type(last) == "table" and getmetatable(last) == nil and next(last) ~= nil then
    local all_str = true
    for k in pairs(last) do if type(k) ~= "string" then all_str = false end end
    if all_str then kw = last; pos.n = pos.n - 1 end
  end
  local names = { "in_dims", "out_dims", "randomness", "chunk_size" }
  local o = { in_dims = 0, out_dims = 0, randomness = "error" }
  if pos.n > #names then fail("bad argument #%d to 'vmap' (vmap takes at most 4 positional arguments, got %d)", #names + 2, pos.n) end
  for i = 1, pos.n do o[names[i]] = pos[i] end
  for k, v in pairs(kw) do
    local known = false
    for i, n in ipairs(names) do
      if n == k then
        if i <= pos.n then fail("bad argument to 'vmap' (got multiple values for argument '%s')", k) end
        known = true
      end
    end
    if not known then fail("bad argument to 'vmap' (unknown keyword '%s')", k) end
    o[k] = v
  end
  if o.in_dims == false then o.in_dims = nil end
  local r = o.randomness
  if r ~= "error" and r ~= "different" and r ~= "same" then
    fail("Only allowed values for randomness are 'error', 'different', or 'same'. Got %s", tostring(r))
  end
  if o.chunk_size ~= nil and (math.type(o.chunk_size) ~= "integer" or o.chunk_size < 1) then
    fail("vmap: chunk_size should be None or greater than 0. (got %s)", tostring(o.chunk_size))
  end
  local in_dims, out_dims, chunk_size = o.in_dims, o.out_dims, o.chunk_size
  return function(...)
    local args = table.pack(...)
    local where = "vmap(f, in_dims=" .. dims_repr(in_dims) .. ", ...)(<inputs>)"
    if type(in_dims) == "table" then
      for k in pairs(in_dims) do
        if math.type(k) ~= "integer" or k < 1 or k > args.n then
          fail("%s: in_dims is not compatible with the structure of `inputs`. in_dims has structure %s but inputs has %d arguments.",
            where, dims_repr(in_dims), args.n)
        end
      end
    elseif in_dims ~= nil and math.type(in_dims) ~= "integer" then
      fail("vmap(f, in_dims=%s, ...): expected `in_dims` to be int or a (potentially nested) tuple matching the structure of inputs, got: %s.",
        tostring(in_dims), U.typename(in_dims))
    end
    -- the batch size of every mapped tensor
    local sizes = {}
    local function scan(a, d)
      if d == nil or d == false then return end
      if is_tensor(a) then
        if math.type(d) ~= "integer" then
          fail("%s: in_dim for a Tensor must be an integer or None, got %s", where, U.typename(d))
        end
        local nd = a:dim()
        if d < -nd or d >= nd then
          fail("%s: Got in_dim=%d for some input, but that input is a Tensor of dimensionality %d so expected in_dim to satisfy -%d <= in_dim < %d.",
            where, d, nd, nd, nd)
        end
        sizes[#sizes + 1] = a:size(d < 0 and d + nd or d)
      elseif is_node(a) then
        for k, e in pairs(a) do scan(e, sub_dims(d, k)) end
      elseif a ~= nil then
        fail("%s: Got in_dim=%s for an input but the input is of type %s. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim",
          where, dims_repr(d), U.typename(a))
      end
    end
    for i = 1, args.n do scan(args[i], sub_dims(in_dims, i)) end
    if #sizes == 0 then
      fail("%s: at least one input must be mapped over (got in_dims=%s)", where, dims_repr(in_dims))
    end
    for _, s in ipairs(sizes) do
      if s ~= sizes[1] then
        fail("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [%s] for the mapped dimension",
          table.concat(sizes, ", "))
      end
    end
    local B = sizes[1]
    -- sample b of a (mapped at d, a dim or a tree of dims)
    local function slice(a, d, b)
      if d == nil or d == false then return a end
      if is_tensor(a) then return a:select(d, b) end
      if not is_node(a) then return a end
      local out = OD.is(a) and OD.new() or {}
      for k, e in pairs(a) do
        local v = slice(e, sub_dims(d, k), b)
        if OD.is(out) then out:set(k, v) else out[k] = v end
      end
      return out
    end
    if B == 0 then fail("vmap: the mapped dimension has size 0, which this loop-based vmap does not support") end
    if func._vmap_batching then
      local outs
      if chunk_size and chunk_size < B then
        outs = chunked_call(f, args, in_dims, out_dims, r, B, chunk_size)
      else
        outs = batched_call(f, args, in_dims, out_dims, r, B)
      end
      if outs then return table.unpack(outs, 1, outs.n) end
    end
    local rng = r == "same" and torch.get_rng_state() or nil
    local results = {}
    for b = 0, B - 1 do
      if rng then torch.set_rng_state(rng) end
      local sl = {}
      for i = 1, args.n do sl[i] = slice(args[i], sub_dims(in_dims, i), b) end
      results[b + 1] = packed(f(table.unpack(sl, 1, args.n)))
    end
    -- stack output k (a tree) over the batch at its out_dim
    local nout = results[1].n
    local outs = {}
    for k = 1, nout do
      local od = out_dims
      if type(out_dims) == "table" then od = out_dims[k] end
      if od == nil or od == false then
        outs[k] = results[1][k]
      else
        local per = {}
        for b = 1, B do per[b] = flatten(results[b][k]) end
        local stacked = {}
        for j = 1, #per[1] do
          local col = {}
          for b = 1, B do col[b] = per[b][j] end
          stacked[j] = torch.stack(col, type(od) == "table" and od[1] or od)
        end
        outs[k] = unflatten(results[1][k], stacked)
      end
    end
    return table.unpack(outs, 1, nout)
  end
end

-- ---------------------------------------------------------------- installation

torch.func = func
torch.vmap = func.vmap
torch.nn.utils = torch.nn.utils or {}
torch.nn.utils.stateless = torch.nn.utils.stateless or {}
torch.nn.utils.stateless.functional_call = func.functional_call

return {}
