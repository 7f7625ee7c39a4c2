-- Writes a tiny CIFAR-10 binary dataset for the tutorial tests:
--   nnrepl tests/interp/make_tiny_cifar10.lua DIR
-- into DIR/cifar-10-batches-bin: data_batch_1..5.bin with 40 images each and test_batch.bin with
-- 20. Image i has class i % 10 = k: a bright band (230) on rows 3k..3k+2 over dim noise (0..40).
local dir = assert(..., "usage: make_tiny_cifar10.lua DIR")
local out = dir .. "/cifar-10-batches-bin"
assert(os.execute("mkdir -p '" .. out .. "'"))
math.randomseed(3)
for _, s in ipairs({ { "data_batch_1", 40 }, { "data_batch_2", 40 }, { "data_batch_3", 40 }, { "data_batch_4", 40 },
  { "data_batch_5", 40 }, { "test_batch", 20 } }) do
  local parts = {}
  for i = 0, s[2] - 1 do
    local k = i % 10
    parts[#parts + 1] = string.char(k)
    for _ = 0, 2 do
      for r = 0, 31 do
        for _ = 0, 31 do parts[#parts + 1] = string.char((r >= 3 * k and r < 3 * k + 3) and 230 or math.random(0, 40)) end
      end
    end
  end
  local f = assert(io.open(out .. "/" .. s[1] .. ".bin", "wb"))
  f:write(table.concat(parts))
  f:close()
end
