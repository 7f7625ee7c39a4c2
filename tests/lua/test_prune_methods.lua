-- nn.utils.prune's classes: BasePruningMethod subclasses, PruningContainer's mask combination,
-- the hook objects in _forward_pre_hooks, against masks worked out by hand.
local T = ...
local prune = nn.utils.prune

local function run(device)
  local function lin(w, b)
    local m = nn.Linear(#w[1], #w):to(device)
    torch.no_grad(function()
      m.weight:copy_(torch.tensor(w))
      m.bias:copy_(torch.tensor(b))
    end)
    return m
  end
  -- every other entry of what is still kept (the tutorial's FooBarPruningMethod)
  local Every = prune.BasePruningMethod:extend("Every")
  Every.PRUNING_TYPE = "unstructured"
  function Every.compute_mask(_, _, default_mask)
    local mask = default_mask:clone()
    mask:flatten()["::2"] = 0
    return mask
  end

  T.test("custom method, alone then after l1 (" .. device .. ")", function()
    local m = lin({ { 1, -5, 3 }, { 0.5, 4, -2 } }, { 1, 2 })
    local method = Every.apply(m, "weight")
    T.eq(m.weight_mask:tolist(), { { 0.0, 1.0, 0.0 }, { 1.0, 0.0, 1.0 } }, "entries 0, 2, 4 pruned")
    T.eq(m.weight:tolist(), { { 0.0, -5.0, 0.0 }, { 0.5, 0.0, -2.0 } }, "weight = orig * mask")
    T.eq(tostring(method):match("^<__main__%.Every object at 0x%x+>$") ~= nil, true, "a user method prints as __main__'s")
    -- bias: l1 drops |1| (the smaller), then Every acts on the one left: index 0 of {2} -> pruned
    prune.l1_unstructured(m, "bias", 1)
    Every.apply(m, "bias")
    T.eq(m.bias_mask:tolist(), { 0.0, 0.0 }, "every other of the kept entries")
    -- weight again with l1 amount 1 among the kept {-5, 0.5, -2}: 0.5 goes
    prune.l1_unstructured(m, "weight", 1)
    T.eq(m.weight_mask:tolist(), { { 0.0, 1.0, 0.0 }, { 0.0, 0.0, 1.0 } }, "l1 among the kept")
  end)

  T.test("PruningContainer, hooks and remove (" .. device .. ")", function()
    local m = lin({ { 3, 1 }, { -1, 2 }, { 0.1, 0.2 } }, { 0, 0, 0 })
    prune.ln_structured(m, "weight", { amount = 1, n = 1, dim = 0 }) -- L1 row norms 4, 3, 0.3: row 2 goes
    T.eq(m.weight_mask:tolist(), { { 1.0, 1.0 }, { 1.0, 1.0 }, { 0.0, 0.0 } }, "row 2")
    prune.l1_unstructured(m, "bias", 2)
    prune.ln_structured(m, "weight", { amount = 1, n = 2, dim = 0 }) -- among rows 0, 1: L2 3.16, 2.24: row 1
    T.eq(m.weight_mask:tolist(), { { 1.0, 1.0 }, { 0.0, 0.0 }, { 0.0, 0.0 } }, "row 1 next")
    prune.ln_structured(m, "weight", { amount = 1, n = 2, dim = 1 }) -- columns of the kept rows: {3}, {1}: col 1
    T.eq(m.weight_mask:tolist(), { { 1.0, 0.0 }, { 0.0, 0.0 }, { 0.0, 0.0 } }, "then column 1")
    local hooks = m._forward_pre_hooks
    T.eq(#hooks, 2, "one hook a parameter")
    local values = hooks:values()
    T.eq(values[1]._tensor_name, "bias", "bias's hook first (weight's was put back last)")
    local c = values[2]
    T.check(getmetatable(c) == prune.PruningContainer, "weight's hook is a container")
    T.eq(#c, 3, "three methods in it")
    T.eq(tostring(c[1]):match("^<torch%.nn%.utils%.prune%.LnStructured object at"), "<torch.nn.utils.prune.LnStructured object at",
      "a built-in method prints as PyTorch's")
    local keys = hooks:keys()
    T.check(keys[1] < keys[2], "ids grow")
    T.check(tostring(hooks):match("^OrderedDict%({%d+: <torch%.nn%.utils%.prune%.L1Unstructured object at 0x%x+>, %d+: <") ~= nil,
      "OrderedDict print")
    T.raises(function() c:add_pruning_method(prune.Identity()) end,
      "~Can only add pruning methods acting on the parameter named 'weight'")
    T.raises(function() c:add_pruning_method(42) end, "~int is not a BasePruningMethod subclass")
    -- prune() on a plain tensor, and remove through the method
    local t = torch.tensor({ 4.0, -1.0, 2.0, -3.0 }, { device = device })
    T.eq(prune.L1Unstructured(0.5):prune(t):tolist(), { 4.0, 0.0, 0.0, -3.0 }, "prune(t): round(2.0) smallest go")
    T.eq(prune.L1Unstructured(1):prune(t, { importance_scores = torch.tensor({ 1.0, 2.0, 3.0, 0.0 }, { device = device }) }):tolist(),
      { 4.0, -1.0, 2.0, 0.0 }, "importance_scores decide")
    prune.remove(m, "weight")
    T.eq(m.weight:tolist(), { { 3.0, 0.0 }, { 0.0, 0.0 }, { 0.0, 0.0 } }, "permanent")
    T.eq(#m._forward_pre_hooks, 1, "bias's hook left")
    T.check(prune.is_pruned(m), "bias still pruned")
  end)

  T.test("global_unstructured with a class, and errors (" .. device .. ")", function()
    local a, b = lin({ { 1, -6 } }, { 0 }), lin({ { 3, 0.5 }, { -2, 5 } }, { 0, 0 })
    prune.global_unstructured({ { a, "weight" }, { b, "weight" } }, { pruning_method = prune.L1Unstructured, amount = 0.5 })
    T.eq(a.weight_mask:tolist(), { { 0.0, 1.0 } }, "1 goes from a") -- the 3 smallest of |1,6,3,.5,2,5|: .5, 1, 2
    T.eq(b.weight_mask:tolist(), { { 1.0, 0.0 }, { 0.0, 1.0 } }, "0.5 and -2 from b")
    -- a method of PRUNING_TYPE kind (without dim), applied to an already pruned weight
    local function apply_kind(kind)
      local Cls = prune.BasePruningMethod:extend("Cls")
      Cls.PRUNING_TYPE = kind
      function Cls.compute_mask(_, _, d) return d end
      local m = lin({ { 1, 2 } }, { 0 })
      prune.identity(m, "weight")
      return function() Cls.apply(m, "weight") end
    end
    T.raises(apply_kind("sideways"), "Unrecognized PRUNING_TYPE sideways")
    T.raises(apply_kind("structured"), "~need to have the attribute `dim` defined")
    T.raises(function() prune.L1Unstructured(-1) end, "~amount=-1 should either be a float in the range [0, 1]")
    T.raises(function() prune.global_unstructured({ { a, "weight" } }, { amount = 1 }) end,
      "~missing required argument: 'pruning_method'")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("CUDA: no device") end
