-- torch.utils.progress: iterates what it wraps, draws tqdm's line, prints
-- nothing off a terminal unless asked.
local T = ...
local data = torch.utils.data
local progress = torch.utils.progress

local tmp = os.tmpname()
local function output(fn)
  local f = assert(io.open(tmp, "w"))
  fn(f)
  f:close()
  f = assert(io.open(tmp, "r"))
  local s = f:read("a")
  f:close()
  return s
end

T.test("iterates", function()
  local got = {}
  for v in progress({"a", "b", "c"}) do got[#got + 1] = v end
  T.eq(got, {"a", "b", "c"}, "list")
  got = {}
  for i in progress(4) do got[#got + 1] = i end
  T.eq(got, {0, 1, 2, 3}, "count")
  local ds = data.TensorDataset(torch.arange(10), torch.arange(10) * 2)
  local n = 0
  for x, y in progress(data.DataLoader(ds, {batch_size = 3})) do
    n = n + x:size(0)
    T.check(y:eq(x * 2):all():item(), "loader values")
  end
  T.eq(n, 10, "loader")
  local k = 0
  local function it() k = k + 1; if k <= 5 then return k end end
  got = {}
  for v in progress(it, {total = 5}) do got[#got + 1] = v end
  T.eq(got, {1, 2, 3, 4, 5}, "iterator function")
  -- break out of a loader with workers: the loop's closing value stops it
  local w = data.DataLoader(data.TensorDataset(torch.randn(100, 2)), {batch_size = 10, num_workers = 2})
  for _ in progress(w) do break end
  local total = 0
  for x in w:iter() do total = total + x:size(0) end
  T.eq(total, 100, "loader fine after a break")
  T.raises(function() progress(1, {dsc = "x"}) end, "~progress: unknown keyword 'dsc'", "unknown keyword")
end)

T.test("output", function()
  local out = output(function(f)
    for _ in progress(5, {file = f}) do end
  end)
  T.eq(out, "", "nothing off a terminal by default")
  out = output(function(f)
    local bar = progress(10, {file = f, lines = true, desc = "train", mininterval = 0})
    for i in bar do if i == 9 then bar:set_postfix({loss = 0.25}) end end
  end)
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  T.check(#lines >= 10, "one line per update with lines=true (" .. #lines .. ")")
  local last = lines[#lines]
  T.check(last:match("^train: 100%%|[^|]+| 10/10 %[%d%d:%d%d<%d%d:%d%d, [%d.]+it/s, loss=0.25%]$") ~= nil, "final line: " .. last)
  T.check(lines[1]:match("^train:   0%%| +| 0/10 %[00:00<%?, %?it/s%]$") ~= nil, "first line: " .. lines[1])
  local bar = progress({}, {total = 100, ncols = 60, ascii = true, desc = "x"})
  bar.n = 50
  local s = bar:line()
  T.check(s:match("^x:  50%%|#+ +| 50/100 ") ~= nil and #s <= 60, "ascii bar, width: " .. s)
  local unknown = progress(function() return nil end)
  unknown.n = 7
  T.check(unknown:line():match("^7it %[%d%d:%d%d, ") ~= nil, "no total: " .. unknown:line())
end)

os.remove(tmp)
