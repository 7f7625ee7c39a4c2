-- itertools: sequences checked against Python's, worked out by hand from its documentation
local T = ...
local it = require "itertools"
local L = it.list

-- up to n items of an iterator (for the infinite ones)
local function take(n, iterator) return L(it.islice(iterator, n)) end
local function strs(iterator) -- tuples of characters as strings: {"ab", "ac"}
  local out = {}
  for t in iterator do out[#out + 1] = table.concat(t) end
  return out
end

T.test("count cycle repeat", function()
  T.eq(take(4, it.count()), { 0, 1, 2, 3 }, "count()")
  T.eq(take(3, it.count(10, 5)), { 10, 15, 20 }, "count(10, 5)")
  T.eq(take(3, it.count({ start = 1, step = -2 })), { 1, -1, -3 }, "count keywords")
  T.near(take(3, it.count(0.5, 0.25)), { 0.5, 0.75, 1.0 }, 0, "count floats")
  T.eq(take(7, it.cycle("ABC")), { "A", "B", "C", "A", "B", "C", "A" }, "cycle")
  T.eq(L(it.cycle({})), {}, "cycle of nothing")
  T.eq(L(it["repeat"](10, 3)), { 10, 10, 10 }, "repeat(10, 3)")
  T.eq(L(it.repeat_("x", 0)), {}, "repeat 0 times")
  T.eq(L(it.repeat_("x", -2)), {}, "repeat negative times")
  T.eq(take(2, it.repeat_(7)), { 7, 7 }, "repeat forever")
  T.raises(function() it.count({ stop = 3 }) end, "bad argument #1 to 'count' (unknown keyword 'stop')")
end)

T.test("chain islice", function()
  T.eq(L(it.chain("ABC", "DEF")), { "A", "B", "C", "D", "E", "F" }, "chain")
  T.eq(L(it.chain({ 1 }, {}, { 2, 3 })), { 1, 2, 3 }, "chain with an empty list")
  T.eq(L(it.chain.from_iterable({ "AB", { 1, 2 } })), { "A", "B", 1, 2 }, "from_iterable")
  T.eq(L(it.chain()), {}, "chain()")
  T.eq(L(it.islice("ABCDEFG", 2)), { "A", "B" }, "islice stop")
  T.eq(L(it.islice("ABCDEFG", 2, 4)), { "C", "D" }, "islice start stop")
  T.eq(L(it.islice("ABCDEFG", 2, nil)), { "C", "D", "E", "F", "G" }, "islice stop None")
  T.eq(L(it.islice("ABCDEFG", 0, nil, 2)), { "A", "C", "E", "G" }, "islice step")
  T.eq(L(it.islice("ABC", 5, 9)), {}, "islice past the end")
  -- islice consumes only what it gives: the rest stays in the iterator
  local src = it.iter({ 1, 2, 3, 4, 5 })
  T.eq(L(it.islice(src, 1, 3)), { 2, 3 }, "islice of an iterator")
  T.eq(src(), 4, "next item after islice")
  T.raises(function() it.islice("AB", -1) end, "Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
  T.raises(function() it.islice("AB", 0, 2, 0) end, "Step for islice() must be a positive integer or None.")
  T.raises(function() it.islice("AB") end, "islice expected at least 2 arguments, got 1")
  T.raises(function() it.chain(5)() end, "chain: 'int' object is not iterable")
end)

T.test("product", function()
  T.eq(strs(it.product("ABCD", "xy")), { "Ax", "Ay", "Bx", "By", "Cx", "Cy", "Dx", "Dy" }, "product('ABCD', 'xy')")
  local got = L(it.product({ 0, 1 }, { ["repeat"] = 3 }))
  T.eq(#got, 8, "product(range(2), repeat=3) count")
  T.eq(got[1], { 0, 0, 0 }, "first")
  T.eq(got[2], { 0, 0, 1 }, "second: the last position moves fastest")
  T.eq(got[5], { 1, 0, 0 }, "fifth")
  T.eq(strs(it.product("AB", "c", { ["repeat"] = 2 })), { "AcAc", "AcBc", "BcAc", "BcBc" }, "repeat of two pools")
  T.eq(L(it.product()), { {} }, "product() is one empty tuple")
  T.eq(L(it.product("AB", {})), {}, "an empty pool gives nothing")
  T.raises(function() it.product("AB", { rep = 2 }) end, "product: unknown keyword 'rep'")
end)

T.test("permutations combinations", function()
  T.eq(strs(it.permutations("ABCD", 2)),
    { "AB", "AC", "AD", "BA", "BC", "BD", "CA", "CB", "CD", "DA", "DB", "DC" }, "permutations('ABCD', 2)")
  T.eq(strs(it.permutations("ABC")), { "ABC", "ACB", "BAC", "BCA", "CAB", "CBA" }, "permutations(range(3))")
  T.eq(L(it.permutations("AB", 3)), {}, "r > n")
  T.eq(L(it.permutations("AB", 0)), { {} }, "r = 0")
  -- positions, not values: repeated items give repeated tuples
  T.eq(strs(it.permutations("AAB", 2)), { "AA", "AB", "AA", "AB", "BA", "BA" }, "repeated items")
  T.eq(strs(it.combinations("ABCD", 2)), { "AB", "AC", "AD", "BC", "BD", "CD" }, "combinations('ABCD', 2)")
  T.eq(strs(it.combinations({ 0, 1, 2, 3 }, 3)), { "012", "013", "023", "123" }, "combinations(range(4), 3)")
  T.eq(L(it.combinations("AB", 3)), {}, "combinations r > n")
  T.eq(L(it.combinations("AB", 0)), { {} }, "combinations r = 0")
  T.eq(strs(it.combinations_with_replacement("ABC", 2)), { "AA", "AB", "AC", "BB", "BC", "CC" },
    "combinations_with_replacement('ABC', 2)")
  T.eq(L(it.combinations_with_replacement("", 2)), {}, "cwr of nothing")
  T.eq(L(it.combinations_with_replacement("", 0)), { {} }, "cwr r = 0 of nothing")
  -- counts: n!/(n-r)!, C(n, r), C(n+r-1, r)
  T.eq(#L(it.permutations({ 1, 2, 3, 4, 5 }, 3)), 60, "P(5, 3)")
  T.eq(#L(it.combinations({ 1, 2, 3, 4, 5, 6 }, 3)), 20, "C(6, 3)")
  T.eq(#L(it.combinations_with_replacement({ 1, 2, 3, 4 }, 3)), 20, "C(6, 3) with replacement")
  T.raises(function() it.permutations("AB", -1) end, "permutations: r must be non-negative")
  T.raises(function() it.combinations("AB") end, "combinations() missing required argument 'r'")
end)

T.test("zip_longest accumulate", function()
  T.eq(strs(it.zip_longest("ABCD", "xy", { fillvalue = "-" })), { "Ax", "By", "C-", "D-" }, "zip_longest fillvalue")
  local z = L(it.zip_longest({ 1, 2 }, { 3 }))
  T.eq(#z, 2, "zip_longest length")
  T.eq(z[2][1], 2, "zip_longest item")
  T.eq(z[2][2], nil, "zip_longest fills None with nil")
  T.eq(L(it.zip_longest({}, {})), {}, "zip_longest of nothing")
  T.eq(L(it.accumulate({ 1, 2, 3, 4, 5 })), { 1, 3, 6, 10, 15 }, "accumulate")
  T.eq(L(it.accumulate({ 1, 2, 3, 4, 5 }, function(a, b) return a * b end)), { 1, 2, 6, 24, 120 }, "accumulate mul")
  T.eq(L(it.accumulate({ 1, 2, 3 }, { initial = 100 })), { 100, 101, 103, 106 }, "accumulate initial")
  T.eq(L(it.accumulate({}, { initial = 7 })), { 7 }, "accumulate of nothing with initial")
  T.eq(L(it.accumulate({})), {}, "accumulate of nothing")
  T.eq(L(it.accumulate({ 3, 4, 6, 2, 1, 9, 0 }, math.max)), { 3, 4, 6, 6, 6, 9, 9 }, "running max")
  T.raises(function() it.zip_longest("A", { fill = 0 }) end, "zip_longest: unknown keyword 'fill'")
end)

T.test("groupby starmap takewhile dropwhile", function()
  local keys, groups = {}, {}
  for k, g in it.groupby("AAAABBBCCDAABBB") do
    keys[#keys + 1] = k
    groups[#groups + 1] = table.concat(L(g))
  end
  T.eq(keys, { "A", "B", "C", "D", "A", "B" }, "groupby keys")
  T.eq(groups, { "AAAA", "BBB", "CC", "D", "AA", "BBB" }, "groupby groups")
  local parity = {}
  for k, g in it.groupby({ 1, 3, 2, 4, 5 }, function(x) return x % 2 end) do
    parity[#parity + 1] = { k, L(g) }
  end
  T.eq(parity, { { 1, { 1, 3 } }, { 0, { 2, 4 } }, { 1, { 5 } } }, "groupby key")
  T.eq(L(it.groupby({})), {}, "groupby of nothing")
  T.eq(L(it.starmap(math.max, { { 2, 5 }, { 3, 2 }, { 10, 3 } })), { 5, 3, 10 }, "starmap")
  T.eq(L(it.starmap(function(a, b) return a ^ b end, { { 2, 5 }, { 3, 2 } })), { 32.0, 9.0 }, "starmap pow")
  T.eq(L(it.takewhile(function(x) return x < 5 end, { 1, 4, 6, 3, 8 })), { 1, 4 }, "takewhile")
  T.eq(L(it.dropwhile(function(x) return x < 5 end, { 1, 4, 6, 3, 8 })), { 6, 3, 8 }, "dropwhile")
  T.eq(L(it.dropwhile(function() return true end, { 1, 2 })), {}, "dropwhile all")
  T.eq(L(it.filterfalse(function(x) return x < 5 end, { 1, 4, 6, 3, 8 })), { 6, 8 }, "filterfalse")
  T.eq(L(it.compress("ABCDEF", { 1, 0, 1, 0, 1, 1 })), { "A", "C", "E", "F" }, "compress")
  T.eq(strs(it.pairwise("ABCD")), { "AB", "BC", "CD" }, "pairwise")
  T.eq(strs(it.batched("ABCDEFG", 3)), { "ABC", "DEF", "G" }, "batched")
end)

T.test("tee iter", function()
  local a, b = it.tee(it.count(1))
  T.eq({ a(), a(), a() }, { 1, 2, 3 }, "tee a")
  T.eq({ b(), b() }, { 1, 2 }, "tee b starts over")
  T.eq(a(), 4, "tee a goes on")
  local x, y, z = it.tee({ "p", "q" }, 3)
  T.eq({ L(x), L(y), L(z) }, { { "p", "q" }, { "p", "q" }, { "p", "q" } }, "tee 3")
  T.eq(select("#", it.tee({ 1 }, 0)), 0, "tee 0")
  T.eq(L("héllo"), { "h", "é", "l", "l", "o" }, "a string gives its UTF-8 characters")
  local rows = L(torch.tensor({ { 1, 2 }, { 3, 4 } }))
  T.eq(#rows, 2, "a tensor gives its rows")
  T.eq(rows[2]:tolist(), { 3, 4 }, "second row")
  local od = require("nn_util").OrderedDict.new({ { "b", 1 }, { "a", 2 } })
  T.eq(L(od), { "b", "a" }, "a dict gives its keys in order")
  T.raises(function() it.list(3) end, "list: 'int' object is not iterable")
end)

local function cuda_checks(dev)
  local x = torch.arange(6, { device = dev }):reshape(3, 2)
  local sums = {}
  for row in it.islice(x, 1, nil) do sums[#sums + 1] = row:sum():item() end
  T.eq(sums, { 5, 9 }, "rows of a " .. dev .. " tensor")
  local acc = L(it.accumulate(x))
  T.eq(acc[3]:tolist(), { 6, 9 }, "accumulate of " .. dev .. " rows")
  T.eq(acc[3].device.type, "cuda", "accumulated on the device")
end

if torch.cuda.is_available() then
  T.test("cuda", function() cuda_checks("cuda") end)
else
  T.skip("no CUDA", 3)
end
