-- PyTorch recipe "Tips for Loading an nn.Module from a Checkpoint"
-- (recipes_source/recipes/module_load_state_dict_tips.py) in Lua: torch.load(mmap=True), the
-- torch.device("meta") context manager and load_state_dict(assign=True).
--
--   nnrepl scripts/tutorials/recipes/module_load_state_dict_tips.lua
--
-- Differences from the original:
-- * `with torch.device('meta'):` is `local _ <close> = torch.device("meta"):__enter__()`.
-- * mmap = true is accepted; nnrepl reads the file into memory either way.
-- * SomeModule's forward calls its ModuleList as the recipe does (never run there either).
-- * The recipe prints nothing; (extra) the last lines print where meta_m's and m's weights are
--   and check that both equal the checkpoint.
local SomeModule = nn.Module:extend("SomeModule")
function SomeModule:__init()
  local l = {}
  for i = 1, 10 do l[i] = nn.Linear(1, 1) end
  self.linears = nn.ModuleList(l)
end

function SomeModule:forward(x)
  return self.linears(x)
end

local m = SomeModule()
torch.save(m:state_dict(), "checkpoint.pth")
local state_dict = torch.load("checkpoint.pth", { mmap = true })
local meta_m
do
  local _ <close> = torch.device("meta"):__enter__()
  meta_m = SomeModule()
end
meta_m:load_state_dict(state_dict, { assign = true })

-- Taking a step back, let us inspect the following more vanilla code snippet
-- that does not use any of the features listed above
state_dict = torch.load("checkpoint.pth")
m = SomeModule()
m:load_state_dict(state_dict)

state_dict = torch.load("checkpoint.pth")

state_dict = torch.load("checkpoint.pth", { mmap = true })

-- Next, we consider the creation of the module.
m = SomeModule()

do
  local _ <close> = torch.device("meta"):__enter__()
  meta_m = SomeModule()
end
print(string.format("(extra) before loading: meta_m's linears.0.weight on %s, m's on %s", meta_m.linears[0].weight.device,
  m.linears[0].weight.device))

m:load_state_dict(state_dict)

meta_m:load_state_dict(state_dict, { assign = true })

-- (extra) both hold the checkpoint now
local function max_diff(mod)
  local d = 0
  for k, v in pairs(state_dict) do d = math.max(d, (mod:state_dict()[k] - v):abs():max():item()) end
  return d
end
print(string.format("(extra) after loading: meta_m's on %s (requires_grad=%s), max difference %g; m's max difference %g",
  meta_m.linears[0].weight.device, meta_m.linears[0].weight.requires_grad, max_diff(meta_m), max_diff(m)))
