-- pytorch/examples fast_neural_style/neural_style/transformer_net.py: the image transformation
-- network (Johnson et al.): reflection-padded convolutions with instance norm, five residual
-- blocks, and nearest-neighbour upsampling followed by a convolution instead of transposed
-- convolutions. Shared by neural_style.lua and the parity test: `require("transformer_net")`.
local F = nn.functional

local ConvLayer = nn.Module:extend("ConvLayer")

function ConvLayer:__init(in_channels, out_channels, kernel_size, stride)
  local reflection_padding = kernel_size // 2
  self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
  self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)
end

function ConvLayer:forward(x)
  local out = self.reflection_pad(x)
  out = self.conv2d(out)
  return out
end

-- two 3x3 convolutions with instance norm around a skip connection (He et al., 2015)
local ResidualBlock = nn.Module:extend("ResidualBlock")

function ResidualBlock:__init(channels)
  self.conv1 = ConvLayer(channels, channels, 3, 1)
  self.in1 = nn.InstanceNorm2d(channels, { affine = true })
  self.conv2 = ConvLayer(channels, channels, 3, 1)
  self.in2 = nn.InstanceNorm2d(channels, { affine = true })
  self.relu = nn.ReLU()
end

function ResidualBlock:forward(x)
  local residual = x
  local out = self.relu(self.in1(self.conv1(x)))
  out = self.in2(self.conv2(out))
  out = out + residual
  return out
end

-- upsample (nearest) then convolve: no checkerboard artefacts, unlike ConvTranspose2d
local UpsampleConvLayer = nn.Module:extend("UpsampleConvLayer")

function UpsampleConvLayer:__init(in_channels, out_channels, kernel_size, stride, upsample)
  self.upsample = upsample
  local reflection_padding = kernel_size // 2
  self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
  self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)
end

function UpsampleConvLayer:forward(x)
  local x_in = x
  if self.upsample then
    x_in = F.interpolate(x_in, { mode = "nearest", scale_factor = self.upsample })
  end
  local out = self.reflection_pad(x_in)
  out = self.conv2d(out)
  return out
end

local TransformerNet = nn.Module:extend("TransformerNet")

function TransformerNet:__init()
  -- initial convolutions
  self.conv1 = ConvLayer(3, 32, 9, 1)
  self.in1 = nn.InstanceNorm2d(32, { affine = true })
  self.conv2 = ConvLayer(32, 64, 3, 2)
  self.in2 = nn.InstanceNorm2d(64, { affine = true })
  self.conv3 = ConvLayer(64, 128, 3, 2)
  self.in3 = nn.InstanceNorm2d(128, { affine = true })
  -- residual blocks
  self.res1 = ResidualBlock(128)
  self.res2 = ResidualBlock(128)
  self.res3 = ResidualBlock(128)
  self.res4 = ResidualBlock(128)
  self.res5 = ResidualBlock(128)
  -- upsampling
  self.deconv1 = UpsampleConvLayer(128, 64, 3, 1, 2)
  self.in4 = nn.InstanceNorm2d(64, { affine = true })
  self.deconv2 = UpsampleConvLayer(64, 32, 3, 1, 2)
  self.in5 = nn.InstanceNorm2d(32, { affine = true })
  self.deconv3 = ConvLayer(32, 3, 9, 1)
  self.relu = nn.ReLU()
end

function TransformerNet:forward(X)
  local y = self.relu(self.in1(self.conv1(X)))
  y = self.relu(self.in2(self.conv2(y)))
  y = self.relu(self.in3(self.conv3(y)))
  y = self.res1(y)
  y = self.res2(y)
  y = self.res3(y)
  y = self.res4(y)
  y = self.res5(y)
  y = self.relu(self.in4(self.deconv1(y)))
  y = self.relu(self.in5(self.deconv2(y)))
  y = self.deconv3(y)
  return y
end

return {
  TransformerNet = TransformerNet, ConvLayer = ConvLayer, ResidualBlock = ResidualBlock,
  UpsampleConvLayer = UpsampleConvLayer,
}
