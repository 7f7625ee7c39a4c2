-- The TinyModel of pytorch/tutorials beginner_source/introyt/autogradyt_tutorial.py
-- (autogradyt_tutorial.lua and the parity test tests/gpu/tutorials/autogradyt.lua require it).
local TinyModel = nn.Module:extend("TinyModel")

function TinyModel:__init()
  self.layer1 = torch.nn.Linear(1000, 100)
  self.relu = torch.nn.ReLU()
  self.layer2 = torch.nn.Linear(100, 10)
end

function TinyModel:forward(x)
  x = self.layer1(x)
  x = self.relu(x)
  x = self.layer2(x)
  return x
end

return TinyModel
