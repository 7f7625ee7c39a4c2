-- unicodedata (bindings/unicodedata.c, utf8proc): the module's names, argument checks and Python's
-- error texts. Values are CPython 3.11's (python3 -c 'import unicodedata; ...'); the exhaustive
-- comparison with CPython is tests/interp/test_pystr_cpython.sh.
local T = ...
local ud = require "unicodedata"

T.test("unicodedata: names", function()
  for _, name in ipairs({ "normalize", "is_normalized", "category", "bidirectional", "combining", "mirrored", "decimal" }) do
    T.eq(type(ud[name]), "function", name)
  end
  -- left out: utf8proc has no character names, numeric values or East Asian widths
  for _, name in ipairs({ "name", "lookup", "numeric", "digit", "east_asian_width", "decomposition" }) do
    T.eq(ud[name], nil, name .. " is left out")
  end
  T.check(ud.unidata_version:match("^%d+%.%d+%.%d+$"), "unidata_version " .. ud.unidata_version)
  T.eq(require "unicodedata", ud, "require gives the same table")
end)

T.test("unicodedata: values", function()
  T.eq(ud.category("ǅ"), "Lt")
  T.eq(ud.category("\u{10FFFF}"), "Cn")
  T.eq(ud.category("\u{E000}"), "Co")
  T.eq(ud.bidirectional("a"), "L")
  T.eq(ud.bidirectional("\u{5D0}"), "R")
  T.eq(ud.bidirectional("\u{378}"), "", "unassigned")
  T.eq(ud.combining("\u{301}"), 230)
  T.eq(ud.combining("a"), 0)
  T.eq(ud.mirrored("("), 1)
  T.eq(ud.mirrored("a"), 0)
  T.eq(ud.decimal("7"), 7)
  T.eq(ud.decimal("\u{663}"), 3, "ARABIC-INDIC DIGIT THREE")
  T.eq(ud.decimal("\u{1D7D9}"), 1, "MATHEMATICAL DOUBLE-STRUCK DIGIT ONE")
  T.eq(ud.decimal("x", -1), -1, "default")
  T.eq(ud.normalize("NFKC", "ﬁ"), "fi")
  T.eq(ud.normalize("NFKD", "²"), "2")
  T.eq(ud.normalize("NFD", "한"), "\u{1112}\u{1161}\u{11AB}")
  T.eq(ud.normalize("NFC", "\u{1112}\u{1161}\u{11AB}"), "한")
  T.eq(ud.normalize("NFD", "a\u{301}\u{316}"), "a\u{316}\u{301}", "canonical order")
  T.eq(ud.is_normalized("NFC", "é"), true)
  T.eq(ud.is_normalized("NFD", "é"), false)
end)

T.test("unicodedata: errors", function()
  T.raises(function() ud.category("ab") end, "category() argument must be a unicode character, not str")
  T.raises(function() ud.bidirectional("") end, "bidirectional() argument must be a unicode character, not str")
  T.raises(function() ud.combining(1) end, "combining() argument must be a unicode character, not number")
  T.raises(function() ud.mirrored("\xff") end, "mirrored(): the string is not valid UTF-8")
  T.raises(function() ud.category("\xed\xa0\x80") end, "category(): the string is not valid UTF-8") -- a surrogate
  T.raises(function() ud.decimal("x") end, "not a decimal")
  T.raises(function() ud.normalize("XYZ", "a") end, "invalid normalization form")
  T.raises(function() ud.is_normalized("nfc", "a") end, "invalid normalization form")
  T.raises(function() ud.normalize(nil, "a") end, "normalize() argument 1 must be str, not nil")
  T.raises(function() ud.normalize("NFC", {}) end, "normalize() argument 2 must be str, not table")
  T.raises(function() ud.normalize("NFC", "a\xc3") end, "normalize(): the string is not valid UTF-8")
end)
