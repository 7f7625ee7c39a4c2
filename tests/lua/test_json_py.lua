-- Python's json module (require "json"): expected texts are Python 3.13's json.dumps outputs and
-- JSONDecodeError messages, written out by hand.
local T = ...
local json = require "json"
local dumps, loads = json.dumps, json.loads

T.test("dumps: scalars as Python writes them", function()
  T.eq(dumps(nil), "null"); T.eq(dumps(json.null), "null")
  T.eq(dumps(true), "true"); T.eq(dumps(false), "false")
  T.eq(dumps(0), "0"); T.eq(dumps(-7), "-7"); T.eq(dumps(math.maxinteger), "9223372036854775807")
  local floats = { { 1.0, "1.0" }, { 0.1, "0.1" }, { 1e-05, "1e-05" }, { 1e16, "1e+16" }, { 1e15, "1000000000000000.0" },
    { 123456789.125, "123456789.125" }, { 1 / 3, "0.3333333333333333" }, { 2.0 ^ -1074, "5e-324" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" }, { 0.0001, "0.0001" }, { 0.00001234, "1.234e-05" },
    { -2.5, "-2.5" }, { 100.0, "100.0" } }
  for _, c in ipairs(floats) do T.eq(dumps(c[1]), c[2], c[2]) end
  T.eq(dumps(-0.0), "-0.0")
  T.eq(dumps({ math.huge, -math.huge, 0 / 0 }), "[Infinity, -Infinity, NaN]")
  T.raises(function() dumps(math.huge, { allow_nan = false }) end,
    "ValueError: Out of range float values are not JSON compliant: inf")
  T.raises(function() dumps({ 1, { -math.huge } }, { allow_nan = false }) end,
    "ValueError: Out of range float values are not JSON compliant: -inf")
  T.raises(function() dumps({ x = 0 / 0 }, { allow_nan = false }) end,
    "ValueError: Out of range float values are not JSON compliant: nan")
end)

T.test("dumps: strings, ensure_ascii", function()
  T.eq(dumps('a"b\\c/d'), [["a\"b\\c/d"]])
  T.eq(dumps("\0\1\b\f\n\r\t\31\127"), [["\u0000\u0001\b\f\n\r\t\u001f\u007f"]])
  T.eq(dumps("\0\1\b\f\n\r\t\31\127", { ensure_ascii = false }), '"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\127"')
  T.eq(dumps("é€😀𐍈\u{FFFF}"), [["\u00e9\u20ac\ud83d\ude00\ud800\udf48\uffff"]])
  T.eq(dumps("é€😀", { ensure_ascii = false }), '"é€😀"')
  T.eq(dumps({ ["ключ"] = "значение" }), [[{"\u043a\u043b\u044e\u0447": "\u0437\u043d\u0430\u0447\u0435\u043d\u0438\u0435"}]])
  T.raises(function() dumps("a\255b") end, "~UnicodeDecodeError")
end)

T.test("dumps: arrays, objects, key order", function()
  T.eq(dumps({ 1, 2, 3 }), "[1, 2, 3]")
  T.eq(dumps({}), "{}")
  T.eq(dumps(json.array({})), "[]"); T.eq(dumps(json.array()), "[]")
  T.eq(dumps({ 1, json.null, "x" }), '[1, null, "x"]')
  T.eq(dumps({ b = 1, a = 2, c = { 1.5, true } }), '{"a": 2, "b": 1, "c": [1.5, true]}')
  T.eq(dumps({ b = 1, a = 2 }, { sort_keys = true }), '{"a": 2, "b": 1}')
  T.eq(dumps({ [2] = "b", [10] = "a", x = 1 }), '{"2": "b", "10": "a", "x": 1}')
  T.eq(dumps({ [1] = 1, [3] = 3 }), '{"1": 1, "3": 3}')
  T.eq(dumps({ [0] = "z", "a" }), '{"0": "z", "1": "a"}')
  T.eq(dumps({ [true] = 1, [false] = 0 }), '{"false": 0, "true": 1}')
  T.eq(dumps({ [1.5] = 1, [json.null] = 2 }), '{"null": 2, "1.5": 1}')
  T.eq(dumps(torch.zeros(2, 3):size()), "[2, 3]")
  T.raises(function() dumps({ [{}] = 1 }) end, "TypeError: keys must be str, int, float, bool or None, not table")
  T.eq(dumps({ [{}] = 1, k = 3 }, { skipkeys = true }), '{"k": 3}')
end)

T.test("dumps: indent and separators", function()
  local v = { a = { 1, { b = json.null } }, c = "x" }
  T.eq(dumps(v, { indent = 2 }), '{\n  "a": [\n    1,\n    {\n      "b": null\n    }\n  ],\n  "c": "x"\n}')
  T.eq(dumps({ 1, 2 }, { indent = 0 }), "[\n1,\n2\n]")
  T.eq(dumps({ 1, 2 }, { indent = -1 }), "[\n1,\n2\n]")
  T.eq(dumps({ 1, 2 }, { indent = "\t" }), "[\n\t1,\n\t2\n]")
  T.eq(dumps({ 1, 2 }, { indent = 2, separators = { ", ", ": " } }), "[\n  1, \n  2\n]")
  T.eq(dumps({ a = {}, b = json.array() }, { indent = 2 }), '{\n  "a": {},\n  "b": []\n}')
  T.eq(dumps({ a = { 1, 2 }, b = "x" }, { separators = { ",", ":" } }), '{"a":[1,2],"b":"x"}')
  T.eq(dumps({}, { indent = 4 }), "{}")
  T.raises(function() dumps({ 1 }, { separators = { "," } }) end, "~separators must be a list of two strings")
  T.raises(function() dumps(1, { indnt = 2 }) end, "bad argument #2 to 'dumps' (unknown keyword 'indnt')")
end)

T.test("dumps: default, unsupported values, cycles", function()
  local t = torch.tensor({ 1.5, 2 })
  T.eq(dumps({ t = t }, { default = function(o) return o:tolist() end }), '{"t": [1.5, 2.0]}')
  T.raises(function() dumps({ t }) end, "TypeError: Object of type Tensor is not JSON serializable")
  T.raises(function() dumps(print) end, "TypeError: Object of type function is not JSON serializable")
  T.raises(function() dumps(nn.Linear(2, 2)) end, "TypeError: Object of type Linear is not JSON serializable")
  local c = { 1 }; c[2] = c
  T.raises(function() dumps(c) end, "ValueError: Circular reference detected")
  local d = { x = {} }; d.x.y = d
  T.raises(function() dumps(d) end, "ValueError: Circular reference detected")
  T.raises(function() dumps(print, { default = function(o) return o end }) end, "ValueError: Circular reference detected")
  local shared = { 1 }
  T.eq(dumps({ shared, shared }), "[[1], [1]]") -- the same table twice is no cycle
end)

T.test("loads: values", function()
  local v = loads("[1, 2.5, -0, -0.0, 1e2, 1E-2, true, false, null]")
  T.eq(v, { 1, 2.5, 0, -0.0, 100.0, 0.01, true, false, json.null })
  T.eq(math.type(v[1]), "integer"); T.eq(math.type(v[3]), "integer"); T.eq(math.type(v[5]), "float")
  T.check(1 / v[4] < 0, "-0.0 keeps its sign")
  T.eq(loads('{"a": {"b": [1]}, "c": "d"}'), { a = { b = { 1 } }, c = "d" })
  T.eq(loads([["\u00e9\ud83d\ude00\n\/\"\\\b\f\r\t"]]), 'é😀\n/"\\\b\f\r\t')
  T.eq(loads([["\uD83D\uDE00"]]), "😀")
  T.eq(loads('"é€"'), "é€")
  T.eq(loads(" \t\n[ 1 ,2 ]\r\n "), { 1, 2 })
  T.eq(loads('{"a": 1, "a": 2}'), { a = 2 })
  T.eq(loads("null"), json.null); T.eq(tostring(json.null), "null")
  local s = loads("[NaN, Infinity, -Infinity]")
  T.check(s[1] ~= s[1]); T.eq(s[2], math.huge); T.eq(s[3], -math.huge)
  T.eq(loads("12345678901234567890"), 12345678901234567890.0) -- past 64 bits: a float
  T.eq(dumps(loads("[]")), "[]"); T.eq(dumps(loads("{}")), "{}")
  T.raises(function() loads(5) end, "TypeError: the JSON object must be str, bytes or bytearray, not int")
  T.raises(function() loads("1", { strct = false }) end, "bad argument #2 to 'loads' (unknown keyword 'strct')")
end)

T.test("loads: hooks and strict", function()
  local seen
  local r = loads('{"b": 1, "a": {"c": 2}}', { object_pairs_hook = function(p) seen = p; return #p end })
  T.eq(r, 2); T.eq(seen, { { "b", 1 }, { "a", 1 } })
  T.eq(loads('{"x": {"y": 1}}', { object_hook = function(d) d.n = 0; return d end }), { x = { y = 1, n = 0 }, n = 0 })
  T.eq(loads("[1.5, 2, NaN]", { parse_float = function(s) return "F" .. s end, parse_int = function(s) return "I" .. s end,
    parse_constant = function(s) return "C" .. s end }), { "F1.5", "I2", "CNaN" })
  T.eq(loads('"a\tb"', { strict = false }), "a\tb")
  T.raises(function() loads('"a\tb"') end, "JSONDecodeError: Invalid control character at: line 1 column 3 (char 2)")
end)

T.test("loads: errors as Python words them", function()
  local cases = {
    { "", "Expecting value: line 1 column 1 (char 0)" },
    { "   ", "Expecting value: line 1 column 4 (char 3)" },
    { "[1, 2,]", "Illegal trailing comma before end of array: line 1 column 6 (char 5)" },
    { '{"a": 1,}', "Illegal trailing comma before end of object: line 1 column 8 (char 7)" },
    { "{'name': 'Mia'}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { '{"a": 1, 2}', "Expecting property name enclosed in double quotes: line 1 column 10 (char 9)" },
    { '{"done": True}', "Expecting value: line 1 column 10 (char 9)" },
    { '{"level": 7, "coins": 120', "Expecting ',' delimiter: line 1 column 26 (char 25)" },
    { '{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)" },
    { "[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)" },
    { "[1", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "[1] x", "Extra data: line 1 column 5 (char 4)" },
    { "01", "Extra data: line 1 column 2 (char 1)" },
    { "1.", "Extra data: line 1 column 2 (char 1)" },
    { "1e", "Extra data: line 1 column 2 (char 1)" },
    { "-", "Expecting value: line 1 column 1 (char 0)" },
    { "[-]", "Expecting value: line 1 column 2 (char 1)" },
    { ".5", "Expecting value: line 1 column 1 (char 0)" },
    { "+1", "Expecting value: line 1 column 1 (char 0)" },
    { "nul", "Expecting value: line 1 column 1 (char 0)" },
    { '"abc', "Unterminated string starting at: line 1 column 1 (char 0)" },
    { '["a\\', "Unterminated string starting at: line 1 column 2 (char 1)" },
    { '["a\\x"]', "Invalid \\escape: line 1 column 4 (char 3)" },
    { '"\\u12"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { '"\\u12zz"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { '"\\ud83d\\uZZZZ"', "Invalid \\uXXXX escape: line 1 column 9 (char 8)" },
    { '{\n  "a": 1,\n  "b": }', "Expecting value: line 3 column 8 (char 19)" },
    { '["é", x]', "Expecting value: line 1 column 7 (char 6)" },
    { "\239\187\191[]", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)" },
  }
  for _, c in ipairs(cases) do
    T.raises(function() loads(c[1]) end, "JSONDecodeError: " .. c[2], c[1])
  end
  local ok, err = pcall(loads, "[")
  T.check(not ok and json.JSONDecodeError:matches(err), "JSONDecodeError matches its errors")
  T.check(json.decoder.JSONDecodeError == json.JSONDecodeError)
  T.check(not json.JSONDecodeError:matches(select(2, pcall(dumps, print))), "and not a TypeError")
end)

T.test("round trips", function()
  for _, s in ipairs({ '{"a": [1, 2.5, null, true, [], {}], "b": "\\u00e9\\ud83d\\ude00"}', "[1e-05, 1e+16, -0.0, 0.1]",
    '{"1": [[[]]], "x": {"y": {"z": false}}}' }) do
    T.eq(dumps(loads(s)), s, s)
  end
  local v = { name = "ñ", xs = { 0.1, 0.2 + 0.1, 1 / 7, 5e-324, 2 ^ 60 }, n = 3, nested = { { ok = true } } }
  T.eq(loads(dumps(v)), v)
  T.eq(loads(dumps(v, { indent = 3, ensure_ascii = false })), v)
  T.eq(loads(dumps(v, { separators = { ",", ":" } })), v)
end)

T.test("dump and load: files and paths", function()
  local path = os.tmpname()
  local v = { a = { 1, 2 }, b = "é" }
  json.dump(v, path, { indent = 2 })
  local f = io.open(path, "rb"); local text = f:read("a"); f:close()
  T.eq(text, '{\n  "a": [\n    1,\n    2\n  ],\n  "b": "\\u00e9"\n}')
  T.eq(json.load(path), v)
  f = io.open(path, "wb"); json.dump({ 1, json.null }, f); f:close()
  f = io.open(path, "rb"); T.eq(json.load(f), { 1, json.null }); f:close()
  f = io.open(path, "rb"); T.eq(json.load(f, { parse_int = function(s) return s end }), { "1", json.null }); f:close()
  os.remove(path)
  T.raises(function() json.load(path) end, "~FileNotFoundError")
  T.raises(function() json.load(5) end, "TypeError: json.load: expected a file or a path, got int")
  T.raises(function() json.array("x") end, "TypeError: json.array takes a table, got str")
end)

if torch.cuda.is_available() then
  T.test("CUDA tensors: not serializable, their lists are", function()
    local x = torch.ones(2, { device = "cuda" })
    T.raises(function() dumps(x) end, "TypeError: Object of type Tensor is not JSON serializable")
    T.eq(dumps(x:tolist()), "[1.0, 1.0]")
    T.eq(dumps({ x = x }, { default = function(o) return o:cpu():tolist() end }), '{"x": [1.0, 1.0]}')
  end)
else
  T.skip("no CUDA", 3)
end
