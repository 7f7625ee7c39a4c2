-- pytorch/examples super_resolution/model.py: the sub-pixel convolution network (Shi et al.,
-- ESPCN) on the Y channel, shared by main.lua, super_resolve.lua and the parity test
-- (tests/gpu/examples/super_resolution.lua): `local Net = require("model").Net`.
local init = nn.init

local Net = nn.Module:extend("Net")

function Net:__init(upscale_factor)
  self.relu = nn.ReLU()
  self.conv1 = nn.Conv2d(1, 64, { 5, 5 }, { 1, 1 }, { 2, 2 })
  self.conv2 = nn.Conv2d(64, 64, { 3, 3 }, { 1, 1 }, { 1, 1 })
  self.conv3 = nn.Conv2d(64, 32, { 3, 3 }, { 1, 1 }, { 1, 1 })
  self.conv4 = nn.Conv2d(32, upscale_factor ^ 2 // 1, { 3, 3 }, { 1, 1 }, { 1, 1 })
  self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

  self:_initialize_weights()
end

function Net:forward(x)
  x = self.relu(self.conv1(x))
  x = self.relu(self.conv2(x))
  x = self.relu(self.conv3(x))
  x = self.pixel_shuffle(self.conv4(x))
  return x
end

function Net:_initialize_weights()
  init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
  init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
  init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
  init.orthogonal_(self.conv4.weight)
end

return { Net = Net }
