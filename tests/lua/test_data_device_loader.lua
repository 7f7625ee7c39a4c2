-- DataLoader's device fast path: a TensorDataset's batches cut with index_select /
-- narrow on the tensors' own device. The reference is the per-sample path: a Lua
-- Dataset over the same tensors (ds[i] per sample, then default_collate), with the
-- same generator seeds; batches must match in count, dtype, shape and value.
local T = ...
local data = torch.utils.data

local N = 24
torch.manual_seed(1234)
-- a non-contiguous float32 field, int64 labels, a bool mask and a float64 field
local X = torch.arange(N * 6):float():reshape(3, 2, N):permute(2, 1, 0)
local Y = torch.randint(0, 10, {N})
local M = Y:gt(4)
local D = torch.randn(N, 2):double()

-- the per-sample path: the loader cannot see through a Lua Dataset
local PerSample = data.Dataset:extend("PerSample")
function PerSample:__init(...) self.ts = {...} end
function PerSample:__len() return self.ts[1]:size(0) end
function PerSample:__getitem(i)
  local out = {}
  for k, t in ipairs(self.ts) do out[k] = t[i] end
  return table.unpack(out, 1, #self.ts)
end

-- counts of the Tensor methods the fast path calls (the other paths call neither)
local calls = {index_select = 0, narrow = 0}
local originals = {}
for name in pairs(calls) do
  local f = torch.Tensor[name]
  originals[name] = f
  torch.Tensor[name] = function(...)
    calls[name] = calls[name] + 1
    return f(...)
  end
end
local function reset() calls.index_select, calls.narrow = 0, 0 end

-- one epoch as a list of batches, each a list of its fields
local function epoch(loader)
  local out = {}
  for a, b, c, d in loader:iter() do out[#out + 1] = {a, b, c, d} end
  return out
end

local function gen(seed) return torch.Generator():manual_seed(seed) end

local function tensor_eq(a, b, msg)
  T.check(torch.is_tensor(a) and torch.is_tensor(b), msg .. ": tensors")
  if not (torch.is_tensor(a) and torch.is_tensor(b)) then return end
  T.eq(tostring(a.dtype), tostring(b.dtype), msg .. ": dtype")
  T.eq(a:size():totable(), b:size():totable(), msg .. ": shape")
  T.eq(a:cpu():tolist(), b:cpu():tolist(), msg .. ": values")
end

local function same_epochs(got, want, msg)
  T.eq(#got, #want, msg .. ": number of batches")
  for k = 1, math.min(#got, #want) do
    local g, w = got[k], want[k]
    T.eq(#g, #w, msg .. ": fields")
    for f = 1, #w do tensor_eq(g[f], w[f], string.format("%s: batch %d field %d", msg, k, f)) end
  end
end

local fast_ds = data.TensorDataset(X, Y, M, D)
local ref_ds = PerSample(X, Y, M, D)

T.test("the fast path gives the per-sample path's batches", function()
  for _, shuffle in ipairs({true, false}) do
    for _, drop_last in ipairs({false, true}) do
      for _, bs in ipairs({1, 5, 6, 7, 24, 30}) do
        local msg = string.format("shuffle=%s drop_last=%s batch_size=%d", shuffle, drop_last, bs)
        local fast = data.DataLoader(fast_ds, {batch_size = bs, shuffle = shuffle, drop_last = drop_last, generator = gen(7)})
        local ref = data.DataLoader(ref_ds, {batch_size = bs, shuffle = shuffle, drop_last = drop_last, generator = gen(7)})
        local want_len = drop_last and N // bs or (N + bs - 1) // bs
        T.eq(#fast, want_len, msg .. ": #loader")
        T.eq(#ref, want_len, msg .. ": #loader (per-sample)")
        for e = 1, 3 do
          reset()
          local got = epoch(fast)
          local nb = #got
          if shuffle then
            T.eq(calls.index_select, nb * 4, msg .. ": index_select per field and batch")
          else
            T.eq(calls.index_select, 0, msg .. ": no index_select in order")
            T.eq(calls.narrow, nb * 4, msg .. ": narrow per field and batch")
          end
          reset()
          local want = epoch(ref)
          T.eq(calls.index_select + calls.narrow, 0, msg .. ": the reference takes the per-sample path")
          same_epochs(got, want, msg .. " epoch " .. e)
          T.eq(nb, want_len, msg .. ": batches seen")
          for _, b in ipairs(got) do
            for f = 1, 4 do T.check(b[f]:is_contiguous(), msg .. ": a contiguous batch") end
          end
          if not drop_last and nb > 0 then
            local last = N - (want_len - 1) * bs
            T.eq(got[nb][1]:size(0), last, msg .. ": the last, partial batch")
          end
        end
      end
    end
  end
end)

T.test("every sample once per epoch, in a new order each epoch", function()
  local fast = data.DataLoader(fast_ds, {batch_size = 5, shuffle = true, generator = gen(3)})
  local orders = {}
  for e = 1, 2 do
    local seen, order = {}, {}
    for _, y, _, d in fast:iter() do
      for _, v in ipairs(d:select(1, 0):tolist()) do order[#order + 1] = v end
    end
    for _, v in ipairs(order) do seen[v] = (seen[v] or 0) + 1 end
    local ok = #order == N
    for _, v in ipairs(D:select(1, 0):tolist()) do ok = ok and seen[v] == 1 end
    T.check(ok, "each sample exactly once in epoch " .. e)
    orders[e] = order
  end
  T.check(table.concat(orders[1], ",") ~= table.concat(orders[2], ","), "the order changes between epochs")
end)

T.test("the default generator: the same seed gives the same batches", function()
  torch.manual_seed(11)
  local got = epoch(data.DataLoader(fast_ds, {batch_size = 5, shuffle = true}))
  torch.manual_seed(11)
  local want = epoch(data.DataLoader(ref_ds, {batch_size = 5, shuffle = true}))
  same_epochs(got, want, "manual_seed(11)")
end)

T.test("iter, enumerate, the loader called, break", function()
  local fast = data.DataLoader(fast_ds, {batch_size = 7, shuffle = true, generator = gen(5)})
  local ref = data.DataLoader(ref_ds, {batch_size = 7, shuffle = true, generator = gen(5)})
  local steps, firsts = {}, {}
  for step, x, y in fast:enumerate() do
    steps[#steps + 1] = step
    firsts[#firsts + 1] = y
  end
  T.eq(steps, {0, 1, 2, 3}, "enumerate counts from 0")
  local k = 0
  for _, x, y in ref:enumerate() do
    k = k + 1
    tensor_eq(firsts[k], y, "enumerate batch " .. k)
  end
  -- break after one batch, then whole epochs: both loaders draw one order per epoch
  for x in fast:iter() do break end
  for x in ref:iter() do break end
  local got, want = {}, {}
  for x, y, m, d in fast do got[#got + 1] = {x, y, m, d} end
  for x, y, m, d in ref do want[#want + 1] = {x, y, m, d} end
  same_epochs(got, want, "for ... in loader after a break")
  tensor_eq(epoch(fast)[2][2], epoch(ref)[2][2], "the next epoch")
end)

T.test("batches are fresh tensors: changing one leaves the dataset alone", function()
  local before = {X:clone(), Y:clone(), D:clone()}
  for _, shuffle in ipairs({false, true}) do
    for x, y, m, d in data.DataLoader(fast_ds, {batch_size = 4, shuffle = shuffle, generator = gen(1)}):iter() do
      x:fill_(-1)
      y:fill_(-1)
      d:mul_(0)
    end
  end
  tensor_eq(X, before[1], "X unchanged")
  tensor_eq(Y, before[2], "Y unchanged")
  tensor_eq(D, before[3], "D unchanged")
end)

T.test("explicit samplers: the built-in ones take the fast path", function()
  local cases = {
    {"RandomSampler", function(ds) return {sampler = data.RandomSampler(ds, {generator = gen(9)}), batch_size = 5} end},
    {"RandomSampler num_samples=2N+3", function(ds)
      return {sampler = data.RandomSampler(ds, {num_samples = 2 * N + 3, generator = gen(9)}), batch_size = 6}
    end},
    {"RandomSampler replacement", function(ds)
      return {sampler = data.RandomSampler(ds, {replacement = true, num_samples = 30, generator = gen(9)}), batch_size = 7}
    end},
    {"SequentialSampler", function(ds) return {sampler = data.SequentialSampler(ds), batch_size = 5, drop_last = true} end},
    {"BatchSampler(RandomSampler)", function(ds)
      return {batch_sampler = data.BatchSampler(data.RandomSampler(ds, {generator = gen(2)}), 5, false)}
    end},
    {"BatchSampler(SequentialSampler)", function(ds)
      return {batch_sampler = data.BatchSampler(data.SequentialSampler(ds), 7, true)}
    end},
    {"DistributedSampler", function(ds)
      return {sampler = data.DistributedSampler(ds, {num_replicas = 3, rank = 1, seed = 4}), batch_size = 3}
    end},
  }
  for _, c in ipairs(cases) do
    local name, opts = c[1], c[2]
    local fast, ref = data.DataLoader(fast_ds, opts(fast_ds)), data.DataLoader(ref_ds, opts(ref_ds))
    T.eq(#fast, #ref, name .. ": #loader")
    for e = 1, 2 do
      reset()
      local got = epoch(fast)
      T.check(calls.index_select + calls.narrow > 0, name .. ": fast path")
      same_epochs(got, epoch(ref), name .. " epoch " .. e)
    end
  end
end)

T.test("other setups fall back to the other paths, with the same batches", function()
  local function sub_sampler(ds) return data.SubsetRandomSampler({3, 1, 4, 15, 9, 2, 6}, gen(8)) end
  local collate = function(batch) return data.default_collate(batch) end
  local Sub = data.TensorDataset:extend("SubTensorDataset") -- a subclass that changes samples
  function Sub:__getitem(i)
    local x, y, m, d = data.TensorDataset.__getitem(self, i)
    return x * 2, y, m, d
  end
  local cases = {
    {"SubsetRandomSampler", fast_ds, ref_ds, function(ds) return {sampler = sub_sampler(ds), batch_size = 3} end},
    {"custom collate_fn", fast_ds, ref_ds, function() return {batch_size = 5, shuffle = true, generator = gen(1), collate_fn = collate} end},
    {"a list of index lists", fast_ds, ref_ds, function() return {batch_sampler = {{5, 2}, {0, 1, 23}}} end},
    {"num_workers=2 on the CPU", fast_ds, ref_ds, function() return {batch_size = 5, shuffle = true, generator = gen(1), num_workers = 2} end},
    {"pin_memory on the CPU", fast_ds, ref_ds, function() return {batch_size = 5, shuffle = true, generator = gen(1), pin_memory = true} end},
  }
  for _, c in ipairs(cases) do
    local name, a, b, opts = c[1], c[2], c[3], c[4]
    reset()
    local got = epoch(data.DataLoader(a, opts(a)))
    T.eq(calls.index_select + calls.narrow, 0, name .. ": not the fast path")
    same_epochs(got, epoch(data.DataLoader(b, opts(b))), name)
  end
  -- the subclass's own samples, not the tensors' rows
  reset()
  local got = epoch(data.DataLoader(Sub(X, Y, M, D), {batch_size = 5}))
  T.eq(calls.index_select + calls.narrow, 0, "subclass: not the fast path")
  tensor_eq(got[1][1], X:narrow(0, 0, 5) * 2, "subclass: its __getitem is used")
  -- batch_size=None: samples one by one, as the per-sample path gives them
  local fast, ref = {}, {}
  for x, y in data.DataLoader(fast_ds, {batch_size = false}):iter() do fast[#fast + 1] = {x, y} end
  for x, y in data.DataLoader(ref_ds, {batch_size = false}):iter() do ref[#ref + 1] = {x, y} end
  same_epochs(fast, ref, "batch_size=None")
end)

T.test("a one-tensor dataset gives the batch itself", function()
  local ds = data.TensorDataset(Y)
  local seen = 0
  for y in data.DataLoader(ds, {batch_size = 10}):iter() do
    seen = seen + 1
    T.check(torch.is_tensor(y), "a tensor")
    if seen == 3 then tensor_eq(y, Y:narrow(0, 20, 4), "the last batch") end
  end
  T.eq(seen, 3, "batches")
end)

-- CUDA: the dataset on the GPU; batches stay there and equal the CPU path's
local cuda_tests = 3
if not torch.cuda.is_available() then
  T.skip("no CUDA device: the CUDA fast-path checks", cuda_tests)
else
  local GX, GY, GM, GD = X:cuda(), Y:cuda(), M:cuda(), D:cuda()
  local gpu_ds = data.TensorDataset(GX, GY, GM, GD)

  T.test("cuda: batches stay on the device and equal the CPU path's", function()
    for _, shuffle in ipairs({true, false}) do
      for _, drop_last in ipairs({false, true}) do
        for _, bs in ipairs({5, 6}) do
          local msg = string.format("cuda shuffle=%s drop_last=%s batch_size=%d", shuffle, drop_last, bs)
          local fast = data.DataLoader(gpu_ds, {batch_size = bs, shuffle = shuffle, drop_last = drop_last, generator = gen(7)})
          local ref = data.DataLoader(ref_ds, {batch_size = bs, shuffle = shuffle, drop_last = drop_last, generator = gen(7)})
          T.eq(#fast, #ref, msg .. ": #loader")
          for e = 1, 2 do
            reset()
            local got = epoch(fast)
            T.check(calls.index_select + calls.narrow > 0, msg .. ": fast path")
            for _, b in ipairs(got) do
              for f = 1, 4 do T.eq(b[f].device.type, "cuda", msg .. ": on the device") end
            end
            same_epochs(got, epoch(ref), msg .. " epoch " .. e)
          end
        end
      end
    end
  end)

  T.test("cuda: the per-sample path on the device agrees, and the dataset is left alone", function()
    local fast = data.DataLoader(gpu_ds, {batch_size = 5, shuffle = true, generator = gen(2)})
    local ref = data.DataLoader(PerSample(GX, GY, GM, GD), {batch_size = 5, shuffle = true, generator = gen(2)})
    local got = epoch(fast)
    same_epochs(got, epoch(ref), "cuda per-sample")
    for _, b in ipairs(got) do b[1]:fill_(-1) end
    tensor_eq(GX, X, "GX unchanged")
  end)

  T.test("cuda: tensors on different devices each keep theirs", function()
    local ds = data.TensorDataset(GX, Y)
    local got = epoch(data.DataLoader(ds, {batch_size = 5, shuffle = true, generator = gen(4)}))
    local want = epoch(data.DataLoader(PerSample(X, Y), {batch_size = 5, shuffle = true, generator = gen(4)}))
    for _, b in ipairs(got) do
      T.eq(b[1].device.type, "cuda", "x on cuda")
      T.eq(b[2].device.type, "cpu", "y on the cpu")
    end
    same_epochs(got, want, "mixed devices")
  end)
end

for name, f in pairs(originals) do torch.Tensor[name] = f end
