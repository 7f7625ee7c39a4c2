-- torch.utils.data.IterableDataset and ChainDataset through the DataLoader, and StackDataset:
-- batching a stream, drop_last, len, worker sharding with get_worker_info(),
-- and the options a stream cannot take. References are plain Lua lists.
local T = ...
local data = torch.utils.data
local DataLoader = data.DataLoader

-- the documents' example: the integers [start, stop), split among the workers
local Range = data.IterableDataset:extend("Range")
function Range:__init(start, stop) self.start, self.stop = start, stop end
function Range:__iter()
  local lo, hi = self.start, self.stop
  local info = data.get_worker_info()
  if info then -- this worker's share
    local per = math.ceil((hi - lo) / info.num_workers)
    lo = lo + info.id * per
    hi = math.min(lo + per, hi)
  end
  local i = lo - 1
  return function()
    i = i + 1
    if i < hi then return i end
  end
end

-- pairs (x, x*x) with no length
local Squares = data.IterableDataset:extend("Squares")
function Squares:__init(n) self.n = n end
function Squares:__iter()
  local i = -1
  return function()
    i = i + 1
    if i < self.n then return torch.tensor({i, i}, {dtype = torch.float64}), i * i end
  end
end

-- every batch of the loader as a Lua list of lists
local function batches(loader)
  local out = {}
  for b in loader do out[#out + 1] = b:tolist() end
  return out
end

-- the integers 0..n-1 in batches of bs, as the reference loader gives them
local function chunks(list, bs, drop)
  local out = {}
  for s = 1, #list, bs do
    local stop = math.min(s + bs - 1, #list)
    if not (drop and stop - s + 1 < bs) then out[#out + 1] = table.move(list, s, stop, 1, {}) end
  end
  return out
end
local function range(lo, hi)
  local out = {}
  for i = lo, hi - 1 do out[#out + 1] = i end
  return out
end

T.test("IterableDataset batched in order", function()
  local ds = Range(3, 10)
  T.eq(batches(DataLoader(ds, {batch_size = 3})), chunks(range(3, 10), 3), "batches of 3, the last short")
  T.eq(batches(DataLoader(ds, {batch_size = 3, drop_last = true})), chunks(range(3, 10), 3, true), "drop_last")
  T.eq(batches(DataLoader(ds, 4)), chunks(range(3, 10), 4), "batch_size positional")
  T.eq(batches(DataLoader(ds, {batch_size = 3, shuffle = false})), chunks(range(3, 10), 3), "shuffle=false is allowed")
  local got = {}
  for x in DataLoader(ds, {batch_size = false}) do got[#got + 1] = x end
  T.eq(got, range(3, 10), "batch_size=None: the samples themselves")
  got = {}
  for x in ds:iter() do got[#got + 1] = x end
  T.eq(got, range(3, 10), "ds:iter() in a for loop")
  T.raises(function() return #DataLoader(ds, {batch_size = 3}) end, "~Range does not define __len", "len needs __len")
  local Sized = Range:extend("Sized")
  function Sized:__len() return self.stop - self.start end
  local sized = Sized(0, 10)
  T.eq(#DataLoader(sized, {batch_size = 3}), 4, "len: ceil(10/3)")
  T.eq(#DataLoader(sized, {batch_size = 3, drop_last = true}), 3, "len with drop_last: floor(10/3)")
  T.eq(#DataLoader(sized, {batch_size = false}), 10, "len without batching")
end)

T.test("IterableDataset: several values a sample, default_collate", function()
  local n, bs, seen = 7, 3, 0
  for step, x, y in DataLoader(Squares(n), {batch_size = bs}):enumerate() do
    local want_x, want_y = {}, {}
    for i = step * bs, math.min(step * bs + bs, n) - 1 do
      want_x[#want_x + 1] = {i + 0.0, i + 0.0}
      want_y[#want_y + 1] = i * i
    end
    T.eq(x.dtype, torch.float64, "x dtype")
    T.eq(y.dtype, torch.int64, "y dtype")
    T.eq(x:tolist(), want_x, "x batch " .. step)
    T.eq(y:tolist(), want_y, "y batch " .. step)
    seen = seen + x:size(0)
  end
  T.eq(seen, n, "every sample once")
  -- break, then a new loop starts the stream again
  local loader = DataLoader(Squares(n), {batch_size = 2})
  for _ in loader do break end
  local first
  for x in loader do first = first or x:tolist() end
  T.eq(first, {{0.0, 0.0}, {1.0, 1.0}}, "a new epoch restarts the stream")
end)

T.test("IterableDataset with workers", function()
  -- sharded with get_worker_info(): worker 0 gives 0..4, worker 1 gives 5..9, batches in turn
  local got = batches(DataLoader(Range(0, 10), {batch_size = 2, num_workers = 2}))
  T.eq(got, {{0, 1}, {5, 6}, {2, 3}, {7, 8}, {4}, {9}}, "workers' batches in turn")
  got = batches(DataLoader(Range(0, 9), {batch_size = 2, num_workers = 3, drop_last = true}))
  T.eq(got, {{0, 1}, {3, 4}, {6, 7}}, "drop_last per worker")
  -- unsharded: each worker yields the whole stream, as in PyTorch
  local count = {}
  for x in DataLoader(Squares(5), {batch_size = 2, num_workers = 2}) do
    for _, row in ipairs(x:tolist()) do count[row[1]] = (count[row[1]] or 0) + 1 end
  end
  T.eq(count, {[0] = 2, 2, 2, 2, 2}, "an unsharded stream repeats once per worker")
  T.eq(data.get_worker_info(), nil, "no worker info after the epoch")
  -- worker_init_fn configures each worker's copy of the dataset
  local Plain = data.IterableDataset:extend("Plain")
  function Plain:__init() self.start, self.stop = 0, 12 end
  function Plain:__iter()
    local i = self.start - 1
    return function() i = i + 1; if i < self.stop then return i end end
  end
  local ds = Plain()
  local seeds = {}
  local function init(id)
    local info = data.get_worker_info()
    T.eq(info.id, id, "worker_init_fn's worker info")
    seeds[#seeds + 1] = info.seed
    info.dataset.start, info.dataset.stop = id * 4, id * 4 + 4
  end
  got = batches(DataLoader(ds, {batch_size = 3, num_workers = 3, worker_init_fn = init}))
  T.eq(got, {{0, 1, 2}, {4, 5, 6}, {8, 9, 10}, {3}, {7}, {11}}, "each worker's copy configured")
  T.eq(ds.start, 0, "the loader's dataset is untouched")
  T.eq(seeds[2], seeds[1] + 1, "worker seeds: base + id")
  -- an error in a worker's iterator reaches the loop
  local Bad = data.IterableDataset:extend("Bad")
  function Bad:__iter() return function() error("bad sample") end end
  T.raises(function() for _ in DataLoader(Bad(), {batch_size = 2, num_workers = 2}) do end end, "~bad sample", "error")
  T.eq(data.get_worker_info(), nil, "no worker info after an error")
end)

T.test("IterableDataset from a coroutine", function()
  -- a finished coroutine.wrap raises when called again: the loader must not call it
  local Gen = data.IterableDataset:extend("Gen")
  function Gen:__iter()
    return coroutine.wrap(function() for i = 0, 4 do coroutine.yield(i, -i) end end)
  end
  local xs, ys = {}, {}
  for x, y in DataLoader(Gen(), {batch_size = 2}) do
    xs[#xs + 1], ys[#ys + 1] = x:tolist(), y:tolist()
  end
  T.eq(xs, {{0, 1}, {2, 3}, {4}}, "first values batched")
  T.eq(ys, {{0, -1}, {-2, -3}, {-4}}, "second values batched")
  T.eq(batches(DataLoader(Gen(), {batch_size = 2, num_workers = 2})), {{0, 1}, {0, 1}, {2, 3}, {2, 3}, {4}, {4}},
    "with workers, short batches")
end)

T.test("ChainDataset", function()
  local chain = Range(0, 3) + Range(10, 12)
  T.check(data.isinstance(chain, data.ChainDataset), "iterable + iterable is a ChainDataset")
  T.eq(batches(DataLoader(chain, {batch_size = 2})), {{0, 1}, {2, 10}, {11}}, "chained in order")
  local Sized = Range:extend("Sized2")
  function Sized:__len() return self.stop - self.start end
  T.eq(#data.ChainDataset({Sized(0, 3), Sized(5, 9)}), 7, "len: the sum")
  T.raises(function() return #chain end, "~does not define __len", "len needs every part's")
  T.eq(batches(DataLoader(data.ChainDataset({}), {batch_size = 2})), {}, "an empty chain")
  T.raises(function() data.ChainDataset({data.TensorDataset(torch.zeros(2))}) end,
    "ChainDataset only supports IterableDataset", "not iterable")
end)

T.test("IterableDataset errors", function()
  local ds = Range(0, 4)
  T.raises(function() DataLoader(ds, {batch_size = 2, shuffle = true}) end,
    "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True", "shuffle")
  T.raises(function() DataLoader(ds, {sampler = {0, 1}}) end,
    "~DataLoader with IterableDataset: expected unspecified sampler option", "sampler")
  T.raises(function() DataLoader(ds, {batch_sampler = {{0, 1}}}) end,
    "~DataLoader with IterableDataset: expected unspecified batch_sampler option", "batch_sampler")
  T.raises(function() return ds[0] end, "~Range is an IterableDataset: it has no __getitem", "indexing")
  local NoIter = data.IterableDataset:extend("NoIter")
  T.raises(function() for _ in DataLoader(NoIter()) do end end, "~NoIter must define __iter()", "no __iter")
  local NotFn = data.IterableDataset:extend("NotFn")
  function NotFn:__iter() return {1, 2} end
  T.raises(function() for _ in DataLoader(NotFn()) do end end,
    "~NotFn:__iter() must return an iterator function, got table", "__iter returns a table")
  T.raises(function() data.ConcatDataset({ds}) end, "ConcatDataset does not support IterableDataset", "concat")
end)

T.test("StackDataset", function()
  local x, y = torch.arange(12):view(6, 2), torch.arange(6) * 10
  local a, b = data.TensorDataset(x), data.TensorDataset(y)
  local st = data.StackDataset(a, b)
  T.eq(#st, 6, "len")
  local s = st[2]
  T.eq(s[1]:tolist(), {4, 5}, "first dataset's sample")
  T.eq(s[2]:item(), 20, "second dataset's sample")
  local named = data.StackDataset({image = a, label = b})
  local n = named[5]
  T.eq(n.image:tolist(), {10, 11}, "named: image")
  T.eq(n.label:item(), 50, "named: label")
  -- the loader collates dicts field by field
  for batch in DataLoader(named, {batch_size = 4}) do
    T.eq(batch.image:tolist(), {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, "batched images")
    T.eq(batch.label:tolist(), {0, 10, 20, 30}, "batched labels")
    break
  end
  T.raises(function() data.StackDataset(a, data.TensorDataset(torch.zeros(5))) end, "Size mismatch between datasets")
  T.raises(function() data.StackDataset() end, "At least one dataset should be passed")
end)
