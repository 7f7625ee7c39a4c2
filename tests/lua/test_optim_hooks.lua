-- Optimizer hooks (step, state_dict, load_state_dict; per optimizer and global) and
-- torch.utils.hooks.RemovableHandle.
local T = ...
local optim = torch.optim

local function leaf(v, dev)
  return torch.tensor(v, { dtype = torch.float64, device = dev }):requires_grad_()
end

local function run(dev)
  T.test("step pre/post hooks order, args and removal on " .. dev, function()
    local w = leaf({ 1, 2 }, dev)
    local opt = optim.SGD({ w }, { lr = 0.5 })
    local log = {}
    local g1 = optim.optimizer.register_optimizer_step_pre_hook(function(o, args) log[#log + 1] = "gpre"; T.check(o == opt and args[1] == opt) end)
    local h1 = opt:register_step_pre_hook(function(o, args, kwargs)
      log[#log + 1] = "pre"
      T.eq(args.n, 1, "args hold the optimizer alone")
      T.eq(next(kwargs), nil)
    end)
    local h2 = opt:register_step_post_hook(function(o) log[#log + 1] = "post:" .. w:detach():cpu():tolist()[1] end)
    local g2 = optim.optimizer.register_optimizer_step_post_hook(function() log[#log + 1] = "gpost" end)
    w.grad = torch.tensor({ 2.0, 4.0 }, { dtype = torch.float64, device = dev })
    opt:step()
    T.eq(log, { "gpre", "pre", "post:0.0", "gpost" }, "global pre, pre, step, post, global post")
    T.eq(w:detach():cpu():tolist(), { 0.0, 0.0 })
    h1:remove(); h2:remove(); g1:remove(); g2:remove()
    log = {}
    opt:step()
    T.eq(log, {}, "removed hooks do not run")
    T.check(h2.id > h1.id, "handle ids count up")
  end)

  T.test("a step pre hook replaces the arguments on " .. dev, function()
    local w = leaf({ 3 }, dev)
    local opt = optim.SGD({ w }, { lr = 1 })
    local calls = 0
    local closure = function() calls = calls + 1; return 42 end
    local h = opt:register_step_pre_hook(function(o, args, kwargs) return { o, closure, n = 2 }, kwargs end)
    w.grad = torch.tensor({ 1.0 }, { dtype = torch.float64, device = dev })
    T.eq(opt:step(), 42, "the closure the hook put in ran and its loss came back")
    T.eq(calls, 1)
    h:remove()
    h = opt:register_step_pre_hook(function() return 5 end)
    T.raises(function() opt:step() end, "~must return nil or (new_args, new_kwargs)")
    h:remove()
  end)

  T.test("every optimizer class runs the step hooks on " .. dev, function()
    for _, name in ipairs({ "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS" }) do
      local w = leaf({ 1, -2 }, dev)
      local opt = optim[name]({ w })
      local n = 0
      opt:register_step_pre_hook(function() n = n + 1 end)
      opt:register_step_post_hook(function() n = n + 10 end)
      local closure = function()
        opt:zero_grad()
        local l = (w * w):sum()
        l:backward()
        return l
      end
      opt:step(closure)
      T.eq(n, 11, name)
    end
    -- a class written in Lua whose step calls its base class's step runs the hooks once
    local Mine = optim.SGD:extend("MySGD")
    local base_step = optim.SGD.step
    function Mine:step(...) return base_step(self, ...) end
    local w = leaf({ 1 }, dev)
    local opt = Mine({ w }, { lr = 0.1 })
    local n = 0
    opt:register_step_pre_hook(function() n = n + 1 end)
    w.grad = torch.ones_like(w)
    opt:step()
    T.eq(n, 1, "a subclass")
    T.near(w:item(), 0.9, 1e-12)
  end)

  T.test("state_dict and load_state_dict hooks on " .. dev, function()
    local w = leaf({ 1, 2 }, dev)
    local opt = optim.Adam({ w }, { lr = 0.1 })
    local log = {}
    opt:register_state_dict_pre_hook(function(o) log[#log + 1] = "pre" end)
    opt:register_state_dict_post_hook(function(o, sd) log[#log + 1] = "post1"; sd.extra = 1 end)
    opt:register_state_dict_post_hook(function(o, sd) log[#log + 1] = "post0"; T.eq(sd.extra, nil, "prepended runs first") end, { prepend = true })
    local h = opt:register_state_dict_post_hook(function(o, sd) return { state = sd.state, param_groups = sd.param_groups, replaced = true } end)
    local sd = opt:state_dict()
    T.eq(log, { "pre", "post0", "post1" })
    T.eq(sd.replaced, true, "a post hook's return replaces the state dict")
    h:remove()
    T.eq(opt:state_dict().replaced, nil)
    sd = opt:state_dict()
    local before = sd.param_groups[1].lr
    log = {}
    opt:register_load_state_dict_pre_hook(function(o, d)
      log[#log + 1] = "lpre"
      local g = { lr = 0.25 }
      for k, v in pairs(d.param_groups[1]) do if k ~= "lr" then g[k] = v end end
      d.param_groups = { g } -- on the shallow copy: the caller's dict keeps its groups
    end)
    opt:register_load_state_dict_post_hook(function(o) log[#log + 1] = "lpost:" .. o.param_groups[1].lr end)
    opt:register_load_state_dict_pre_hook(function(o, d) log[#log + 1] = "lpre0" end, true)
    opt:load_state_dict(sd)
    T.eq(log, { "lpre0", "lpre", "lpost:0.25" })
    T.eq(sd.param_groups[1].lr, before, "the caller's state dict is left alone")
    local r = opt:register_load_state_dict_pre_hook(function(o, d) return { state = {}, param_groups = { { lr = 0.5, params = { 0 } } } } end)
    opt:load_state_dict(sd)
    T.eq(opt.param_groups[1].lr, 0.5, "a pre hook's return replaces the state dict")
    r:remove()
    T.raises(function() opt:register_state_dict_pre_hook(function() end, { prepnd = true }) end, "~unknown keyword 'prepnd'")
    T.raises(function() opt:register_step_pre_hook(3) end, "a hook must be a function, not int")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 4) end

T.test("RemovableHandle", function()
  local RH = torch.utils.hooks.RemovableHandle
  local d, extra = require("nn_util").OrderedDict.new(), {}
  local h = RH(d)
  d[h.id] = "hook"
  extra[h.id] = "x"
  local h2 = RH(d, { extra_dict = extra })
  T.eq(h2.id, h.id + 1)
  d[h2.id] = "hook2"
  extra[h2.id] = "y"
  h2:remove()
  T.eq(d:keys(), { h.id })
  T.eq(extra[h2.id], nil, "removed from extra_dict")
  do
    local _ <close> = h
  end
  T.eq(#d, 0, "<close> removes it")
  h:remove() -- twice is fine
  T.raises(function() RH(d, { bad = 1 }) end, "~unknown keyword 'bad'")
end)
