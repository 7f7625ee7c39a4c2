-- torch.utils.data: Dataset subclasses, TensorDataset, Subset, ConcatDataset,
-- random_split, samplers, default_collate, DataLoader (with and without workers).
local T = ...
local data = torch.utils.data
local DataLoader = data.DataLoader

local function same(a, b)
  return torch.is_tensor(a) and torch.is_tensor(b) and a.dtype == b.dtype
    and T.show(a.shape:totable()) == T.show(b.shape:totable()) and a:eq(b):all():item()
end

-- every index 0..n-1 exactly once in the list
local function is_permutation(list, n)
  if #list ~= n then return false end
  local seen = {}
  for _, i in ipairs(list) do
    if math.type(i) ~= "integer" or i < 0 or i >= n or seen[i] then return false end
    seen[i] = true
  end
  return true
end

-- the documents' datasets, ported
local RandomDataset = data.Dataset:extend("RandomDataset")
function RandomDataset:__init(size, length)
  self.len = length
  self.data = torch.randn(length, size)
end
function RandomDataset:__getitem(index) return self.data[index] end
function RandomDataset:__len() return self.len end

local MyDataset = data.Dataset:extend("MyDataset")
function MyDataset:__init(rows, transform)
  self.all_data = rows
  self.transform = transform
end
function MyDataset:__getitem(index)
  local row = self.all_data[index + 1]
  local img, label = row[1], row[2]
  if self.transform ~= nil then img = self.transform(img) end
  return img, label
end
function MyDataset:__len() return #self.all_data end

-- a dataset whose samples are their own index, to check orders
local Ids = data.Dataset:extend("Ids")
function Ids:__init(n) self.n = n end
function Ids:__getitem(i)
  if i < 0 or i >= self.n then error("Ids: index " .. i .. " out of range") end
  return i
end
function Ids:__len() return self.n end

