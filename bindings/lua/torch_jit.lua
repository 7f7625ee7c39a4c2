-- torch.jit: TorchScript is not part of nnrepl, so a ported script's script/trace calls hand back
-- what they were given (as torch.compile does) and the decorators leave functions as they are;
-- torch.jit.save / load say what to use instead.
local torch = require "torch"
local U = require "nn_util"

local jit = {}
torch.jit = jit

-- torch.jit.script(obj, {optimize=, example_inputs=}): obj itself
function jit.script(obj, ...)
  U.parse("script", { { "optimize" }, { "_frames_up", 0 }, { "_rcb" }, { "example_inputs" } }, ...)
  if obj == nil then U.error("script: expected a module or a function") end
  return obj
end

-- torch.jit.trace(fn_or_module, example_inputs, {check_trace=, strict=, ...}): runs it once on the
-- example inputs, as tracing does (a shape error surfaces here), and returns it
function jit.trace(fn, example_inputs, ...)
  U.parse("trace", { { "optimize" }, { "check_trace", true }, { "check_inputs" }, { "check_tolerance", 1e-5 },
    { "strict", true }, { "_force_outplace", false }, { "_module_class" }, { "_compilation_unit" },
    { "example_kwarg_inputs" }, { "_store_inputs", true } }, ...)
  if fn == nil then U.error("trace: expected a module or a function") end
  if example_inputs == nil then U.error("trace: missing required argument 'example_inputs'") end
  local args = (torch.is_tensor(example_inputs) or type(example_inputs) ~= "table") and { example_inputs } or example_inputs
  fn(table.unpack(args))
  return fn
end

-- torch.jit.trace_module(module, {method = example_inputs, ...}): runs each method once, returns module
function jit.trace_module(mod, inputs, ...)
  if type(inputs) ~= "table" then U.error("trace_module: inputs must be a table of method name to example inputs") end
  for name, ex in pairs(inputs) do
    local args = torch.is_tensor(ex) and { ex } or ex
    mod[name](mod, table.unpack(args))
  end
  return mod
end

-- decorators: @torch.jit.ignore, @torch.jit.ignore(drop=True), @torch.jit.unused, @torch.jit.export
local function decorator(name)
  return function(f, ...)
    if type(f) == "function" then return f end
    U.parse(name, { { "drop", false } }, f, ...)
    return function(g) return g end
  end
end
jit.ignore, jit.unused, jit.export = decorator("ignore"), decorator("unused"), decorator("export")

function jit.is_scripting() return false end
function jit.is_tracing() return false end
function jit.annotate(_, value) return value end
function jit.wait(fut) return fut end

-- oneDNN Graph fusion (the tuning guide's one-liner): a flag that is kept and read back; there is
-- no JIT fuser for it to switch, as in a PyTorch built without oneDNN Graph
local onednn_fusion = false
function jit.enable_onednn_fusion(enabled)
  if type(enabled) ~= "boolean" then U.errorf("enable_onednn_fusion(): argument 'enabled' must be bool, not %s", U.typename(enabled)) end
  onednn_fusion = enabled
end
function jit.onednn_fusion_enabled() return onednn_fusion end

local function no_torchscript(name, instead)
  return function() U.error(string.format("torch.jit.%s: TorchScript is not part of nnrepl; %s", name, instead)) end
end
jit.save = no_torchscript("save", "save the weights with torch.save(model:state_dict(), path)")
jit.load = no_torchscript("load", "build the model in Lua and load_state_dict(torch.load(path))")
jit.freeze = function(m) return m end
jit.optimize_for_inference = function(m) return m end

return jit
