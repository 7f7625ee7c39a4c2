-- nn.utils.prune: which entries and channels each method prunes, against sorts and norms
-- done in plain Lua; masks combined over repeated pruning; forward and gradients through the
-- mask; remove, global_unstructured, custom_from_mask, state_dict and errors.
local T = ...
local prune = nn.utils.prune

local function flat(t) return t:reshape(-1):tolist() end

-- the 0-based flat positions of the k smallest |values|, ascending
local function smallest(values, k)
  local order = {}
  for i = 1, #values do order[i] = i end
  table.sort(order, function(a, b) return math.abs(values[a]) < math.abs(values[b]) end)
  local out = {}
  for j = 1, k do out[j] = order[j] - 1 end
  table.sort(out)
  return out
end

-- the 0-based flat positions of a mask's zeros (after offset), ascending
local function zeros_of(mask, offset, out)
  out = out or {}
  for i, v in ipairs(flat(mask)) do if v == 0 then out[#out + 1] = i - 1 + (offset or 0) end end
  return out
end

T.test("l1_unstructured, twice", function()
  torch.manual_seed(0)
  local m = nn.Linear(5, 4)
  local w0 = flat(m.weight)
  prune.l1_unstructured(m, "weight", 0.3) -- round(0.3 * 20) = 6
  T.eq(zeros_of(m.weight_mask), smallest(w0, 6), "the 6 smallest |w| pruned")
  T.near(flat(m.weight), flat(m.weight_orig * m.weight_mask), 0, "weight = orig * mask")
  local names = {}
  for _, e in ipairs(m:named_parameters()) do names[#names + 1] = e[1] end
  T.eq(names, { "bias", "weight_orig" }, "parameters")
  T.check(m:state_dict()["weight_mask"] ~= nil, "the mask is a buffer in the state dict")
  T.check(prune.is_pruned(nn.Sequential(m)), "is_pruned")
  -- forward uses the masked weight; the gradient reaches weight_orig only where kept
  local x = torch.randn(3, 5)
  local y = m(x)
  T.near(y:tolist(), (x:matmul((m.weight_orig * m.weight_mask):t()) + m.bias):tolist(), 1e-6, "forward")
  y:sum():backward()
  local g = flat(m.weight_orig.grad)
  local masked_ok = true
  for i, v in ipairs(flat(m.weight_mask)) do
    if v == 0 and g[i] ~= 0 then masked_ok = false end
  end
  T.check(masked_ok, "no gradient at pruned entries")
  -- again: 2 more among the 14 left, the next smallest
  prune.l1_unstructured(m, "weight", 2)
  T.eq(zeros_of(m.weight_mask), smallest(w0, 8), "8 smallest after the second pass")
  -- an orig change shows in the next forward (the hook recomputes)
  torch.no_grad(function() m.weight_orig:fill_(1) end)
  m(x)
  T.eq(flat(m.weight), flat(m.weight_mask), "recomputed before forward")
end)

T.test("ln_structured and random methods", function()
  torch.manual_seed(1)
  local m = nn.Linear(3, 4)
  local rows = m.weight:tolist()
  prune.ln_structured(m, "weight", { amount = 0.5, n = 2, dim = 0 })
  local norms, order = {}, {}
  for r, row in ipairs(rows) do
    local s = 0
    for _, v in ipairs(row) do s = s + v * v end
    norms[r], order[r] = math.sqrt(s), r
  end
  table.sort(order, function(a, b) return norms[a] < norms[b] end)
  local mask = m.weight_mask:tolist()
  for rank, r in ipairs(order) do
    local want = rank <= 2 and 0.0 or 1.0
    T.eq(mask[r], { want, want, want }, "row " .. (r - 1) .. " (norm rank " .. rank .. ")")
  end
  prune.ln_structured(m, "weight", 1, 2, 0) -- one more row among the two left: the smaller
  mask = m.weight_mask:tolist()
  T.eq(mask[order[3]], { 0.0, 0.0, 0.0 }, "the third smallest row next")
  T.eq(mask[order[4]], { 1.0, 1.0, 1.0 }, "the largest row kept")
  -- random: exactly the count asked for
  local r = nn.Linear(6, 5)
  prune.random_unstructured(r, "weight", 0.5) -- round(15.0)
  T.eq(r.weight_mask:eq(0):sum():item(), 15, "random_unstructured count")
  T.raises(function() prune.random_structured(r, "bias", 2, 0) end,
    "Structured pruning can only be applied to multidimensional tensors. Found tensor of shape torch.Size([5]) with 1 dims")
  T.check(r.bias_orig == nil and r.bias_mask == nil, "a failed pruning leaves the parameter as it was")
  local c = nn.Linear(6, 5)
  prune.random_structured(c, "weight", 0.5, -1) -- columns: round(3.0)
  local dead = c.weight_mask:sum(0):eq(0):sum():item()
  T.eq(dead, 3, "three whole columns")
  T.eq(c.weight_mask:eq(0):sum():item(), 15, "and nothing else")
  -- Python's round: half to even
  local h = nn.Linear(5, 1)
  prune.l1_unstructured(h, "weight", 0.5) -- round(2.5) = 2
  T.eq(h.weight_mask:eq(0):sum():item(), 2, "round half to even")
  prune.identity(h, "bias")
  T.eq(flat(h.bias_mask), { 1.0 }, "identity")
end)

T.test("global_unstructured, custom_from_mask, remove", function()
  torch.manual_seed(2)
  local a, b = nn.Linear(4, 3), nn.Linear(3, 2)
  local all = {}
  for _, v in ipairs(flat(a.weight)) do all[#all + 1] = v end
  for _, v in ipairs(flat(b.weight)) do all[#all + 1] = v end
  prune.global_unstructured({ { a, "weight" }, { b, "weight" } }, prune.l1_unstructured, { amount = 0.25 })
  local got = zeros_of(b.weight_mask, 12, zeros_of(a.weight_mask))
  T.eq(got, smallest(all, 4), "the smallest quarter of both (18 entries: round(4.5) = 4)")
  local m = nn.Linear(2, 2)
  local mask = torch.tensor({ { 1.0, 0.0 }, { 0.0, 1.0 } })
  prune.custom_from_mask(m, "weight", mask)
  T.eq(m.weight:tolist(), (m.weight_orig * mask):tolist(), "custom mask")
  local orig = m.weight_orig
  prune.remove(m, "weight")
  T.check(rawequal(m.weight, orig), "the same Parameter object after remove")
  T.eq(m.weight:tolist()[1][2], 0.0, "pruned values kept zero")
  T.eq(m.weight_orig, nil, "no weight_orig")
  T.eq(m.weight_mask, nil, "no weight_mask")
  T.check(not prune.is_pruned(m), "not pruned after remove")
  T.raises(function() prune.remove(m, "weight") end,
    "Parameter 'weight' of module Linear has to be pruned before pruning can be removed")
  T.raises(function() prune.l1_unstructured(m, "weight", 1.5) end,
    "amount=1.5 should either be a float in the range [0, 1] or a non-negative integer")
  T.raises(function() prune.l1_unstructured(m, "weight", 5) end,
    "amount=5 should be smaller than the number of parameters to prune=4")
  T.raises(function() prune.l1_unstructured(m, "nothing", 1) end, "~has to be a parameter to be pruned")
  T.raises(function() prune.global_unstructured({ { m, "bias" } }, { pruning_method = prune.RandomStructured, amount = 1 }) end,
    "~Only \"unstructured\" PRUNING_TYPE supported")
end)
