-- torch.save(model) / torch.load of whole modules whose class name is shared by several classes
-- (torchvision's resnet and video BasicBlock, the three InvertedResidual, ...; here two Block
-- classes of this file) and of modules holding a class as an attribute (resnet's _norm_layer):
-- the loaded model must compute what the saved one did, with the same classes.
local T = ...
local models = require("torchvision").models
local path = os.tmpname()

local function roundtrip(m)
  torch.save(m, path)
  return torch.load(path, { weights_only = false })
end

-- two classes of one name: the second, defined later, must not replace the first on load
local Block = nn.Module:extend("Block")
function Block:__init() self.lin = nn.Linear(3, 3) end
function Block:forward(x) return self.lin(x) end
local FirstNet = nn.Module:extend("FirstNet")
function FirstNet:__init() self.block = Block() end
function FirstNet:forward(x) return self.block(x) end
local OtherBlock = nn.Module:extend("Block")
function OtherBlock:__init() self.lin = nn.Linear(3, 3) end
function OtherBlock:forward(x) return self.lin(x) * 100 end

-- a module holding a class, as torchvision's ResNet holds norm_layer
local Holder = nn.Module:extend("Holder")
function Holder:__init(norm_layer) self.norm_layer = norm_layer; self.norm = norm_layer(4) end
function Holder:forward(x) return self.norm(x) end

local function run(device)
  T.test("whole-module save of same-name classes " .. device, function()
    torch.manual_seed(0)
    local net = FirstNet():to(device)
    local x = torch.tensor({ { 1, 2, 3 } }, { dtype = torch.float, device = device })
    local back = roundtrip(net)
    T.check(rawequal(back.block.__class, Block), "the first Block class comes back")
    T.near(back(x):cpu():tolist(), net(x):cpu():tolist(), 0, "same output")
    local other = roundtrip(OtherBlock():to(device))
    T.check(rawequal(other.__class, OtherBlock), "the second Block class comes back")

    local h = Holder(nn.BatchNorm1d):to(device)
    local hb = roundtrip(h)
    T.check(rawequal(hb.norm_layer, nn.BatchNorm1d), "class attribute restored")
    T.check(rawequal(hb.norm.__class, nn.BatchNorm1d), "its module")

    for _, name in ipairs({ "resnet18", "mobilenet_v2", "shufflenet_v2_x0_5" }) do
      local m = models[name]():to(device)
      m:eval()
      local y = torch.rand(1, 3, 64, 64, { device = device })
      local mb = roundtrip(m)
      T.eq(mb.training, false, name .. " stays in eval mode")
      local d = (m(y) - mb(y)):abs():max():item()
      T.eq(d, 0.0, name .. ": the reloaded model's output (max difference)")
    end
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 11) end

T.test("a saved class attribute under weights_only", function()
  torch.save(Holder(nn.BatchNorm1d), path)
  T.raises(function() return torch.load(path) end, "~Unsupported global: Holder was not an allowed global", "weights_only")
  local ok = pcall(function()
    local _ <close> = torch.serialization.safe_globals({ Holder, nn.BatchNorm1d })
    local h = torch.load(path)
    assert(rawequal(h.norm_layer, nn.BatchNorm1d))
  end)
  T.check(ok, "allowed with safe_globals")
end)
os.remove(path)
