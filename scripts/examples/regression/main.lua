-- pytorch/examples regression/main.py in Lua: fits a random degree-4 polynomial with one
-- Linear layer (4 inputs: x, x^2, x^3, x^4), by plain gradient steps on the smooth L1 loss of
-- batches of 32 random points, until the loss is below 1e-3; then prints the loss, the number
-- of batches and the learned and actual polynomials.
--
--   nnrepl scripts/examples/regression/main.lua
--
-- No flags, as in the original; make_features and poly_desc are in model.lua beside this file.
-- The random numbers come from nnrepl's default generator, so the polynomial differs from the
-- one PyTorch draws.
local model = require "model"
local POLY_DEGREE, make_features, poly_desc = model.POLY_DEGREE, model.make_features, model.poly_desc

local W_target = torch.randn(POLY_DEGREE, 1) * 5
local b_target = torch.randn(1) * 5

-- the function to approximate
local function f(x)
  return x:mm(W_target) + b_target:item()
end

-- a batch of random points and their values
local function get_batch(batch_size)
  batch_size = batch_size or 32
  local random = torch.randn(batch_size)
  local x = make_features(random)
  local y = f(x)
  return x, y
end

-- Define model
local fc = nn.Linear(W_target:size(0), 1)

local loss
local batch_idx = 1
while true do
  -- Get data
  local batch_x, batch_y = get_batch()

  -- Reset gradients
  fc:zero_grad()

  -- Forward pass
  local output = F.smooth_l1_loss(fc(batch_x), batch_y)
  loss = output:item()

  -- Backward pass
  output:backward()

  -- Apply gradients
  for _, param in ipairs(fc:parameters()) do
    param.data:add_(-0.1 * param.grad)
  end

  -- Stop criterion
  if loss < 1e-3 then
    break
  end
  batch_idx = batch_idx + 1
end

print(string.format("Loss: %.6f after %d batches", loss, batch_idx))
print("==> Learned function:\t" .. poly_desc(fc.weight:view(-1), fc.bias))
print("==> Actual function:\t" .. poly_desc(W_target:view(-1), b_target))
