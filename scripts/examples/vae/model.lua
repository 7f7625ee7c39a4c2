-- pytorch/examples vae/main.py's model and loss, shared by main.lua and the parity test
-- (tests/gpu/examples/vae.lua): `local model = require "model"` gives { VAE, loss_function }.

local VAE = nn.Module:extend("VAE")

function VAE:__init()
  self.fc1 = nn.Linear(784, 400)
  self.fc21 = nn.Linear(400, 20)
  self.fc22 = nn.Linear(400, 20)
  self.fc3 = nn.Linear(20, 400)
  self.fc4 = nn.Linear(400, 784)
end

-- the posterior's mean and log-variance
function VAE:encode(x)
  local h1 = F.relu(self.fc1(x))
  return self.fc21(h1), self.fc22(h1)
end

-- z = mu + eps * sigma with eps ~ N(0, 1): the noise stays outside the gradient's path
function VAE:reparameterize(mu, logvar)
  local std = torch.exp(0.5 * logvar)
  local eps = torch.randn_like(std)
  return mu + eps * std
end

function VAE:decode(z)
  local h3 = F.relu(self.fc3(z))
  return torch.sigmoid(self.fc4(h3))
end

-- three results, as Python's tuple: the reconstruction, mu and logvar
function VAE:forward(x)
  local mu, logvar = self:encode(x:view(-1, 784))
  local z = self:reparameterize(mu, logvar)
  return self:decode(z), mu, logvar
end

-- Reconstruction error plus the KL divergence from N(0, 1), each summed over the batch
-- (Kingma and Welling, Auto-Encoding Variational Bayes, appendix B:
-- -KL = 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)).
local function loss_function(recon_x, x, mu, logvar)
  local BCE = F.binary_cross_entropy(recon_x, x:view(-1, 784), { reduction = "sum" })
  local KLD = -0.5 * torch.sum(1 + logvar - mu:pow(2) - logvar:exp())
  return BCE + KLD
end

return { VAE = VAE, loss_function = loss_function }
