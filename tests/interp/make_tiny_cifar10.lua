-- Writes a tiny CIFAR-10 binary version for the tutorial tests:
--   nnrepl tests/interp/make_tiny_cifar10.lua DIR [N_TRAIN [N_TEST]]
-- into DIR/cifar-10-batches-bin (N_TRAIN rows, default 40, in each data_batch_k.bin; N_TEST,
-- default 20, in test_batch.bin).
-- Row r is class r % 10: noise in 0..59 with rows 3c..3c+2 of channel c % 3 at 230, so a small
-- CNN learns the classes in a few steps. Fixed seed.
local dir, n_train, n_test = ...
assert(dir, "usage: make_tiny_cifar10.lua DIR [N_TRAIN [N_TEST]]")
n_train, n_test = n_train or 40, n_test or 20
torch.manual_seed(0)
os.execute("mkdir -p '" .. dir .. "/cifar-10-batches-bin'")
for _, n in ipairs({'data_batch_1', 'data_batch_2', 'data_batch_3', 'data_batch_4', 'data_batch_5', 'test_batch'}) do
  local f = assert(io.open(dir .. '/cifar-10-batches-bin/' .. n .. '.bin', 'wb'))
  local rows = n == 'test_batch' and tonumber(n_test) or tonumber(n_train)
  for r = 0, rows - 1 do
    local c = r % 10
    local img = (torch.rand(3, 32, 32) * 60):to(torch.uint8)
    img[c % 3]:narrow(0, c * 3, 3):fill_(230)
    local t = { string.char(c) }
    for _, v in ipairs(img:flatten():tolist()) do t[#t + 1] = string.char(v) end
    f:write(table.concat(t))
  end
  f:close()
end
