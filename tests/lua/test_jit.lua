-- torch_jit.lua: script/trace hand back what they were given (trace runs it once on the example
-- inputs), the decorators leave functions alone, save/load say what to use instead.
local T = ...

T.test("script and trace return the module, trace runs it once", function()
  local m = nn.Linear(3, 2)
  T.check(rawequal(torch.jit.script(m), m), "script(module) is the module")
  local calls = 0
  local f = function(x) calls = calls + 1; return x * 2 end
  T.check(rawequal(torch.jit.script(f), f), "script(function) is the function")
  T.check(rawequal(torch.jit.trace(f, torch.ones(2)), f) and calls == 1, "trace runs the function once on its example")
  local g = function(a, b) calls = calls + 1; return a + b end
  torch.jit.trace(g, { torch.ones(2), torch.ones(2) }, { check_trace = false })
  T.eq(calls, 2, "a list of example inputs is unpacked")
  T.check(rawequal(torch.jit.trace(m, torch.randn(4, 3)), m), "trace(module) is the module")
  T.raises(function() torch.jit.trace(m, torch.randn(4, 5)) end, "~got input of shape [4, 5]", "a shape error surfaces at trace time")
  T.raises(function() torch.jit.trace(f) end, "trace: missing required argument 'example_inputs'", "trace without inputs")
  T.raises(function() torch.jit.trace(f, torch.ones(1), { strictt = true }) end, "~unknown keyword 'strictt'", "an unknown option")
  local seen = {}
  local Net = nn.Module:extend("JitNet")
  function Net:__init() nn.Module.__init(self); self.fc = nn.Linear(2, 2) end
  function Net:forward(x) seen.forward = true; return self.fc(x) end
  function Net:embed(x) seen.embed = true; return x end
  local net = Net()
  T.check(rawequal(torch.jit.trace_module(net, { forward = torch.ones(1, 2), embed = { torch.ones(3) } }), net) and seen.forward and seen.embed,
    "trace_module runs every method given")
end)

T.test("decorators, predicates, save and load", function()
  local f = function(x) return x end
  T.check(rawequal(torch.jit.ignore(f), f) and rawequal(torch.jit.unused(f), f) and rawequal(torch.jit.export(f), f), "decorators keep f")
  T.check(rawequal(torch.jit.ignore({ drop = true })(f), f), "ignore(drop=True) is a decorator")
  T.eq({ torch.jit.is_scripting(), torch.jit.is_tracing() }, { false, false }, "never scripting or tracing")
  T.eq(torch.jit.annotate("List[int]", 5), 5, "annotate gives the value")
  T.raises(function() torch.jit.save(nn.Linear(1, 1), "/tmp/x.pt") end,
    "torch.jit.save: TorchScript is not part of nnrepl; save the weights with torch.save(model:state_dict(), path)", "save")
  T.raises(function() torch.jit.load("/tmp/x.pt") end, "~torch.jit.load: TorchScript is not part of nnrepl", "load")
end)

-- PyTorch: onednn_fusion_enabled() is False until enable_onednn_fusion(True) (torch/jit/__init__.py)
T.test("enable_onednn_fusion / onednn_fusion_enabled", function()
  T.eq(torch.jit.onednn_fusion_enabled(), false, "off by default")
  torch.jit.enable_onednn_fusion(true)
  T.eq(torch.jit.onednn_fusion_enabled(), true, "switched on")
  torch.jit.enable_onednn_fusion(false)
  T.eq(torch.jit.onednn_fusion_enabled(), false, "and off")
  T.raises(function() torch.jit.enable_onednn_fusion(1) end, "enable_onednn_fusion(): argument 'enabled' must be bool, not int")
end)
