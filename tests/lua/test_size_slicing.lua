-- torch.Size: Python's slices (size["1:"] as size[1:]), ipairs over every dim, pairs as enumerate.
local T = ...

local function dims(s) return table.concat(s:totable(), ",") end

T.test("torch.Size slices as Python's tuple slices", function()
  local s = torch.Size({ 2, 3, 4, 5 })
  -- each expected value is Python's (2, 3, 4, 5)[key]
  local want = {
    ["1:"] = "3,4,5", [":-1"] = "2,3,4", ["::2"] = "2,4", [":"] = "2,3,4,5", ["9:"] = "", ["-2:"] = "4,5",
    ["::-1"] = "5,4,3,2", ["2::-1"] = "4,3,2", ["-1:0:-1"] = "5,4,3", ["1:-1:-2"] = "", ["::-2"] = "5,3",
    ["-9:"] = "2,3,4,5", [":-9"] = "", ["3:1"] = "", ["1:3"] = "3,4", [" 1 : 3 "] = "3,4", ["1::2"] = "3,5",
  }
  for key, w in pairs(want) do
    local got = s[key]
    T.check(getmetatable(got) == getmetatable(s), key .. " gives a torch.Size")
    T.eq(dims(got), w, "size[" .. key .. "]")
  end
  T.eq(tostring(s["1:"]), "torch.Size([3, 4, 5])")
  T.eq(s["1:"]:numel(), 60, "a slice has the Size methods")
  T.eq(dims(torch.Size({})[":"]), "", "slicing an empty Size")
  local x = torch.zeros(6, 16, 6, 6)
  T.eq(tostring(x:size()["1:"]), "torch.Size([16, 6, 6])", "x:size()[1:] (num_flat_features)")
  T.eq(tostring(x.shape["-2:"]), "torch.Size([6, 6])", "x.shape[-2:]")
  T.eq(s[0] + s[-1], 7, "integer indexing unchanged")
  local ok, err = pcall(function() return s["::0"] end)
  T.check(not ok and err:find("slice step cannot be zero", 1, true), err)
  ok, err = pcall(function() return s["a:"] end)
  T.check(not ok and err:find('bad slice "a:"', 1, true), err)
  ok, err = pcall(function() return s["1:2:3:4"] end)
  T.check(not ok and err:find("bad slice", 1, true), err)
  ok, err = pcall(function() return s[4] end)
  T.check(not ok and err:find("torch.Size index 4 out of range for 4 dims", 1, true), err)
end)

T.test("ipairs and pairs over a torch.Size", function()
  local s = torch.Size({ 7, 8, 9 })
  local got = {}
  for i, d in ipairs(s) do got[#got + 1] = i .. "=" .. d end
  T.eq(table.concat(got, " "), "1=7 2=8 3=9", "ipairs: every dim, as s:totable()")
  got = {}
  for i, d in pairs(s) do got[#got + 1] = i .. "=" .. d end
  T.eq(table.concat(got, " "), "0=7 1=8 2=9", "pairs: Python's enumerate(size)")
  local n = 0
  for _ in ipairs(torch.Size({})) do n = n + 1 end
  for _ in pairs(torch.Size({})) do n = n + 1 end
  T.eq(n, 0, "an empty Size gives nothing")
  -- num_flat_features as the modelsyt tutorial writes it
  local num = 1
  for _, d in ipairs(torch.zeros(1, 16, 6, 6):size()["1:"]) do num = num * d end
  T.eq(num, 576, "the product of the dims after the batch")
  T.eq(s[1], 8, "outside ipairs, s[1] is still dim 1")
  -- ipairs inside ipairs, and over a Size inside a pairs loop
  local pairs_seen = {}
  for _, a in ipairs(torch.Size({ 1, 2 })) do
    for _, b in ipairs(torch.Size({ 3, 4 })) do pairs_seen[#pairs_seen + 1] = a * b end
  end
  T.eq(table.concat(pairs_seen, ","), "3,4,6,8", "nested loops")
end)

if torch.cuda.is_available() then
  T.test("slices of a CUDA tensor's size", function()
    local x = torch.zeros(2, 3, 4, { device = "cuda" })
    T.eq(tostring(x.shape["1:"]), "torch.Size([3, 4])")
  end)
else
  T.skip("no CUDA device", 1)
end
