-- transforms.functional.resize with a trailing keyword table (as data_loading_tutorial's port
-- writes TF.resize(img, {h, w}, {antialias = true})): the same results as the positional form.
local T = ...
local TF = require("torchvision").transforms.functional

local function run(device)
  -- a 1 x 2 x 4 ramp, halved in width: without antialias bilinear takes the mean of the two
  -- middle source pixels of each pair (0.5 and 2.5 at centres 1 and 3 -> values 1.5 and 5.5)
  local img = torch.tensor({ { { 0, 2, 4, 6 }, { 1, 3, 5, 7 } } }, { dtype = torch.float64, device = device })
  local plain = TF.resize(img, { 2, 2 }, "bilinear", nil, false)
  T.near(plain:tolist(), { { { 1, 5 }, { 2, 6 } } }, 1e-12, device .. ": bilinear halving")
  T.eq(TF.resize(img, { 2, 2 }, { antialias = false }):tolist(), plain:tolist(), device .. ": keywords = positional")
  T.eq(TF.resize(img, { 2, 2 }, { interpolation = "nearest" }):tolist(),
    TF.resize(img, { 2, 2 }, "nearest"):tolist(), device .. ": interpolation keyword")
  local aa = TF.resize(img, { 2, 2 }, { antialias = true }):tolist()
  T.eq(aa, TF.resize(img, { 2, 2 }):tolist(), device .. ": antialias keyword = the default")
  T.check(aa[1][1][1] ~= plain:tolist()[1][1][1], device .. ": antialias keyword reaches resize (values differ)")
  -- max_size as a keyword: the shorter side 3 would make the longer 6 > 5, so it is capped
  T.eq(tostring(TF.resize(img, 3, { max_size = 5 }):size()), "torch.Size([1, 2, 5])", device .. ": max_size keyword")
  T.eq(T.errmsg(TF.resize, img, { 2, 2 }, { antialiasing = true }), "bad argument #3 to 'resize' (unknown keyword 'antialiasing')",
    device .. ": unknown keyword named")
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("cuda: resize keywords") end
