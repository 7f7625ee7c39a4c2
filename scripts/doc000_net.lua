-- Document 000's (../shared/seeds/000_*.txt) CNN, the Net class of scripts/doc000_cnn.lua:
-- conv 3->32 3x3, maxpool, conv 32->64 3x3, maxpool, fc 2304->256->128->101, and its
-- init_weights. bench/cnn_gpu.lua and tests/gpu/parity.lua use it too:
-- `local Net = require "doc000_net"` (nnrepl puts a script's folder first on package.path;
-- from elsewhere, add scripts/ to it).
local nn, F = torch.nn, torch.nn.functional

local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d({ in_channels = 3, out_channels = 32, kernel_size = { 3, 3 } })
  self.pool1 = nn.MaxPool2d({ kernel_size = 2, stride = 2 })
  self.conv2 = nn.Conv2d({ in_channels = 32, out_channels = 64, kernel_size = 3 })
  self.pool2 = nn.MaxPool2d(2, 2)
  self.fc1 = nn.Linear(64 * 6 * 6, 256)
  self.fc2 = nn.Linear(256, 128)
  self.fc3 = nn.Linear(128, 101)
end

function Net:forward(x)
  x = self.pool1(F.relu(self.conv1(x)))
  x = self.pool2(F.relu(self.conv2(x)))
  x = x:view(-1, 64 * 6 * 6)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

function Net:init_weights()
  for _, m in ipairs(self:modules()) do
    if nn.isinstance(m, nn.Conv2d) then
      nn.init.xavier_normal_(m.weight.data)
      if m.bias ~= nil then
        m.bias.data:zero_()
      end
    elseif nn.isinstance(m, nn.BatchNorm2d) then
      m.weight.data:fill_(1)
      m.bias.data:zero_()
    elseif nn.isinstance(m, nn.Linear) then
      nn.init.normal_(m.weight.data, 0, 0.01)
      m.bias.data:zero_()
    end
  end
end

return Net
