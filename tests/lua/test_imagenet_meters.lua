-- The imagenet example's bookkeeping (scripts/examples/imagenet/meters.lua): accuracy's top-k
-- percentages against counts made by hand, AverageMeter's running values and its Python-format
-- lines, the Summary kinds, ProgressMeter's "[ i/n]" width and its " * ..." summary; and
-- ImageFolder's Python positional form ImageFolder(root, transform, target_transform, ...).
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
package.path = here .. "../../scripts/examples/imagenet/?.lua;" .. package.path
local M = require "meters"
local Summary, AverageMeter, ProgressMeter, accuracy = M.Summary, M.AverageMeter, M.ProgressMeter, M.accuracy

-- print's lines of fn(), as a list
local function printed(fn)
  local lines, print0 = {}, print
  print = function(...) lines[#lines + 1] = table.concat({ ... }, "\t") end
  local ok, err = pcall(fn)
  print = print0
  if not ok then error(err, 0) end
  return lines
end

local function accuracy_checks(device)
  -- 4 rows, 6 classes; the target's rank in each row: 1st, 3rd, 6th, 2nd
  local output = torch.tensor({
    { 0.9, 0.1, 0.0, 0.2, 0.3, 0.4 },
    { 0.5, 0.4, 0.6, 0.7, 0.1, 0.0 },
    { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 },
    { 0.2, 0.8, 0.1, 0.0, 0.3, 0.9 },
  }, { device = device })
  local target = torch.tensor({ 0, 0, 0, 1 }, { device = device })
  local a1, a2, a3, a5, a6 = accuracy(output, target, { 1, 2, 3, 5, 6 })
  local got = {}
  for i, a in ipairs({ a1, a2, a3, a5, a6 }) do
    T.eq(a.shape:totable(), { 1 }, "accuracy: one-element tensor " .. i)
    T.eq(a.dtype, torch.float32, "accuracy: float " .. i)
    got[i] = a[0]:item()
  end
  T.eq(got, { 25.0, 50.0, 75.0, 75.0, 100.0 }, "accuracy top-1,2,3,5,6 on " .. device)
  T.eq(accuracy(output, target):tolist(), { 25.0 }, "accuracy: topk defaults to {1}")
  local w = torch.tensor({ 1.0 }, { device = device, requires_grad = true })
  T.check(not accuracy(output * w, target).requires_grad, "accuracy runs without grad")
end

T.test("accuracy", function()
  accuracy_checks("cpu")
  T.raises(function() accuracy(torch.rand(2, 3), torch.tensor({ 0, 1 }), { 1, 5 }) end, "selected index k out of range", "k larger than the classes")
end)

T.test("AverageMeter", function()
  local m = AverageMeter("Loss", false, ":.4e", Summary.NONE)
  T.eq({ m.val, m.avg, m.sum, m.count }, { 0, 0, 0, 0 }, "starts at zero")
  m:update(2.0, 3)
  m:update(4.0)
  T.eq({ m.val, m.sum, m.count }, { 4.0, 10.0, 4 }, "val, sum, count")
  T.near(m.avg, 2.5, 0, "avg weighted by n")
  T.eq(tostring(m), "Loss 4.0000e+00 (2.5000e+00)", ":.4e line")
  T.eq(m:summary(), "", "Summary.NONE")
  local t = AverageMeter("Acc@1", false, ":6.2f")
  T.eq(t.summary_type, Summary.AVERAGE, "summary_type defaults to AVERAGE")
  t:update(torch.tensor({ 50.0 })[0], 2)
  t:update(torch.tensor({ 100.0 })[0], 2)
  T.eq(tostring(t), "Acc@1 100.00 ( 75.00)", "a tensor value formats through item")
  T.eq(t:summary(), "Acc@1 75.000", "Summary.AVERAGE")
  local s = AverageMeter("N", false, ":f", Summary.SUM)
  s:update(1.5, 2)
  T.eq(tostring(s), "N 1.500000 (1.500000)", "default :f")
  T.eq(s:summary(), "N 3.000", "Summary.SUM")
  s.summary_type = Summary.COUNT
  T.eq(s:summary(), "N 2.000", "Summary.COUNT")
  T.eq(tostring(AverageMeter("x", false, ":6.3f")), "x  0.000 ( 0.000)", "width 6")
  s.summary_type = "AVG"
  T.raises(function() s:summary() end, "ValueError: invalid summary type AVG", "bad summary type")
  T.raises(function() AverageMeter("x", false, "6.3f") end,
    "AverageMeter: unsupported format \"6.3f\" (use ':[width][.precision]f|e|g')", "bad format spec")
  T.eq(tostring(Summary.SUM), "<Summary.SUM: 2>", "enum member's repr")
  T.check(Summary.NONE ~= Summary.AVERAGE and Summary.NONE.value == 0, "members distinct")
end)

T.test("ProgressMeter", function()
  local a, b = AverageMeter("A", false, ":.1f", Summary.NONE), AverageMeter("B", false, ":.1f", Summary.AVERAGE)
  a:update(1.0)
  b:update(3.0)
  local p = ProgressMeter(120, { a, b }, "Epoch: [2]")
  T.eq(printed(function() p:display(7) end), { "Epoch: [2][  7/120]\tA 1.0 (1.0)\tB 3.0 (3.0)" }, "display")
  T.eq(printed(function() p:display_summary() end), { " *  B 3.000" }, "summary joins with spaces, NONE empty")
  T.eq(ProgressMeter(9, {}).batch_fmtstr, "[%1d/9]", "one digit")
  T.eq(printed(function() ProgressMeter(10, { b }, "Test: "):display(1) end), { "Test: [ 1/10]\tB 3.0 (3.0)" }, "prefix")
  T.raises(function() ProgressMeter(2.5, {}) end, "ProgressMeter: num_batches must be an integer", "bad count")
end)

T.test("ImageFolder positional", function()
  local tvio = require "tv_io"
  local tv = require "torchvision"
  local FX = dofile(here .. "fixture_dir.lua")("imagenet_meters")
  for _, c in ipairs({ "b", "a" }) do FX.mkdir(FX.dir .. "/" .. c) end
  tvio.write_png(torch.full({ 3, 4, 6 }, 200, { dtype = torch.uint8 }), FX.dir .. "/a/x.png")
  tvio.write_png(torch.full({ 3, 4, 6 }, 100, { dtype = torch.uint8 }), FX.dir .. "/b/y.png")
  local ds = tv.datasets.ImageFolder(FX.dir, tv.transforms.Compose({ tv.transforms.CenterCrop(2), tv.transforms.ToTensor() }),
    function(t) return t + 10 end)
  local x, y = ds:get(1)
  T.eq(x.shape:totable(), { 3, 2, 2 }, "positional transform")
  T.near(x[0][0][0]:item(), 100 / 255, 1e-6, "pixel")
  T.eq(y, 11, "positional target_transform")
  local f = tv.datasets.ImageFolder(FX.dir, function(img) return img.size end)
  T.eq(f:get(0), { 6, 4 }, "a function as the transform")
  T.raises(function() tv.datasets.ImageFolder(FX.dir, { transform = tv.transforms.ToTensor() }, 1) end,
    "ImageFolder: the arguments after root are positional only when the second is a transform; "
    .. "otherwise give them in the options table", "options table and more arguments")
  T.raises(function() tv.datasets.ImageFolder(FX.dir, { transfrom = 1 }) end, "ImageFolder: unknown keyword 'transfrom'", "typo")
  os.execute("rm -rf '" .. FX.dir .. "'")
end)

if torch.cuda.is_available() then
  T.test("accuracy on cuda", function() accuracy_checks("cuda") end)
else
  T.skip("CUDA not available", 1)
end