local function ids_of(loader)
  local out, sizes = {}, {}
  for b in loader:iter() do
    sizes[#sizes + 1] = b:size(0)
    for _, v in ipairs(b:tolist()) do out[#out + 1] = v end
  end
  return out, sizes
end

T.test("Dataset subclasses", function()
  local ds = RandomDataset(5, 100)
  T.eq(#ds, 100, "len")
  T.eq(ds[3].shape:totable(), {5}, "one value: ds[i] is the value")
  T.check(same(ds:get(3), ds.data[3]), "get")
  local rows = {}
  for i = 1, 6 do rows[i] = {torch.full({2, 2}, i), i % 3} end
  local my = MyDataset(rows, function(x) return x * 2 end)
  T.eq(#my, 6, "MyDataset len")
  local s = my[1]
  T.eq(type(s), "table", "two values: ds[i] is a list")
  T.eq(s[2], 2, "label")
  T.eq(s[1]:sum():item(), 16, "transformed image")
  local img, label = my:get(5)
  T.eq(label, 0, "get label")
  T.eq(img[0][0]:item(), 12, "get image")
  -- inheritance of __len, __getitem
  local Sub = MyDataset:extend("Sub")
  local sub = Sub(rows)
  T.eq(#sub, 6, "inherited __len")
  T.eq(sub[0][2], 1, "inherited __getitem")
  T.check(data.isinstance(sub, data.Dataset) and data.isinstance(sub, MyDataset), "isinstance")
  T.check(not data.isinstance(my, Sub), "not isinstance")
  T.check(tostring(sub):find("^<Sub object at") ~= nil, "tostring")
  local Empty = data.Dataset:extend("Empty")
  T.raises(function() return Empty()[0] end, "~Empty must define __getitem(i)", "no __getitem")
  T.raises(function() return #Empty() end, "~Empty does not define __len", "no __len")
  local cat = ds + ds
  T.eq(#cat, 200, "ds + ds is a ConcatDataset")
end)

T.test("TensorDataset", function()
  local x, y = torch.arange(20):view(10, 2), torch.arange(10) * 10
  local ds = data.TensorDataset(x, y)
  T.eq(#ds, 10, "len")
  local s = ds[3]
  T.eq(s[1]:tolist(), {6, 7}, "x")
  T.eq(s[2]:item(), 30, "y")
  local a, b = ds:get(-1)
  T.eq(b:item(), 90, "negative index")
  T.eq(a:tolist(), {18, 19}, "negative index x")
  T.raises(function() data.TensorDataset(x, torch.zeros(9)) end, "Size mismatch between tensors", "mismatch")
  T.raises(function() return ds[10] end, "index 10 is out of bounds for dimension 0 with size 10", "index out of range")
  local one = data.TensorDataset(x)
  T.eq(one[0]:tolist(), {0, 1}, "one tensor: ds[i] is the row")
end)

T.test("Subset, ConcatDataset", function()
  local base = Ids(10)
  local sub = data.Subset(base, {7, 2, 5})
  T.eq(#sub, 3, "subset len")
  T.eq({sub[0], sub[1], sub[2], sub[-1]}, {7, 2, 5, 5}, "subset items")
  T.raises(function() return sub[3] end, "~Subset: index 3 is out of range for a subset of size 3", "subset range")
  local cat = data.ConcatDataset({Ids(3), Ids(4), data.Subset(Ids(10), {9, 8})})
  T.eq(#cat, 9, "concat len")
  T.eq(cat.cumulative_sizes, {3, 7, 9}, "cumulative sizes")
  local got = {}
  for i = 0, 8 do got[#got + 1] = cat[i] end
  T.eq(got, {0, 1, 2, 0, 1, 2, 3, 9, 8}, "concat items")
  T.eq(cat[-1], 8, "negative")
  T.raises(function() return cat[-10] end, "absolute value of index should not exceed dataset length", "too negative")
  T.raises(function() data.ConcatDataset({}) end, "datasets should not be an empty iterable", "empty")
  -- a plain list is a dataset too
  local lst = data.ConcatDataset({{"a", "b"}, {"c"}})
  T.eq({lst[0], lst[1], lst[2]}, {"a", "b", "c"}, "lists")
end)

T.test("random_split", function()
  local ds = Ids(100)
  local parts = data.random_split(ds, {50, 30, 20}, torch.Generator():manual_seed(42))
  T.eq({#parts[1], #parts[2], #parts[3]}, {50, 30, 20}, "sizes")
  local all = {}
  for _, p in ipairs(parts) do for i = 0, #p - 1 do all[#all + 1] = p[i] end end
  T.check(is_permutation(all, 100), "disjoint and covering")
  local again = data.random_split(ds, {50, 30, 20}, torch.Generator():manual_seed(42))
  T.eq(again[2].indices, parts[2].indices, "same generator seed -> same split")
  local other = data.random_split(ds, {50, 30, 20}, torch.Generator():manual_seed(43))
  T.check(T.show(other[1].indices) ~= T.show(parts[1].indices), "another seed -> another split")
  local fr = data.random_split(Ids(11), {0.5, 0.5})
  T.eq({#fr[1], #fr[2]}, {6, 5}, "fractions: remainder round-robin")
  local fr3 = data.random_split(Ids(10), {0.3, 0.3, 0.4})
  T.eq({#fr3[1], #fr3[2], #fr3[3]}, {3, 3, 4}, "fractions")
  T.raises(function() data.random_split(ds, {50, 49}) end, "Sum of input lengths does not equal the length of the input dataset!", "sum")
  T.raises(function() data.random_split(ds, {1.5, -0.5}) end, "Fraction at index 0 is not between 0 and 1", "bad fraction")
  -- the documents' flow: 60000 -> 50000 / 10000 of a dataset
  local big = data.random_split(Ids(600), {500, 100})
  T.eq({#big[1], #big[2]}, {500, 100}, "500/100")
end)

T.test("samplers", function()
  T.eq(data.SequentialSampler(Ids(4)):indices(), {0, 1, 2, 3}, "sequential")
  local seq = {}
  for i in data.SequentialSampler(Ids(3)):iter() do seq[#seq + 1] = i end
  T.eq(seq, {0, 1, 2}, "sequential iter")
  local g = torch.Generator():manual_seed(7)
  local rs = data.RandomSampler(Ids(50), {generator = g})
  local e1, e2 = rs:indices(), rs:indices()
  T.check(is_permutation(e1, 50) and is_permutation(e2, 50), "random: permutations")
  T.check(T.show(e1) ~= T.show(e2), "random: a new order each epoch")
  local rs2 = data.RandomSampler(Ids(50), {generator = torch.Generator():manual_seed(7)})
  T.eq(rs2:indices(), e1, "random: same seed, same order")
  torch.manual_seed(3)
  local d1 = data.RandomSampler(Ids(20)):indices()
  torch.manual_seed(3)
  T.eq(data.RandomSampler(Ids(20)):indices(), d1, "random: torch.manual_seed decides without a generator")
  local more = data.RandomSampler(Ids(10), {num_samples = 25}):indices()
  T.eq(#more, 25, "num_samples > n")
  local counts = {}
  for _, i in ipairs(more) do counts[i] = (counts[i] or 0) + 1 end
  local ok = true
  for i = 0, 9 do ok = ok and (counts[i] == 2 or counts[i] == 3) end
  T.check(ok, "num_samples > n: whole permutations then a part")
  local rep = data.RandomSampler(Ids(5), {replacement = true, num_samples = 100}):indices()
  T.eq(#rep, 100, "replacement count")
  local inrange = true
  for _, i in ipairs(rep) do inrange = inrange and i >= 0 and i < 5 end
  T.check(inrange, "replacement range")
  T.raises(function() data.RandomSampler(Ids(5), {replacement = 1}) end, "replacement should be a boolean value, but got replacement=1", "replacement type")
  T.raises(function() data.RandomSampler(Ids(5), {num_samples = 0}) end, "num_samples should be a positive integer value, but got num_samples=0", "num_samples")
  T.raises(function() data.RandomSampler(Ids(5), {foo = 1}) end, "RandomSampler: unknown keyword 'foo'", "unknown key")

  local srs = data.SubsetRandomSampler({10, 20, 30, 40}, torch.Generator():manual_seed(1)):indices()
  table.sort(srs)
  T.eq(srs, {10, 20, 30, 40}, "subset random")

  local w = data.WeightedRandomSampler({0, 1, 0, 3}, 200, true, torch.Generator():manual_seed(5)):indices()
  local c = {}
  for _, i in ipairs(w) do c[i] = (c[i] or 0) + 1 end
  T.check(c[0] == nil and c[2] == nil, "zero weights never drawn")
  T.check((c[3] or 0) > (c[1] or 0) * 1.5, "weight 3 drawn more than weight 1")
  local wn = data.WeightedRandomSampler(torch.tensor({1.0, 2.0, 3.0, 4.0}), 4, false):indices()
  T.check(is_permutation(wn, 4), "without replacement: distinct")
  T.raises(function() data.WeightedRandomSampler({1, 0, 0}, 2, false):indices() end,
    "~cannot sample n_sample > prob_dist.size(-1) samples without replacement", "too many")
  T.raises(function() data.WeightedRandomSampler({1, 2}, 0) end, "num_samples should be a positive integer value, but got num_samples=0", "num_samples")
  T.raises(function() data.WeightedRandomSampler(torch.ones(2, 2), 3) end,
    "weights should be a 1d sequence but given weights have shape ([2, 2])", "2-d weights")

  local bs = data.BatchSampler(data.SequentialSampler(Ids(10)), 3, false)
  T.eq(#bs, 4, "batch sampler len")
  T.eq(bs:batches(), {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}, "batches")
  local it = {}
  for b in bs:iter() do it[#it + 1] = b end
  T.eq(it, bs:batches(), "iter = batches")
  local bd = data.BatchSampler(data.SequentialSampler(Ids(10)), 3, true)
  T.eq(#bd, 3, "drop_last len")
  T.eq(#bd:batches(), 3, "drop_last batches")
  local bi = {}
  for b in bd:iter() do bi[#bi + 1] = #b end
  T.eq(bi, {3, 3, 3}, "drop_last iter")
  T.raises(function() data.BatchSampler({}, 0, false) end, "batch_size should be a positive integer value, but got batch_size=0", "bs")
  T.raises(function() data.BatchSampler({}, 2, nil) end, "drop_last should be a boolean value, but got drop_last=None", "drop_last")
end)

T.test("DistributedSampler", function()
  for _, reps in ipairs({2, 3}) do
    for _, shuffle in ipairs({true, false}) do
      local all = {}
      for rank = 0, reps - 1 do
        local s = data.DistributedSampler(Ids(12), {num_replicas = reps, rank = rank, shuffle = shuffle, seed = 4})
        s:set_epoch(2)
        T.eq(#s, 12 // reps, "len")
        local n = 0
        for i in s:iter() do all[#all + 1] = i; n = n + 1 end
        T.eq(n, 12 // reps, "count per rank")
      end
      T.check(is_permutation(all, 12), string.format("%d replicas (shuffle %s) cover the set exactly once", reps, tostring(shuffle)))
    end
  end
  -- 10 samples over 3 replicas: padded to 12 by repeating the start, or 9 with drop_last
  local pad, drop = {}, {}
  for rank = 0, 2 do
    local s = data.DistributedSampler(Ids(10), {num_replicas = 3, rank = rank})
    T.eq(#s, 4, "padded len")
    for _, i in ipairs(s:indices()) do pad[#pad + 1] = i end
    local d = data.DistributedSampler(Ids(10), {num_replicas = 3, rank = rank, drop_last = true})
    T.eq(#d, 3, "drop_last len")
    for _, i in ipairs(d:indices()) do drop[#drop + 1] = i end
  end
  local seen = {}
  for _, i in ipairs(pad) do seen[i] = true end
  local covered = true
  for i = 0, 9 do covered = covered and seen[i] end
  T.check(#pad == 12 and covered, "padding covers everything")
  local dseen, distinct = {}, true
  for _, i in ipairs(drop) do distinct = distinct and not dseen[i]; dseen[i] = true end
  T.check(#drop == 9 and distinct, "drop_last: distinct")
  T.eq(data.DistributedSampler(Ids(7), {num_replicas = 2, rank = 1, shuffle = false}):indices(), {1, 3, 5, 0}, "no shuffle: rank::replicas")
  local s = data.DistributedSampler(Ids(20), {num_replicas = 2, rank = 0})
  local a = s:indices()
  T.eq(s:indices(), a, "same epoch, same order")
  s:set_epoch(1)
  T.check(T.show(s:indices()) ~= T.show(a), "set_epoch reshuffles")
  T.raises(function() data.DistributedSampler(Ids(4), {num_replicas = 2, rank = 2}) end,
    "Invalid rank 2, rank should be in the interval [0, 1]", "rank")
  T.raises(function() data.DistributedSampler(Ids(4)) end, "~num_replicas and rank are needed", "no process group")
  -- in a loader
  local loader = DataLoader(Ids(12), {batch_size = 2, sampler = data.DistributedSampler(Ids(12), {num_replicas = 3, rank = 1})})
  T.eq(#loader, 2, "loader over a distributed sampler")
end)

T.test("default_collate", function()
  local c = data.default_collate
  local t = c({torch.ones(2), torch.zeros(2)})
  T.eq(t.shape:totable(), {2, 2}, "stack")
  local ints = c({1, 2, 3})
  T.eq(ints.dtype, torch.int64, "ints -> int64")
  T.eq(c({1.5, 2}).dtype, torch.float64, "floats -> float64")
  T.eq(c({1, 2.5}).dtype, torch.float32, "int first: torch.tensor's inference")
  T.eq(c({true, false}).dtype, torch.bool, "bools")
  T.eq(c({"a", "b"}), {"a", "b"}, "strings stay a list")
  local nested = c({{torch.ones(3), 1, {a = 2.0}}, {torch.zeros(3), 0, {a = 3.0}}})
  T.eq(nested[1].shape:totable(), {2, 3}, "nested tensor")
  T.eq(nested[2]:tolist(), {1, 0}, "nested ints")
  T.eq(nested[3].a:tolist(), {2.0, 3.0}, "nested dict")
  local d = c({{x = torch.ones(1), y = 1}, {x = torch.ones(1), y = 2}})
  T.eq(d.y:tolist(), {1, 2}, "dict")
  T.raises(function() c({{1, 2}, {1}}) end, "~each element in list of batch should be of equal size", "unequal")
  T.raises(function() c({print}) end, "~default_collate: batch must contain tensors, numbers, dicts or lists; found function", "bad type")
  T.raises(function() c({torch.ones(2), torch.ones(3)}) end, "~expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1", "unequal tensors")
end)

T.test("DataLoader basics", function()
  local ds = Ids(10)
  T.eq(#DataLoader(ds, {batch_size = 3}), 4, "len")
  T.eq(#DataLoader(ds, {batch_size = 3, drop_last = true}), 3, "len drop_last")
  local _, sizes = ids_of(DataLoader(ds, {batch_size = 3}))
  T.eq(sizes, {3, 3, 3, 1}, "batch sizes")
  _, sizes = ids_of(DataLoader(ds, {batch_size = 3, drop_last = true}))
  T.eq(sizes, {3, 3, 3}, "drop_last sizes")
  local order = ids_of(DataLoader(ds, {batch_size = 4}))
  T.eq(order, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "sequential")
  local loader = DataLoader(ds, {batch_size = 3, shuffle = true})
  local e1, e2 = ids_of(loader), ids_of(loader)
  T.check(is_permutation(e1, 10) and is_permutation(e2, 10), "shuffle: each sample once per epoch")
  T.check(T.show(e1) ~= T.show(e2), "shuffle: epochs differ")
  local g1 = ids_of(DataLoader(ds, {batch_size = 3, shuffle = true, generator = torch.Generator():manual_seed(9)}))
  local g2 = ids_of(DataLoader(ds, {batch_size = 3, shuffle = true, generator = torch.Generator():manual_seed(9)}))
  T.eq(g1, g2, "generator: same seed, same order")
  -- enumerate counts from 0; keyword form; positional batch_size
  local steps = {}
  for step, b in DataLoader{dataset = ds, batch_size = 5}:enumerate() do steps[#steps + 1] = step .. ":" .. b:size(0) end
  T.eq(steps, {"0:5", "1:5"}, "enumerate")
  T.eq(#DataLoader(ds, 2), 5, "positional batch_size")
  -- `for x in loader do` works like Python's iteration
  local n = 0
  for b in DataLoader(ds, {batch_size = 4}) do n = n + b:size(0) end
  T.eq(n, 10, "implicit iteration")
  local l2, twice = DataLoader(ds, {batch_size = 4}), 0
  for _ = 1, 2 do for b in l2 do twice = twice + b:size(0) end end
  T.eq(twice, 20, "implicit iteration, twice")
  -- samples of two values give two values per batch
  local xs, ys = torch.randn(8, 3), torch.arange(8)
  local cnt = 0
  for x, y in DataLoader(data.TensorDataset(xs, ys), {batch_size = 3}):iter() do
    cnt = cnt + 1
    T.eq(x.shape:totable()[2], 3, "x batch")
    T.eq(y.dtype, torch.int64, "y batch")
  end
  T.eq(cnt, 3, "batches of x, y")
  -- MyDataset with Lua values: labels are numbers -> int64
  local rows = {}
  for i = 1, 7 do rows[i] = {torch.full({1, 2, 2}, i), i % 2} end
  local seen = 0
  for imgs, labels in DataLoader(MyDataset(rows), {batch_size = 4, shuffle = true}):iter() do
    T.eq(imgs.shape:totable()[2], 1, "images [B, 1, 2, 2]")
    T.eq(labels.dtype, torch.int64, "labels int64")
    seen = seen + labels:size(0)
  end
  T.eq(seen, 7, "MyDataset through a loader")
  -- batch_size=false (None): no batching
  local single = {}
  for v in DataLoader(ds, {batch_size = false}):iter() do single[#single + 1] = v end
  T.eq(#single, 10, "batch_size=false")
  T.eq(single[4], 3, "batch_size=false: samples as they are")
end)

T.test("DataLoader options", function()
  local ds = Ids(10)
  local custom = {}
  for b in DataLoader(ds, {batch_sampler = {{3, 1}, {4, 1, 5}}}):iter() do custom[#custom + 1] = b:tolist() end
  T.eq(custom, {{3, 1}, {4, 1, 5}}, "batch_sampler as a list of lists")
  local sampled = ids_of(DataLoader(ds, {sampler = {9, 8, 7}, batch_size = 2}))
  T.eq(sampled, {9, 8, 7}, "sampler as a list")
  local cf = {}
  for b in DataLoader(ds, {batch_size = 4, collate_fn = function(s) return {n = #s} end}):iter() do cf[#cf + 1] = b.n end
  T.eq(cf, {4, 4, 2}, "collate_fn")
  local ids = {}
  local loader = DataLoader(ds, {batch_size = 5, num_workers = 3, worker_init_fn = function(id)
    local info = data.get_worker_info()
    ids[#ids + 1] = id .. "/" .. info.num_workers .. (info.dataset == ds and "" or "?")
  end})
  T.eq(ids_of(loader), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "Lua dataset with workers: main thread, same order")
  T.eq(ids, {"0/3", "1/3", "2/3"}, "worker_init_fn per worker id")
  T.eq(data.get_worker_info(), nil, "get_worker_info outside workers")
  local function msg(opts) return T.errmsg(function() DataLoader(ds, opts) end) end
  T.eq(msg({sampler = data.SequentialSampler(ds), shuffle = true}), "sampler option is mutually exclusive with shuffle", "sampler+shuffle")
  T.eq(msg({batch_sampler = {{1}}, batch_size = 2}),
    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last", "batch_sampler+batch_size")
  T.eq(msg({batch_sampler = {{1}}, drop_last = true}),
    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last", "batch_sampler+drop_last")
  T.eq(msg({num_workers = -1}), "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.", "num_workers")
  T.eq(msg({prefetch_factor = 2}), "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 " ..
    "to enable multiprocessing, otherwise set prefetch_factor to None.", "prefetch_factor")
  T.eq(msg({persistent_workers = true}), "persistent_workers option needs num_workers > 0", "persistent_workers")
  T.eq(msg({batch_size = false, drop_last = true}),
    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last", "None + drop_last")
  T.eq(msg({timeout = -1}), "timeout option should be non-negative", "timeout")
  T.eq(msg({batch_sise = 2}), "DataLoader: unknown keyword 'batch_sise'", "unknown keyword")
  -- an error in a Lua dataset reaches the loop
  local bad = DataLoader(ds, {sampler = {1, 2, 99}, batch_size = 2})
  T.raises(function() for _ in bad:iter() do end end, "~Ids: index 99 out of range", "dataset error")
end)

-- TensorDataset runs in C: with workers, without, and through the Lua path give the same batches
T.test("C path and workers", function()
  local n = 1000
  local x = torch.randn(n, 3, 4)
  local y = torch.arange(n)
  local ds = data.TensorDataset(x, y)
  T.check(data._c_source(ds) ~= nil, "TensorDataset has a C source")
  local function batches(opts)
    opts.batch_size, opts.shuffle = opts.batch_size or 64, true
    opts.generator = torch.Generator():manual_seed(1234)
    local out = {}
    for bx, by in DataLoader(ds, opts):iter() do out[#out + 1] = {bx, by} end
    return out
  end
  local lua_path = batches({collate_fn = function(s) return data.default_collate(s) end})
  for _, opts in ipairs({{}, {num_workers = 1}, {num_workers = 2}, {num_workers = 3, prefetch_factor = 1},
                         {num_workers = 2, pin_memory = true}, {num_workers = 2, persistent_workers = true}}) do
    local got = batches(opts)
    local ok = #got == #lua_path
    for k = 1, #got do
      ok = ok and same(got[k][1], lua_path[k][1]) and same(got[k][2], lua_path[k][2])
    end
    T.check(ok, "same batches as the Lua path with " .. T.show(opts.num_workers or 0) .. " workers")
  end
  local ids = {}
  for _, by in DataLoader(ds, {batch_size = 100, shuffle = true, num_workers = 2}):iter() do
    for _, v in ipairs(by:tolist()) do ids[#ids + 1] = v end
  end
  T.check(is_permutation(ids, n), "workers: each sample exactly once")
  -- a Subset of a TensorDataset (random_split) also runs in C
  local parts = data.random_split(ds, {800, 200}, torch.Generator():manual_seed(3))
  T.check(data._c_source(parts[2]) ~= nil, "Subset has a C source")
  local via_c, via_lua = {}, {}
  for _, by in DataLoader(parts[2], {batch_size = 32, num_workers = 2}):iter() do via_c[#via_c + 1] = by end
  for _, by in DataLoader(parts[2], {batch_size = 32, collate_fn = data.dataloader.default_collate and function(s)
    return data.default_collate(s) end}):iter() do via_lua[#via_lua + 1] = by end
  local ok = #via_c == #via_lua
  for k = 1, #via_c do ok = ok and same(via_c[k], via_lua[k]) end
  T.check(ok, "subset: C and Lua paths agree")
end)

T.test("workers: break, close, errors", function()
  local ds = data.TensorDataset(torch.randn(500, 10), torch.arange(500))
  local loader = DataLoader(ds, {batch_size = 10, num_workers = 2, prefetch_factor = 4})
  for round = 1, 3 do
    local k = 0
    for _ in loader:iter() do
      k = k + 1
      if k == 5 then break end
    end
    T.eq(k, 5, "break " .. round)
  end
  local total = 0
  for x in loader:iter() do total = total + x:size(0) end
  T.eq(total, 500, "a full epoch after breaks")
  -- persistent workers survive epochs and breaks
  local p = DataLoader(ds, {batch_size = 50, num_workers = 2, persistent_workers = true, shuffle = true})
  for _ = 1, 3 do
    local seen = 0
    for x in p:iter() do seen = seen + x:size(0) end
    T.eq(seen, 500, "persistent epoch")
  end
  for _ in p:iter() do break end
  local seen = 0
  for x in p:iter() do seen = seen + x:size(0) end
  T.eq(seen, 500, "persistent after break")
  p:shutdown()
  -- an index out of range in a worker: the error reaches the loop with its message
  local bad = DataLoader(ds, {batch_size = 2, num_workers = 2, sampler = {1, 2, 3, 4, 700, 5}})
  local got = 0
  local err = T.errmsg(function() for x in bad:iter() do got = got + x:size(0) end end)
  T.check(err and err:find("DataLoader worker %d: index 700 is out of range for a dataset of size 500") ~= nil,
    "worker error message: " .. tostring(err))
  T.eq(got, 4, "batches before the bad one were delivered")
  T.raises(function() for _ in bad:iter() do end end, "~index 700 is out of range", "again, no hang")
  -- an abandoned iterator is collected without hanging
  do
    local it = DataLoader(ds, {batch_size = 10, num_workers = 2}):iter()
    it()
  end
  collectgarbage()
  collectgarbage()
  T.check(true, "collected")
  -- timeout option
  local tl = DataLoader(ds, {batch_size = 100, num_workers = 1, timeout = 5})
  local c = 0
  for _ in tl:iter() do c = c + 1 end
  T.eq(c, 5, "timeout: batches arrive in time")
end)

T.test("torch.Generator, randperm", function()
  local g = torch.Generator()
  T.eq(g:initial_seed(), 67280421310721, "default seed")
  T.eq(g:manual_seed(5), g, "manual_seed returns the generator")
  local a = torch.randperm(20, {generator = g})
  T.eq(a.dtype, torch.int64, "randperm dtype")
  T.check(is_permutation(a:tolist(), 20), "randperm is a permutation")
  local state = g:get_state()
  local b = torch.randperm(20, {generator = g})
  g:set_state(state)
  T.eq(torch.randperm(20, {generator = g}):tolist(), b:tolist(), "get_state/set_state")
  T.eq(torch.randperm(20, {generator = torch.Generator():manual_seed(5)}):tolist(), a:tolist(), "same seed")
  T.eq(torch.randperm(0):tolist(), {}, "empty")
  T.eq(torch.randperm(4, {dtype = torch.float32}).dtype, torch.float32, "dtype")
  T.eq(tostring(g.device), "cpu", "device")
end)
