-- The nnrepl half of the checkpoint / TensorBoard / argparse parity check
-- against PyTorch (tests/parity/io_parity.py runs the other half):
--   nnrepl tests/parity/io_dump.lua save DIR   an AlexNet checkpoint with its input and
--                                              logits, event files, argparse outputs
--   nnrepl tests/parity/io_dump.lua load DIR   PyTorch's AlexNet checkpoint and input
--                                              (written by io_parity.py) -> logits
local mode, dir = arg[1], arg[2]
assert((mode == "save" or mode == "load") and dir, "usage: io_dump.lua save|load DIR")
local tv = require "torchvision"
local SummaryWriter = torch.utils.tensorboard.SummaryWriter

if mode == "load" then
  local m = tv.models.alexnet{ num_classes = 10 }
  m:load_state_dict(torch.load(dir .. "/alexnet_pt.safetensors"))
  m:eval()
  local x = torch.load(dir .. "/io_pt.safetensors").x
  local y = torch.no_grad(function() return m(x) end)
  torch.save({ logits = y }, dir .. "/logits_nnrepl_from_pt.safetensors")
  print("nnrepl: loaded PyTorch's AlexNet checkpoint, logits " .. tostring(y.shape))
  return
end

-- ---- checkpoint ----
torch.manual_seed(0)
local m = tv.models.alexnet{ num_classes = 10 }
m:eval()
local x = torch.randn(2, 3, 224, 224)
local y = torch.no_grad(function() return m(x) end)
torch.save(m:state_dict(), dir .. "/alexnet_nnrepl.safetensors")
torch.save({ x = x, logits = y }, dir .. "/io_nnrepl.safetensors")
-- a checkpoint with plain values too: PyTorch reads its tensors by flattened name
local opt = optim.AdamW(m:parameters(), { lr = 1e-4 })
torch.save({ model = m:state_dict(), optimizer = opt:state_dict(), epoch = 3 }, dir .. "/ckpt_nnrepl.safetensors")

-- ---- event files: scalars listed in scalars.txt for the reader to compare ----
local expected = assert(io.open(dir .. "/scalars.txt", "w"))
local w = SummaryWriter(dir .. "/tb")
for i = 0, 99 do
  local v = 2.5 / (i + 1) + 0.001 * i
  w:add_scalar("train_loss", v, i)
  expected:write(string.format("tb\ttrain_loss\t%d\t%.17g\n", i, v))
end
for epoch = 0, 4 do
  local lr = 1e-4 * 0.5 ^ epoch
  w:add_scalar("lr", lr, epoch)
  expected:write(string.format("tb\tlr\t%d\t%.17g\n", epoch, lr))
  w:add_scalars("loss", { train = 1 / (epoch + 1), valid = 2 / (epoch + 1) }, epoch)
  expected:write(string.format("tb/loss_train\tloss\t%d\t%.17g\n", epoch, 1 / (epoch + 1)))
  expected:write(string.format("tb/loss_valid\tloss\t%d\t%.17g\n", epoch, 2 / (epoch + 1)))
end
expected:close()
torch.manual_seed(1)
local hv = torch.randn(1000) * 3
local hv2 = torch.rand(500)
torch.save({ h = hv, h2 = hv2 }, dir .. "/histo_values.safetensors")
w:add_histogram("weights", hv, 1)
w:add_histogram("uniform10", hv2, 2, 10)
w:add_histogram("fc", m.classifier[6].weight, 3)
w:add_image("image", torch.rand(3, 16, 24), 1)
w:add_images("images", torch.rand(5, 3, 8, 8), 1)
w:add_text("note", "hello from nnrepl", 1)
w:close()

