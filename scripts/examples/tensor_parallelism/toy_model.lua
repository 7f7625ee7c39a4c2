-- The toy MLP of tensor_parallel_example.lua and sequence_parallel_example.lua (each original
-- defines it in its own file): Linear(10, 32) -> ReLU -> Linear(32, 5).
local ToyModel = nn.Module:extend("ToyModel")
function ToyModel:__init()
  self.in_proj = nn.Linear(10, 32)
  self.relu = nn.ReLU()
  self.out_proj = nn.Linear(32, 5)
end
function ToyModel:forward(x)
  return self.out_proj(self.relu(self.in_proj(x)))
end
return ToyModel
