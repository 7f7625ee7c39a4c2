-- Module extra state (get_extra_state / set_extra_state), state dict and load hooks,
-- to_empty and type, against PyTorch's documented behaviour.
local T = ...

local Counter = nn.Module:extend("Counter")
function Counter:__init() self.lin = nn.Linear(2, 2); self.steps = 0 end
function Counter:get_extra_state() return { steps = self.steps } end
function Counter:set_extra_state(state) self.steps = state.steps end

T.test("extra state", function()
  local a = Counter()
  a.steps = 7
  local net = nn.Sequential(a)
  local sd = net:state_dict()
  T.eq(sd:keys(), { "0._extra_state", "0.lin.weight", "0.lin.bias" }, "with the module's own entries, before its children's")
  T.eq(sd["0._extra_state"].steps, 7, "the value")
  local b = nn.Sequential(Counter())
  b:load_state_dict(sd)
  T.eq(b[0].steps, 7, "set_extra_state on load")
  local plain = nn.Sequential(nn.Linear(2, 2))
  T.raises(function() plain:load_state_dict(sd) end, "~Unexpected key(s) in state_dict: \"0.lin.weight\"", "a module without it")
  local r = nn.Sequential(Counter()):load_state_dict({ ["0.lin.weight"] = sd["0.lin.weight"], ["0.lin.bias"] = sd["0.lin.bias"] }, false)
  T.eq(r.missing_keys, { "0._extra_state" }, "missing extra state reported")
  T.raises(function() nn.Linear(1, 1):get_extra_state() end, "~should never be called")
end)

T.test("state dict and load hooks", function()
  local m = nn.Linear(3, 2)
  local seen = {}
  local h1 = m:register_state_dict_pre_hook(function(mod, prefix, keep_vars) seen[#seen + 1] = { "pre", prefix, keep_vars } end)
  m:register_state_dict_post_hook(function(mod, sd, prefix) sd[prefix .. "note"] = torch.tensor(1.0) end)
  local sd = nn.Sequential(m):state_dict()
  T.eq(seen, { { "pre", "0.", false } }, "pre hook with the prefix")
  T.check(sd["0.note"] ~= nil, "post hook adds to the state dict")
  h1.remove()
  nn.Sequential(m):state_dict()
  T.eq(#seen, 1, "removed")
  -- load: a pre hook renames an old key, a post hook forgives an unexpected one
  local n = nn.Linear(3, 2)
  n:register_load_state_dict_pre_hook(function(mod, state, prefix)
    if state[prefix .. "w"] ~= nil then
      state[prefix .. "weight"] = state[prefix .. "w"]
      state[prefix .. "w"] = nil
    end
  end)
  local calls = 0
  n:register_load_state_dict_post_hook(function(mod, keys)
    calls = calls + 1
    for i = #keys.unexpected_keys, 1, -1 do
      if keys.unexpected_keys[i]:find("note$") then table.remove(keys.unexpected_keys, i) end
    end
  end)
  local old = nn.Sequential(n)
  local w = torch.arange(6, { dtype = torch.float32 }):view(2, 3)
  old:load_state_dict({ ["0.w"] = w, ["0.bias"] = torch.zeros(2), ["0.note"] = torch.tensor(1.0) })
  T.eq(n.weight:tolist(), w:tolist(), "the renamed key loaded")
  T.eq(calls, 1, "post hook ran once")
end)

T.test("to_empty and type", function()
  local m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
  local p = m[0].weight
  m:to_empty({ device = "cpu" })
  T.check(rawequal(m[0].weight, p), "the same Parameter")
  T.eq(m[0].weight.shape:totable(), { 3, 2 }, "shape kept")
  m:type(torch.float64)
  T.eq(m[0].weight.dtype, torch.float64, "type casts parameters")
  T.eq(m[1].num_batches_tracked.dtype, torch.float64, "and integer buffers, as PyTorch's")
  T.raises(function() m:type("x") end, "type: expected a torch.dtype, got str")
end)