-- ---- argparse: help texts and errors (parity cases named as in io_parity.py) ----
local argparse = require "argparse"
local out = assert(io.open(dir .. "/argparse_nnrepl.txt", "w"))
local function run(name, build, argv)
  local p = build()
  p.columns = 80
  local buf = { "" }
  local sink = { write = function(self, ...) for _, s in ipairs({ ... }) do buf[1] = buf[1] .. s end return self end }
  p.stdout, p.stderr = sink, sink
  function p:exit(status, message)
    if message then sink:write(message) end
    error({ status = status }, 0)
  end
  local ok, res = pcall(p.parse_args, p, argv)
  local status = ok and "ok" or (type(res) == "table" and tostring(res.status) or ("lua error: " .. tostring(res)))
  local shown = ""
  if ok then shown = tostring(res) end
  out:write(string.format("=== %s %s\nstatus %s\n%s%s\n", name, table.concat(argv, " "), status, buf[1], shown))
end

local function doc_parser()
  local parser = argparse.ArgumentParser{ prog = "train.lua", description = "CV Train" }
  parser:add_argument("--dataset", { type = "str", default = "CIFAR10", help = "CIFAR10" })
  parser:add_argument("--dataset_root", { type = "str", default = "../data", help = "Dataset root directory path" })
  parser:add_argument("--img_size", { type = "int", default = 227, help = "image size" })
  parser:add_argument("--tensorboard", { type = "str", default = true, help = "Use tensorboard for loss visualization" })
  parser:add_argument("--tensorboard_log", { type = "str", default = "../tensorboard", help = "tensorboard folder" })
  parser:add_argument("--cuda", { type = "str", default = true, help = "if is cuda available" })
  parser:add_argument("--batch_size", { type = "int", default = 64, help = "batch size" })
  parser:add_argument("--lr", { type = "float", default = 1e-4, help = "learning rate" })
  parser:add_argument("--epochs", { type = "int", default = 20, help = "Number of epochs to train." })
  parser:add_argument("--checkpoint", { type = "str", default = "../checkpoint", help = "Save .pth fold" })
  return parser
end

local function small_parser()
  local p = argparse.ArgumentParser{ prog = "small.lua", description = "A small parser.", epilog = "Done." }
  p:add_argument("--lr", { type = "float", default = 1e-4, help = "learning rate (default: %(default)s)" })
  p:add_argument("-e", "--epochs", { type = "int", default = 20, help = "Number of epochs to train." })
  p:add_argument("--amp", { action = "store_true", help = "use mixed precision" })
  p:add_argument("--mode", { choices = { "train", "eval" }, default = "train" })
  p:add_argument("--gpus", { nargs = "+", type = "int", metavar = "ID", help = "GPU ids to use for the data parallel replicas of the model, in order" })
  p:add_argument("-v", "--verbose", { action = "count", default = 0 })
  local g = p:add_argument_group("data", "Where the data lives.")
  g:add_argument("--root", { default = "../data", help = "dataset root" })
  p:add_argument("data", { nargs = "?", default = ".", help = "dataset root" })
  p:add_argument("out", { help = "output file" })
  return p
end

run("doc", doc_parser, { "--help" })
run("doc", doc_parser, {})
run("doc", doc_parser, { "--lr", "0.01", "--epochs=3", "--tensorboard", "False" })
run("doc", doc_parser, { "--lr", "abc" })
run("doc", doc_parser, { "--foo", "1" })
run("doc", doc_parser, { "--img" })
run("doc", doc_parser, { "--epochs", "2.5" })
run("small", small_parser, { "-h" })
run("small", small_parser, { "o" })
run("small", small_parser, { "d", "o", "--gpus", "0", "1", "-vv", "--amp", "-e5", "--lr=1e-3" })
run("small", small_parser, { "--mode", "test", "o" })
run("small", small_parser, {})
run("small", small_parser, { "--gpus", "o" })
run("small", small_parser, { "--amp=1", "o" })
run("small", small_parser, { "a", "b", "c" })
run("small", small_parser, { "--e", "3", "o" })
out:close()
print("nnrepl: wrote the checkpoint, event files and argparse outputs to " .. dir)
