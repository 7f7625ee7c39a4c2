-- unicodedata (category, NFD), glob.glob and torch.Generator({device = d}):
-- what the NLP-from-scratch tutorial ports need. Expected values are Unicode's own data
-- (e.g. U+1EC5 "ễ" = e + U+0302 + U+0303) and files made here.
local T = ...
local unicodedata = require "unicodedata"
local glob = require "glob"

T.test("unicodedata.normalize NFD", function()
  local nfd = function(s) return unicodedata.normalize("NFD", s) end
  T.eq(nfd("é"), "e\u{301}", "é")
  T.eq(nfd("Ślusàrski"), "S\u{301}lusa\u{300}rski", "Ślusàrski")
  T.eq(nfd("Å"), "A\u{30A}", "Å")
  T.eq(nfd("ǖ"), "u\u{308}\u{304}", "ǖ decomposes twice")
  T.eq(nfd("ễ"), "e\u{302}\u{303}", "Vietnamese ễ")
  T.eq(nfd("Ça"), "C\u{327}a", "Ç")
  T.eq(nfd("ßŒł"), "ßŒł", "letters without a canonical decomposition")
  T.eq(nfd("Ǆ"), "Ǆ", "a compatibility-only decomposition stays (NFKD's)")
  T.eq(nfd("plain ASCII, 123."), "plain ASCII, 123.", "ASCII")
  T.eq(nfd(""), "", "empty")
  T.eq(unicodedata.normalize("NFC", "e\u{301}"), "é", "NFC composes")
  T.raises(function() unicodedata.normalize("NFX", "é") end, "invalid normalization form")
  T.raises(function() unicodedata.normalize("NFD", 5) end, "normalize() argument 2 must be str, not number")
  T.raises(function() unicodedata.normalize("NFD", "\xff") end, "normalize(): the string is not valid UTF-8")
end)

T.test("unicodedata.category", function()
  local want = {
    { "A", "Lu" }, { "z", "Ll" }, { " ", "Zs" }, { "\t", "Cc" }, { "1", "Nd" }, { ".", "Po" }, { "'", "Po" },
    { "\u{301}", "Mn" }, { "\u{300}", "Mn" }, { "\u{36F}", "Mn" }, { "\u{370}", "Lu" }, { "é", "Ll" }, { "É", "Lu" },
    { "ß", "Ll" }, { "\u{A0}", "Zs" }, { "\u{202F}", "Zs" }, { "\u{2019}", "Pf" }, { "€", "Sc" }, { "中", "Lo" },
    { "\u{FFFF}", "Cn" }, { "\u{1EC5}", "Ll" }, { "\u{0}", "Cc" },
  }
  for _, w in ipairs(want) do
    T.eq(unicodedata.category(w[1]), w[2], string.format("category U+%04X", utf8.codepoint(w[1])))
  end
  T.raises(function() unicodedata.category("ab") end, "category() argument must be a unicode character, not str")
  T.raises(function() unicodedata.category("") end, "category() argument must be a unicode character, not str")
  T.raises(function() unicodedata.category(65) end, "category() argument must be a unicode character, not number")
  T.eq(unicodedata.category("\u{1F600}"), "So", "beyond the BMP")
  -- the tutorials' unicodeToAscii: NFD, then drop the combining marks
  local kept = {}
  for _, cp in utf8.codes(unicodedata.normalize("NFD", "O'Néàl")) do
    local c = utf8.char(cp)
    if unicodedata.category(c) ~= "Mn" then kept[#kept + 1] = c end
  end
  T.eq(table.concat(kept), "O'Neal", "unicodeToAscii(\"O'Néàl\")")
end)

T.test("glob.glob", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p '" .. dir .. "/names'")
  for _, n in ipairs({ "b.txt", "a.txt", "c.md", ".hidden.txt", "x1.txt" }) do
    local f = assert(io.open(dir .. "/names/" .. n, "w"))
    f:write("x")
    f:close()
  end
  local function names(pat) return table.concat(glob.glob(dir .. "/names/" .. pat), " "):gsub(dir .. "/names/", "") end
  T.eq(names("*.txt"), "a.txt b.txt x1.txt", "*.txt, sorted, no hidden file")
  T.eq(names(".*"), ".hidden.txt", "a leading dot matches a pattern's dot")
  T.eq(names("?.txt"), "a.txt b.txt", "?")
  T.eq(names("[ab].txt"), "a.txt b.txt", "[ab]")
  T.eq(names("[!ab]*"), "c.md x1.txt", "[!ab]")
  T.eq(names("a.txt"), "a.txt", "no wildcard, the file exists")
  T.eq(#glob.glob(dir .. "/names/none.txt"), 0, "no wildcard, no file")
  T.eq(#glob.glob(dir .. "/missing/*.txt"), 0, "a missing folder: an empty list")
  T.eq(#glob.glob(dir .. "/names/*.csv"), 0, "nothing matches")
  T.raises(function() glob.glob(dir .. "/*/a.txt") end, "~glob(): nnrepl matches wildcards in the last path component only")
  T.raises(function() glob.glob(nil) end, "glob() argument must be a str, not nil")
  os.execute("rm -rf '" .. dir .. "'")
end)

local function generator_checks(device)
  local g = torch.Generator({ device = device })
  T.eq(g.device.type, device, device .. ": Generator({device = ...}).device")
  T.eq(torch.Generator({ device = torch.device(device) }).device.type, device, device .. ": a torch.device value")
  local a = torch.randperm(10, { generator = torch.Generator({ device = device }):manual_seed(7) })
  local b = torch.randperm(10, { generator = torch.Generator(device):manual_seed(7) })
  T.check(torch.equal(a, b), device .. ": the keyword form draws as the positional one")
  local parts = torch.utils.data.random_split(torch.utils.data.TensorDataset(torch.arange(20)), { .85, .15 },
    { generator = torch.Generator({ device = device }):manual_seed(2024) })
  T.eq({ #parts[1], #parts[2] }, { 17, 3 }, device .. ": random_split of 20 by .85/.15")
end

T.test("torch.Generator({device = d})", function()
  generator_checks("cpu")
  T.eq(torch.Generator({}).device.type, "cpu", "an empty table: the CPU")
  T.raises(function() torch.Generator({ devise = "cpu" }) end, "Generator() got an unexpected keyword argument 'devise'")
end)

T.test("cuda", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA", 5) end
  generator_checks("cuda")
end)
