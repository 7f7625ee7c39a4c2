-- pytorch/examples mnist_forward_forward's model: Hinton's forward-forward algorithm. Each Layer
-- is a Linear layer with its own Adam optimizer, trained alone to give a high "goodness" (mean
-- squared activation) above a threshold to positive data (an image with its true label
-- overlaid) and a low one to negative data (a wrong label). Net predicts the label whose
-- overlay has the most goodness summed over its layers. Used by main.lua and by
-- tests/gpu/examples/mnist_forward_forward.lua.
--
-- The original reads the globals `args` (lr, threshold, epochs, log_interval) and `device`:
-- here they are M.args and M.device, which main.lua sets before building a Net.
local argparse = require "argparse"
local M = {}

-- a copy of x whose first `classes` columns are zero but for column y (a label per row, or one
-- label for all rows), which holds x's largest value
function M.overlay_y_on_x(x, y, classes)
  classes = classes or 10
  local x_ = x:clone()
  x_[":, :" .. classes]:mul_(0.0)
  if not torch.is_tensor(y) then y = torch.full({ x:size(0) }, y, { dtype = torch.int64, device = x.device }) end
  x_:index_put_({ torch.arange(x:size(0), { device = x.device }), y }, x:max())
  return x_
end

local Layer = nn.Linear:extend("Layer")
M.Layer = Layer

function Layer:__init(in_features, out_features, bias, device, dtype)
  if bias == nil then bias = true end
  Layer.super.__init(self, in_features, out_features, bias, device, dtype)
  self.relu = nn.ReLU()
  self.opt = optim.Adam(self:parameters(), { lr = M.args.lr })
  self.threshold = M.args.threshold
  self.num_epochs = M.args.epochs
end

function Layer:forward(x)
  local x_direction = x / (x:norm(2, 1, true) + 1e-4)
  return self.relu(torch.mm(x_direction, self.weight.T) + self.bias:unsqueeze(0))
end

-- num_epochs full-batch Adam steps on this layer alone; returns its detached outputs
function Layer:train(x_pos, x_neg)
  for i = 0, self.num_epochs - 1 do
    local g_pos = self:forward(x_pos):pow(2):mean(1)
    local g_neg = self:forward(x_neg):pow(2):mean(1)
    local loss = torch.log1p(
      torch.exp(
        torch.cat({ -g_pos + self.threshold, g_neg - self.threshold })
      )
    ):mean()
    self.opt:zero_grad()
    loss:backward()
    self.opt:step()
    if i % M.args.log_interval == 0 then
      print("Loss:  " .. argparse.float_repr(loss:item()))
    end
  end
  return self:forward(x_pos):detach(), self:forward(x_neg):detach()
end

local Net = nn.Module:extend("Net")
M.Net = Net

function Net:__init(dims)
  -- a plain list, as in the original: the layers are not registered submodules, so
  -- Net's state_dict() is empty (mnist_ff.pt holds no weights there either)
  self.layers = {}
  for d = 1, #dims - 1 do
    self.layers[#self.layers + 1] = Layer(dims[d], dims[d + 1]):to(M.device)
  end
end

function Net:predict(x)
  local goodness_per_label = {}
  for label = 0, 9 do
    local h = M.overlay_y_on_x(x, label)
    local goodness = 0
    for _, layer in ipairs(self.layers) do
      h = layer(h)
      goodness = goodness + h:pow(2):mean(1)
    end
    goodness_per_label[#goodness_per_label + 1] = goodness:unsqueeze(1)
  end
  goodness_per_label = torch.cat(goodness_per_label, 1)
  return goodness_per_label:argmax(1)
end

function Net:train(x_pos, x_neg)
  local h_pos, h_neg = x_pos, x_neg
  for i, layer in ipairs(self.layers) do
    print("training layer:  " .. (i - 1))
    h_pos, h_neg = layer:train(h_pos, h_neg)
  end
end

return M
