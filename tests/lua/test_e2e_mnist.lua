-- End to end on CPU (issue 3): document 001's program, scripts/train_mnist.lua, run as
-- written (MLP 784-32-10, Fashion-MNIST split 50,000 / 10,000, batch 128, SGD lr 0.1,
-- 5 epochs, 2 loader workers) must print the document's per-epoch lines and reach >= 82%
-- test accuracy (PyTorch with the same settings: 82.9%). Skipped, with a note, when
-- Debian's dataset-fashion-mnist is not installed.
-- The seed is fixed (--seed 0: 83.54% here and on the GPU machine's CPU) because at lr 0.1
-- the last epoch can land badly: document 001 in PyTorch 2.11 on the same data, seeds 0, 1, 2,
-- reached 83.40%, 78.38% and 82.94% (nnrepl with seeds 1-6: 82.98% to 84.28%).
local T = ...
local root = "/usr/share/datasets/fashion-mnist"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

for _, base in ipairs({ "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
  "t10k-labels-idx1-ubyte" }) do
  if not exists(root .. "/" .. base .. ".gz") and not exists(root .. "/" .. base) then
    io.stderr:write("skip: test_e2e_mnist: " .. root .. "/" .. base .. "(.gz) is not installed " ..
      "(apt install dataset-fashion-mnist)\n")
    return
  end
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local script = here .. "/../../scripts/train_mnist.lua"

T.test("document 001 on Fashion-MNIST", function()
  local lines = {}
  local env = setmetatable({
    print = function(...)
      local parts = table.pack(...)
      for i = 1, parts.n do parts[i] = tostring(parts[i]) end
      local line = table.concat(parts, "\t", 1, parts.n)
      lines[#lines + 1] = line
      io.stderr:write("  " .. line .. "\n")
    end,
  }, { __index = _G })
  local chunk = assert(loadfile(script, "t", env))
  local t0 = time.perf_counter()
  chunk("--seed", "0")
  io.stderr:write(string.format("  (train_mnist.lua took %.1f s)\n", time.perf_counter() - t0))

  T.eq(lines[1], "Fashion-MNIST on cpu: 50000 training, 10000 validation, 10000 test images; 5 epochs, lr 0.1, batch 128",
    "header")
  local losses, accs = {}, {}
  for k = 0, 4 do
    local line = lines[k + 2] or ""
    local e, loss, acc = line:match("^Epoch %[(%d+)%], val_loss: (%d+%.%d%d%d%d), val_acc: (%d%.%d%d%d%d)$")
    T.check(e ~= nil and tonumber(e) == k, string.format("epoch line %d as the document prints it: %q", k, line))
    losses[k], accs[k] = tonumber(loss), tonumber(acc)
  end
  if losses[0] and losses[4] then
    T.check(losses[4] < losses[0], string.format("val_loss falls: %.4f -> %.4f", losses[0], losses[4]))
    T.check(accs[4] >= 0.80, string.format("val_acc after 5 epochs %.4f >= 0.80", accs[4]))
  end
  local acc, correct, total = (lines[7] or ""):match("^Test accuracy: (%d%.%d%d%d%d) %((%d+)/(%d+)%)")
  T.check(acc ~= nil, "test accuracy line: " .. tostring(lines[7]))
  T.eq(tonumber(total), 10000, "the whole test set")
  T.check(acc and tonumber(correct) >= 8200, string.format("test accuracy %s >= 0.82", tostring(acc)))
  T.eq(#lines, 7, "header, 5 epochs, test accuracy")
end)
