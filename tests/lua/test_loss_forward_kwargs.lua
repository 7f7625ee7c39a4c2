-- Loss modules take forward's arguments by name too (PyTorch: cosine_loss(a, b, target=y)), as the
-- knowledge distillation tutorial calls nn.CosineEmbeddingLoss; constructor options there are an error.
local T = ...

local function run(device)
  local l = nn.CosineEmbeddingLoss()
  -- cos of rows: 0 and 1; target 1 -> 1 - cos: 1 and 0; target -1 -> max(0, cos): 0 and 1
  local a = torch.tensor({ { 1.0, 0.0 }, { 1.0, 1.0 } }, { device = device })
  local b = torch.tensor({ { 0.0, 1.0 }, { 2.0, 2.0 } }, { device = device })
  local ones = torch.ones(2, { device = device })
  T.near(l(a, b, { target = ones }):item(), 0.5, 1e-6, device .. ": target by name")
  T.near(l(a, b, ones):item(), 0.5, 1e-6, device .. ": target by position")
  T.near(nn.CosineEmbeddingLoss({ reduction = "sum" })(a, b, { target = -ones }):item(), 1.0, 1e-6,
    device .. ": target -1, sum")
  T.near(nn.MSELoss()(torch.tensor({ 1.0, 3.0 }, { device = device }), { target = torch.zeros(2, { device = device }) }):item(),
    5.0, 1e-6, device .. ": MSELoss target by name")
  T.near(nn.CrossEntropyLoss()(torch.zeros(2, 4, { device = device }), { target = torch.tensor({ 0, 3 }, { device = device }) }):item(),
    math.log(4), 1e-6, device .. ": CrossEntropyLoss target by name")
  T.raises(function() return l(a, b, { target = ones, margin = 0.5 }) end,
    "CosineEmbeddingLoss.forward() got an unexpected keyword argument 'margin'", device .. ": a constructor option")
  T.raises(function() return nn.MSELoss()(a, { target = b, reduction = "sum" }) end,
    "MSELoss.forward() got an unexpected keyword argument 'reduction'", device .. ": reduction at call time")
  T.raises(function() return l(a, b, { target = ones, bogus = 1 }) end, "CosineEmbeddingLoss.forward() got an unexpected keyword argument 'bogus'", device .. ": an unknown key")
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("cuda: no GPU") end
