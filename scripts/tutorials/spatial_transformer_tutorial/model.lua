-- The Net of the spatial transformer tutorial (a CNN classifier behind a spatial transformer),
-- required by main.lua and by tests/gpu/tutorials/spatial_transformer.lua.
local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(1, 10, { kernel_size = 5 })
  self.conv2 = nn.Conv2d(10, 20, { kernel_size = 5 })
  self.conv2_drop = nn.Dropout2d()
  self.fc1 = nn.Linear(320, 50)
  self.fc2 = nn.Linear(50, 10)

  -- the localization network
  self.localization = nn.Sequential(
    nn.Conv2d(1, 8, { kernel_size = 7 }),
    nn.MaxPool2d(2, { stride = 2 }),
    nn.ReLU(true),
    nn.Conv2d(8, 10, { kernel_size = 5 }),
    nn.MaxPool2d(2, { stride = 2 }),
    nn.ReLU(true)
  )

  -- regresses the 2 x 3 affine matrix
  self.fc_loc = nn.Sequential(
    nn.Linear(10 * 3 * 3, 32),
    nn.ReLU(true),
    nn.Linear(32, 3 * 2)
  )

  -- start from the identity transformation
  self.fc_loc[2].weight.data:zero_()
  self.fc_loc[2].bias.data:copy_(torch.tensor({ 1, 0, 0, 0, 1, 0 }, { dtype = torch.float }))
end

-- the spatial transformer: localize, build the sampling grid, resample the input
function Net:stn(x)
  local xs = self.localization(x)
  xs = xs:view(-1, 10 * 3 * 3)
  local theta = self.fc_loc(xs)
  theta = theta:view(-1, 2, 3)

  local grid = F.affine_grid(theta, x:size())
  x = F.grid_sample(x, grid)

  return x
end

function Net:forward(x)
  x = self:stn(x)

  x = F.relu(F.max_pool2d(self.conv1(x), 2))
  x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
  x = x:view(-1, 320)
  x = F.relu(self.fc1(x))
  x = F.dropout(x, { training = self.training })
  x = self.fc2(x)
  return F.log_softmax(x)
end

return Net
