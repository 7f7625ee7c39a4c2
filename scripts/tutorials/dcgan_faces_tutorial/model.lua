-- The networks of the DCGAN faces tutorial: weights_init, Generator and Discriminator, required
-- by main.lua and by tests/gpu/tutorials/dcgan_faces.lua. The Python classes read the
-- script's globals nz, ngf, ndf and nc; here they are constructor arguments:
-- Generator(ngpu, nz, ngf, nc), Discriminator(ngpu, ndf, nc).
local M = {}

-- the custom initialisation applied to netG and netD (model:apply)
function M.weights_init(m)
  local classname = m:_get_name()
  if classname:find("Conv") then
    nn.init.normal_(m.weight.data, 0.0, 0.02)
  elseif classname:find("BatchNorm") then
    nn.init.normal_(m.weight.data, 1.0, 0.02)
    nn.init.constant_(m.bias.data, 0)
  end
end

local Generator = nn.Module:extend("Generator")
M.Generator = Generator

function Generator:__init(ngpu, nz, ngf, nc)
  self.ngpu = ngpu
  self.main = nn.Sequential(
    -- Z goes into a transposed convolution
    nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, { bias = false }),
    nn.BatchNorm2d(ngf * 8),
    nn.ReLU(true),
    -- (ngf*8) x 4 x 4
    nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf * 4),
    nn.ReLU(true),
    -- (ngf*4) x 8 x 8
    nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf * 2),
    nn.ReLU(true),
    -- (ngf*2) x 16 x 16
    nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf),
    nn.ReLU(true),
    -- (ngf) x 32 x 32
    nn.ConvTranspose2d(ngf, nc, 4, 2, 1, { bias = false }),
    nn.Tanh()
    -- (nc) x 64 x 64
  )
end

function Generator:forward(input)
  return self.main(input)
end

local Discriminator = nn.Module:extend("Discriminator")
M.Discriminator = Discriminator

function Discriminator:__init(ngpu, ndf, nc)
  self.ngpu = ngpu
  self.main = nn.Sequential(
    -- (nc) x 64 x 64
    nn.Conv2d(nc, ndf, 4, 2, 1, { bias = false }),
    nn.LeakyReLU(0.2, { inplace = true }),
    -- (ndf) x 32 x 32
    nn.Conv2d(ndf, ndf * 2, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 2),
    nn.LeakyReLU(0.2, { inplace = true }),
    -- (ndf*2) x 16 x 16
    nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 4),
    nn.LeakyReLU(0.2, { inplace = true }),
    -- (ndf*4) x 8 x 8
    nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 8),
    nn.LeakyReLU(0.2, { inplace = true }),
    -- (ndf*8) x 4 x 4
    nn.Conv2d(ndf * 8, 1, 4, 1, 0, { bias = false }),
    nn.Sigmoid()
  )
end

function Discriminator:forward(input)
  return self.main(input)
end

return M
