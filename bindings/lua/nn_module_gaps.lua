-- nn.Module's remaining methods and attributes (set_submodule, share_memory, compile,
-- call_super_init, dump_patches, xpu / ipu / mtia), nn.Buffer (PyTorch 2.4+: assigning one
-- registers a buffer) and the deprecated nn.Container.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"

local M = {}

Module.call_super_init = false
Module.dump_patches = false

-- model:set_submodule("features.0", m, strict=false): replace (or, not strict, add) the module at that path
function Module:set_submodule(...)
  local o = U.parse("set_submodule", { { "target", U.REQUIRED }, { "module", U.REQUIRED }, { "strict", false } }, ...)
  if o.target == "" then U.error("Cannot set the submodule without a target name!") end
  if not Module.is_module(o.module) then U.errorf("`module` is not an nn.Module, found %s", U.typename(o.module)) end
  local atoms = {}
  for item in tostring(o.target):gmatch("[^.]+") do atoms[#atoms + 1] = item end
  local mod = self
  for i = 1, #atoms - 1 do
    local item = atoms[i]
    if mod[item] == nil then U.errorf("%s has no attribute `%s`", mod:_get_name(), item) end
    mod = mod[item]
    if not Module.is_module(mod) then U.errorf("`%s` is not an nn.Module", item) end
  end
  local last = atoms[#atoms]
  local old = mod[last]
  if o.strict and old == nil then U.errorf("%s has no attribute `%s`", mod:_get_name(), last) end
  if old ~= nil and not Module.is_module(old) then U.errorf("`%s` is not an nn.Module", last) end
  mod[last] = o.module
end

-- every tensor is already shared with DataLoader workers (threads of this process): see Tensor:share_memory_
function Module:share_memory() return self:_apply(function(t) return t:share_memory_() end) end

-- torch.compile's in-place form: the module runs as before (nnrepl has no compiler)
function Module:compile(...)
  U.parse("compile", { { "fullgraph", false }, { "dynamic" }, { "backend", "inductor" }, { "mode" }, { "options" },
    { "disable", false } }, ...)
end

for _, dev in ipairs({ "xpu", "ipu", "mtia" }) do
  Module[dev] = function()
    U.errorf("Module.%s: nnrepl has no %s devices; use :cpu() or :cuda()", dev, dev:upper())
  end
end

-- nn.Buffer(data=torch.empty(0), persistent=true): a tensor that registers itself as a buffer when
-- assigned to a module's attribute (m.stats = nn.Buffer(torch.zeros(3)))
local Buffer = setmetatable({}, {
  __call = function(_, ...)
    local o = U.parse("Buffer", { { "data" }, { "persistent", true } }, ...)
    local data = o.data
    if data == nil then data = torch.empty(0) end
    if not torch.is_tensor(data) then U.errorf("bad argument #1 to 'Buffer' (tensor expected, got %s)", U.typename(data)) end
    local b = data:detach()
    if data.requires_grad then b:requires_grad_(true) end
    Module._buffer_marks[b] = o.persistent and true or false
    return b
  end,
  __tostring = function() return "<class 'torch.nn.parameter.Buffer'>" end,
})
M.Buffer = Buffer

-- nn.Container(name = module, ...): deprecated; a Module holding the modules given
local Container = Module:extend("Container")
M.Container = Container
function Container:__init(modules, ...)
  if select("#", ...) > 0 or modules ~= nil and not U.is_opts(modules) then -- Python's Container(**kwargs)
    U.errorf("Container.__init__() takes 1 positional argument but %d were given", 2 + select("#", ...))
  end
  U.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. Subclass that instead.")
  local names = {}
  for name in pairs(modules or {}) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do self:add_module(name, modules[name]) end
end

return M
