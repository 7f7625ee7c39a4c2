-- The LeNet under attack in pytorch/tutorials beginner_source/fgsm_tutorial.py (the MNIST model
-- of pytorch/examples; main.lua and the CI test, which trains one briefly, require it).
local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(1, 10, { kernel_size = 5 })
  self.conv2 = nn.Conv2d(10, 20, { kernel_size = 5 })
  self.conv2_drop = nn.Dropout2d()
  self.fc1 = nn.Linear(320, 50)
  self.fc2 = nn.Linear(50, 10)
end

function Net:forward(x)
  x = F.relu(F.max_pool2d(self.conv1(x), 2))
  x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
  x = x:view(-1, 320)
  x = F.relu(self.fc1(x))
  x = F.dropout(x, { training = self.training })
  x = self.fc2(x)
  return F.log_softmax(x, { dim = 1 })
end

return Net
