-- Writes a tiny MNIST-format dataset (uncompressed IDX files) for the example tests:
--   nnrepl tests/interp/make_tiny_mnist.lua DIR [N_TRAIN] [N_TEST]
-- into DIR/MNIST/raw. Image of class k: noise in 0..59 with a bright band (200..255) on rows
-- 2k+4 and 2k+5, so both a row-reading LSTM and a CNN can learn the classes within a few
-- steps. Labels cycle 0..9; fixed seed, so the files are the same on every run.
local dir, n_train, n_test = ...
assert(dir, "usage: make_tiny_mnist.lua DIR [N_TRAIN] [N_TEST]")
n_train, n_test = math.tointeger(tonumber(n_train or 256)), math.tointeger(tonumber(n_test or 100))
local raw = dir .. "/MNIST/raw"
assert(os.execute("mkdir -p '" .. raw .. "'"))

local function write(path, magic, dims, bytes)
  local f = assert(io.open(raw .. "/" .. path, "wb"))
  f:write(string.pack(">I4", magic))
  for _, d in ipairs(dims) do f:write(string.pack(">I4", d)) end
  f:write(table.concat(bytes))
  f:close()
end

torch.manual_seed(0)
local function make(prefix, n)
  local images, labels = {}, {}
  for i = 0, n - 1 do
    local k = i % 10
    local noise = torch.randint(0, 60, { 28, 28 })
    noise[string.format("%d:%d", 2 * k + 4, 2 * k + 6)] = torch.randint(200, 256, { 2, 28 })
    for _, v in ipairs(noise:flatten():tolist()) do images[#images + 1] = string.char(v) end
    labels[#labels + 1] = string.char(k)
  end
  write(prefix .. "-images-idx3-ubyte", 0x803, { n, 28, 28 }, images)
  write(prefix .. "-labels-idx1-ubyte", 0x801, { n }, labels)
end
make("train", n_train)
make("t10k", n_test)
