-- torch.save(model, f) / torch.load(f) of whole modules, torch.serialization's allow-list,
-- RNNBase:flatten_parameters.
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local FX = dofile(here .. "fixture_dir.lua")("ser_modules")

local Tied = nn.Module:extend("SerTied")
function Tied:__init(kind)
  self.emb = nn.Embedding(7, 4)
  self.rnn = nn[kind](4, 4, 2)
  self.dec = nn.Linear(4, 7)
  self.dec.weight = self.emb.weight
  self.kind, self.sizes = kind, { 4, 4 }
  self:register_buffer("steps", torch.tensor({ 3 }))
  self:register_buffer("scratch", torch.zeros(2), false)
  self.absent = nil
end
function Tied:forward(x, h)
  local o, h2 = self.rnn(self.emb(x), h)
  return self.dec(o), h2
end

local function same_values(a, b) return (a - b):abs():max():item() == 0 end

local function run(device)
  T.test("rnn model round trip " .. device, function()
    torch.manual_seed(0)
    local m = Tied("LSTM"):to(device)
    m:eval()
    local path = FX.dir .. "/tied_" .. device .. ".pt"
    torch.save(m, path)
    local m2 = torch.load(path, { weights_only = false })
    T.eq(m2.__name, "SerTied")
    T.check(m2:isinstance(Tied), "instance of the class")
    T.eq(m2.kind, "LSTM"); T.eq(m2.sizes, { 4, 4 })
    T.eq(m2.training, false, "training flag kept")
    T.eq(m2.rnn.training, false, "child training flag kept")
    T.check(rawequal(m2.dec.weight, m2.emb.weight), "tied weights come back shared")
    T.check(nn.is_parameter(m2.rnn.weight_ih_l0), "parameters come back as Parameters")
    T.check(m2.rnn.weight_ih_l0.requires_grad, "requires_grad")
    T.eq(m2.rnn.weight_ih_l0.device.type, device)
    local keys, keys2 = {}, {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    for k in pairs(m2:state_dict()) do keys2[#keys2 + 1] = k end
    T.eq(keys2, keys, "state_dict keys and order")
    T.eq(#m2:parameters(), #m:parameters())
    T.eq(m2:state_dict().steps:tolist(), { 3 })
    T.check(m2:state_dict().scratch == nil and m2.scratch ~= nil, "non-persistent buffer stays non-persistent")
    local x = torch.tensor({ { 1, 2 }, { 3, 6 } }):to(device)
    T.check(same_values(m(x), m2(x)), "same outputs")
    m2.rnn:flatten_parameters()
    T.check(same_values(m(x), m2(x)), "flatten_parameters changes nothing")
    -- the loaded model trains on its own: the tie holds through a step
    local out = m2(x)
    out:sum():backward()
    T.check(m2.emb.weight.grad ~= nil, "gradient reaches the tied weight")
  end)

  T.test("transformer encoder round trip " .. device, function()
    torch.manual_seed(0)
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8, dropout = 0 }), 2):to(device)
    local path = FX.dir .. "/enc_" .. device .. ".pt"
    torch.save(enc, path)
    local allow = { nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.MultiheadAttention, nn.Linear, nn.Dropout,
      nn.LayerNorm, nn.ModuleList, F.relu }
    local e2
    do
      local _ <close> = torch.serialization.safe_globals(allow)
      e2 = torch.load(path)
    end
    T.check(rawequal(e2.layers[1].activation, F.relu), "function attribute by name")
    T.check(not rawequal(e2.layers[0], e2.layers[1]), "layers stay distinct")
    local s = torch.randn(3, 2, 4):to(device)
    local mask = nn.Transformer.generate_square_subsequent_mask(3):to(device)
    T.check(same_values(enc(s, { mask = mask }), e2(s, { mask = mask })), "same outputs")
    -- the allow-list is gone once the context closed
    T.raises(function() torch.load(path) end, "~Unsupported global: TransformerEncoder was not an allowed global")
    torch.serialization.add_safe_globals(allow)
    T.check(torch.load(path) ~= nil, "add_safe_globals allows")
    T.check(#torch.serialization.get_safe_globals() >= #allow)
    torch.serialization.clear_safe_globals()
    T.raises(function() torch.load(path) end, "~Unsupported global")
  end)

  T.test("map_location " .. device, function()
    local m = nn.Linear(2, 3):to(device)
    local path = FX.dir .. "/lin_" .. device .. ".pt"
    torch.save(m, path)
    local m2 = torch.load(path, { map_location = "cpu", weights_only = false })
    T.eq(m2.weight.device.type, "cpu")
    T.eq(m2.weight:tolist(), m.weight:cpu():tolist())
  end)
end

run("cpu")

T.test("errors", function()
  local m = Tied("GRU")
  T.raises(function() torch.load(FX.dir .. "/nothing.pt") end, "~torch.load")
  local h = m:register_forward_hook(function() end)
  T.raises(function() torch.save(m, FX.dir .. "/hooked.pt") end,
    "~torch.save: cannot save '' (a SerTied): it has _forward_hooks")
  h:remove()
  m.fn = function() end
  T.raises(function() torch.save(m, FX.dir .. "/fn.pt") end,
    "~torch.save: cannot save 'fn': a function that is not one of torch's own")
  m.fn = nil
  -- a class not defined when loading
  local Gone = nn.Module:extend("SerNeverDefinedElsewhere")
  function Gone:__init() self.l = nn.Linear(1, 1) end
  torch.save(Gone(), FX.dir .. "/gone.pt")
  nn.Module._classes_by_name.SerNeverDefinedElsewhere = nil
  T.raises(function() torch.load(FX.dir .. "/gone.pt", { weights_only = false }) end,
    "~the saved module's class 'SerNeverDefinedElsewhere' is not defined")
  T.raises(function() torch.serialization.safe_globals(3) end, "~safe_globals: expected a list")
  T.raises(function() torch.serialization.add_safe_globals({ 1 }) end, "~add_safe_globals: entry 1 is a number")
  -- a module inside a plain table, saved next to other values
  torch.save({ model = nn.Linear(1, 1), epoch = 3 }, FX.dir .. "/mixed.pt")
  local got = torch.load(FX.dir .. "/mixed.pt", { weights_only = false })
  T.eq(got.epoch, 3); T.eq(got.model.__name, "Linear")
end)

if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 3) end
os.execute("rm -rf '" .. FX.dir .. "'")
