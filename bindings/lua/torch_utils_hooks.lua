-- torch.utils.hooks.RemovableHandle: what the register_*_hook functions return. It holds a
-- hook's id in an OrderedDict id -> hook (and optionally more dicts, extra_dict, that hold the
-- same id); handle:remove() drops it from all of them. `local h <close> = ...` removes it at
-- the end of the block (Python's `with handle:`). Ids count 0, 1, ... as PyTorch's.
local torch = require "torch"
local U = require "nn_util"

torch.utils = torch.utils or {}
local hooks = torch.utils.hooks or {}
torch.utils.hooks = hooks

local RemovableHandle = { __name = "RemovableHandle" }
RemovableHandle.__index = RemovableHandle
hooks.RemovableHandle = RemovableHandle
RemovableHandle.next_id = 0

local function weak_list(dicts)
  return setmetatable(dicts, { __mode = "v" }) -- the handle does not keep the dicts alive
end

-- RemovableHandle(hooks_dict, {extra_dict = dict or list of dicts})
setmetatable(RemovableHandle, { __call = function(cls, hooks_dict, ...)
  local o = U.parse("RemovableHandle", { { "extra_dict" } }, ...)
  if not U.OrderedDict.is(hooks_dict) and type(hooks_dict) ~= "table" then
    U.errorf("RemovableHandle: hooks_dict must be a table (an OrderedDict), not %s", U.typename(hooks_dict))
  end
  local extra = o.extra_dict
  if extra ~= nil and (U.OrderedDict.is(extra) or getmetatable(extra) ~= nil or extra[1] == nil) then extra = { extra } end
  local h = setmetatable({ id = cls.next_id, _dicts = weak_list({ hooks_dict, table.unpack(extra or {}) }) }, cls)
  cls.next_id = cls.next_id + 1
  return h
end })

function RemovableHandle:remove()
  for _, d in pairs(self._dicts) do
    if U.OrderedDict.is(d) then d:remove(self.id) else d[self.id] = nil end
  end
end
RemovableHandle.__close = RemovableHandle.remove

function RemovableHandle:__tostring() return "<torch.utils.hooks.RemovableHandle object, id " .. self.id .. ">" end

-- Registers hook in the OrderedDict d and returns its handle; prepend puts it first.
function hooks._register(d, hook, prepend, extra_dict)
  if type(hook) ~= "function" and not (getmetatable(hook) and getmetatable(hook).__call) then
    U.errorf("a hook must be a function, not %s", U.typename(hook))
  end
  local h = RemovableHandle(d, { extra_dict = extra_dict })
  if prepend then
    local rest = d:items()
    for _, kv in ipairs(rest) do d:remove(kv[1]) end
    d:set(h.id, hook)
    for _, kv in ipairs(rest) do d:set(kv[1], kv[2]) end
  else
    d:set(h.id, hook)
  end
  return h
end

return hooks
