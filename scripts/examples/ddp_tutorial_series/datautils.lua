-- pytorch/examples distributed/ddp-tutorial-series/datautils.py in Lua: MyTrainDataset, `size`
-- samples of (20 uniform inputs, 1 uniform target) drawn once when it is made.
--   local MyTrainDataset = require("datautils").MyTrainDataset
local Dataset = torch.utils.data.Dataset

local MyTrainDataset = Dataset:extend("MyTrainDataset")

function MyTrainDataset:__init(size)
  self.size = size
  self.data = {}
  for i = 1, size do self.data[i] = { torch.rand(20), torch.rand(1) } end
end

function MyTrainDataset:__len() return self.size end

function MyTrainDataset:__getitem(index)
  local sample = self.data[index + 1]
  return sample[1], sample[2]
end

return { MyTrainDataset = MyTrainDataset }
