-- A tiny PennFudanPed in the dataset's layout: ROOT/PNGImages/FudanPedNNNNN.png (RGB) and
-- ROOT/PedMasks/FudanPedNNNNN_mask.png (one channel: 0 background, 1, 2, ... the instances),
-- N images of H x W with 1 or 2 "pedestrians" (bright upright rectangles on a dark ground).
-- Usage: nnrepl make_tiny_pennfudan.lua ROOT [N=6] [H=48] [W=64]
local tv = require "torchvision"
local root, n, h, w = arg[1], tonumber(arg[2] or 6), tonumber(arg[3] or 48), tonumber(arg[4] or 64)
os.execute("mkdir -p '" .. root .. "/PNGImages' '" .. root .. "/PedMasks'")
torch.manual_seed(0)
local ids = {}
for i = 1, n - 1 do ids[i] = i end
ids[n] = 46 -- the tutorial shows FudanPed00046
for k, id in ipairs(ids) do
  local img = (torch.rand(3, h, w) * 40):to(torch.uint8)
  local mask = torch.zeros(1, h, w, {dtype = torch.uint8})
  for inst = 1, (k % 2) + 1 do
    local x0 = (inst - 1) * (w // 2) + 4 + k % 3
    local y0 = 4 + k % 4
    local x1, y1 = x0 + w // 4, y0 + h // 2 + inst * 3
    mask:narrow(1, y0, y1 - y0):narrow(2, x0, x1 - x0):fill_(inst)
    img:narrow(1, y0, y1 - y0):narrow(2, x0, x1 - x0):fill_(150 + 40 * inst)
  end
  local name = string.format("FudanPed%05d", id)
  tv.io.write_png(img, root .. "/PNGImages/" .. name .. ".png")
  tv.io.write_png(mask, root .. "/PedMasks/" .. name .. "_mask.png")
end
