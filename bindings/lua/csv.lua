-- csv: Python's csv module for nnrepl: `local csv = require "csv"`.
--   for row in csv.reader(io.open("a.csv")) do ... end       -- rows are Lua lists of strings
--   local w = csv.writer(io.open("b.csv", "w")); w:writerow({"a", 1, 2.5}); w:writerows(rows)
--   for d in csv.DictReader(f) do print(d.name) end          -- fieldnames from the first row
--   local dw = csv.DictWriter(f, {"x", "y"}); dw:writeheader(); dw:writerow({x = 1, y = 2})
-- A reader takes a file, a list of lines, or an iterator function giving lines; the format
-- parameters (delimiter, quotechar, escapechar, doublequote, skipinitialspace, lineterminator,
-- quoting, strict) come as a dialect name / table and a keyword table, as Python's. Writers
-- write to anything with a :write(s) method and end rows with "\r\n" (the excel dialect).
-- None (nil) cells cannot sit inside a Lua list: use csv.None where a writer needs one.
local U = require "nn_util"

local M = {}

M.QUOTE_MINIMAL, M.QUOTE_ALL, M.QUOTE_NONNUMERIC, M.QUOTE_NONE, M.QUOTE_STRINGS, M.QUOTE_NOTNULL = 0, 1, 2, 3, 4, 5
M.None = setmetatable({}, { __tostring = function() return "None" end, __name = "NoneType" })
M.__version__ = "1.0"

-- csv.Error is raised as "_csv.Error: ..." text
local function csv_error(fmt, ...) U.errorf("_csv.Error: " .. fmt, ...) end

local FIELDS = { "delimiter", "quotechar", "escapechar", "doublequote", "skipinitialspace", "lineterminator",
  "quoting", "strict" }

local Dialect = {}
Dialect.__index = Dialect
Dialect.__name = "csv.Dialect"

local KNOWN = {}
for _, k in ipairs(FIELDS) do KNOWN[k] = true end

-- a dialect: base's parameters with those of over (a keyword table) on top
local function make_dialect(fname, base, over)
  local t = {}
  for _, k in ipairs(FIELDS) do t[k] = base[k] end
  for k, v in pairs(over or {}) do
    if k ~= "dialect" then
      if not KNOWN[k] then U.errorf("TypeError: %s: '%s' is an invalid keyword argument", fname, tostring(k)) end
      t[k] = v
    end
  end
  return setmetatable(t, Dialect)
end

M.excel = make_dialect("excel", { delimiter = ",", quotechar = '"', doublequote = true, skipinitialspace = false,
  lineterminator = "\r\n", quoting = M.QUOTE_MINIMAL, strict = false })
M.excel_tab = make_dialect("excel_tab", M.excel, { delimiter = "\t" })
M.unix_dialect = make_dialect("unix_dialect", M.excel, { lineterminator = "\n", quoting = M.QUOTE_ALL })

local registry = { excel = M.excel, ["excel-tab"] = M.excel_tab, unix = M.unix_dialect }

local function char_param(name, v, allow_none)
  if v == nil and allow_none then return nil end
  if type(v) ~= "string" or utf8.len(v) ~= 1 then
    U.errorf('TypeError: "%s" must be a 1-character string', name)
  end
  return v
end

-- a checked dialect from a dialect name or table (d) and keyword overrides; quotechar = false
-- stands for Python's None
local function resolve(fname, d, opts)
  if type(d) == "string" then d = registry[d] or csv_error("unknown dialect")
  elseif d == nil then d = M.excel end
  local out = make_dialect(fname, d, opts)
  for _, k in ipairs(FIELDS) do
    if out[k] == nil and k ~= "escapechar" then out[k] = M.excel[k] end
  end
  if out.quotechar == false then out.quotechar = nil end
  char_param("delimiter", out.delimiter)
  char_param("escapechar", out.escapechar, true)
  if math.type(out.quoting) ~= "integer" or out.quoting < 0 or out.quoting > 5 then
    U.error('TypeError: bad "quoting" value')
  end
  char_param("quotechar", out.quotechar, out.quoting == M.QUOTE_NONE)
  if type(out.lineterminator) ~= "string" then U.error('TypeError: "lineterminator" must be a string') end
  return out
end

-- the dialect argument and the keyword table at the end of ...
local function dialect_args(fname, ...)
  local d, opts = ...
  if type(d) == "table" and getmetatable(d) == nil then d, opts = d.dialect, d end
  return resolve(fname, d, opts)
end

function M.register_dialect(name, ...)
  if type(name) ~= "string" then U.error("TypeError: dialect name must be a string") end
  registry[name] = dialect_args("register_dialect", ...)
end
function M.unregister_dialect(name)
  if not registry[name] then csv_error("unknown dialect") end
  registry[name] = nil
end
function M.get_dialect(name) return registry[name] or csv_error("unknown dialect") end
function M.list_dialects()
  local out = {}
  for k in pairs(registry) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- ---- reading ----

-- an iterator over the lines of src: a file (lines keep their ends), a list, or a function
local function line_source(src)
  if type(src) == "function" then return src end
  if io.type(src) == "file" then return function() return src:read("L") end end
  if type(src) == "table" then
    local i = 0
    return function()
      i = i + 1
      return src[i]
    end
  end
  if type(src) == "string" then U.error("TypeError: csv.reader: give a list of lines or a file, not a str (Python would read it character by character)") end
  U.errorf("TypeError: argument 1 must be an iterator, not %s", U.typename(src))
end

local Reader = {}
Reader.__index = Reader
Reader.__name = "_csv.reader"

-- Python's _csv parser: one state machine fed a line at a time, the end of each line as "EOL"
function Reader:_feed(line)
  local d = self.dialect
  local delim, quote, esc = d.delimiter, d.quoting ~= M.QUOTE_NONE and d.quotechar or nil, d.escapechar
  local i, n = 1, #line
  while i <= n + 1 do
    local c = i <= n and line:sub(i, i) or "EOL"
    local st = self.state
    local nl = c == "\n" or c == "\r"
    if st == "start_record" then
      if c == "EOL" then self.done = true; return end -- an empty line: []
      if nl then self.state = "eat_crnl"; i = i + 1; goto continue end
      self.state = "start_field"
      st = "start_field"
    end
    if st == "start_field" then
      if nl or c == "EOL" then
        self:_save(); self:_end(c)
      elseif c == quote then
        self.state, self.quoted = "in_quoted_field", true
      elseif c == esc then
        self.state = "escaped_char"
      elseif c == " " and d.skipinitialspace then -- skip
      elseif c == delim then
        self:_save()
      else
        self.field[#self.field + 1] = c
        self.state = "in_field"
      end
    elseif st == "escaped_char" then
      if nl then self.field[#self.field + 1] = c; self.state = "after_escaped_crnl"
      else self.field[#self.field + 1] = c == "EOL" and "\n" or c; self.state = "in_field" end
    elseif st == "after_escaped_crnl" and c == "EOL" then -- the line ends inside the field
    elseif st == "in_field" or st == "after_escaped_crnl" then
      if nl or c == "EOL" then self:_save(); self:_end(c)
      elseif c == esc then self.state = "escaped_char"
      elseif c == delim then self:_save(); self.state = "start_field"
      else
        -- a run of plain characters at once
        local j = i
        while j < n do
          local c2 = line:sub(j + 1, j + 1)
          if c2 == delim or c2 == esc or c2 == "\n" or c2 == "\r" then break end
          j = j + 1
        end
        self.field[#self.field + 1] = line:sub(i, j)
        self.state = "in_field"
        i = j
      end
    elseif st == "in_quoted_field" then
      if c == "EOL" then -- a list's line without its end: the field goes on
      elseif c == esc then self.state = "escape_in_quoted_field"
      elseif c == quote then self.state = d.doublequote and "quote_in_quoted_field" or "in_field"
      else self.field[#self.field + 1] = c end
    elseif st == "escape_in_quoted_field" then
      self.field[#self.field + 1] = c == "EOL" and "\n" or c
      self.state = "in_quoted_field"
    elseif st == "quote_in_quoted_field" then
      if c == quote then self.field[#self.field + 1] = c; self.state = "in_quoted_field"
      elseif c == delim then self:_save(); self.state = "start_field"
      elseif nl or c == "EOL" then self:_save(); self:_end(c)
      elseif not d.strict then self.field[#self.field + 1] = c; self.state = "in_field"
      else csv_error("'%s' expected after '%s'", delim, quote) end
    elseif st == "eat_crnl" then
      if c == "EOL" then self.state = "start_record"; self.done = true
      elseif not nl then
        csv_error("new-line character seen in unquoted field - do you need to open the file with newline=''?")
      end
    end
    i = i + 1
    ::continue::
  end
end

function Reader:_save()
  local s = table.concat(self.field)
  self.field = {}
  if not self.quoted and self.dialect.quoting == M.QUOTE_NONNUMERIC and s ~= "" then
    local v = tonumber(s)
    if not v or s:find("^%s*0[xX]") then U.errorf("ValueError: could not convert string to float: '%s'", s) end
    s = v + 0.0
  end
  self.quoted = false
  self.row[#self.row + 1] = s
  self.state = "start_field"
end

function Reader:_end(c)
  self.state = c == "EOL" and "start_record" or "eat_crnl"
  if c == "EOL" then self.done = true end
end

-- the next row (a list), or nil at the end
function Reader:__next()
  self.row, self.field, self.done, self.quoted = {}, {}, false, false
  repeat
    local line = self.lines()
    if line == nil then
      if #self.field > 0 or self.state == "in_quoted_field" then
        if self.dialect.strict then csv_error("unexpected end of data") end
        self:_save()
        self.state = "start_record"
        return self.row
      end
      return nil
    end
    if type(line) ~= "string" then
      csv_error("iterator should return strings, not %s (the file should be opened in text mode)", U.typename(line))
    end
    self.line_num = self.line_num + 1
    self:_feed(line)
  until self.done and self.state == "start_record"
  return self.row
end
Reader.__call = function(self) return self:__next() end

-- csv.reader(lines[, dialect][, {delimiter=, quotechar=, ...}])
function M.reader(src, ...)
  return setmetatable({ lines = line_source(src), dialect = dialect_args("reader", ...), line_num = 0,
    state = "start_record" }, Reader)
end

-- the fields of one line as Python's csv.reader reads them (for the datasets' annotation files)
function M.parse_line(line, ...)
  return M.reader({ line }, ...):__next() or {}
end

-- ---- writing ----

local Writer = {}
Writer.__index = Writer
Writer.__name = "_csv.writer"

local function is_number(v) return type(v) == "number" end

-- one cell as written: quoted, escaped or bare as the dialect's quoting asks
function Writer:_cell(v, only)
  local d = self.dialect
  local s
  if v == nil or v == M.None then s = ""
  elseif type(v) == "string" then s = v
  else s = U.pystr(v) end
  local q = d.quoting
  local want_quote = q == M.QUOTE_ALL or (q == M.QUOTE_NONNUMERIC and not is_number(v))
    or (q == M.QUOTE_STRINGS and type(v) == "string") or (q == M.QUOTE_NOTNULL and v ~= nil and v ~= M.None)
  -- characters that need quoting (or escaping under QUOTE_NONE)
  local specials = { [d.delimiter] = true, ["\n"] = true, ["\r"] = true }
  if d.quotechar then specials[d.quotechar] = true end
  if d.escapechar then specials[d.escapechar] = true end
  for ch in d.lineterminator:gmatch(".") do specials[ch] = true end
  local out = {}
  for ch in s:gmatch(".") do
    if specials[ch] then
      if q == M.QUOTE_NONE then
        if not d.escapechar then csv_error("need to escape, but no escapechar set") end
        out[#out + 1] = d.escapechar
      else
        want_quote = true
        if ch == d.quotechar then
          if d.doublequote then out[#out + 1] = ch
          elseif d.escapechar then out[#out + 1] = d.escapechar
          else csv_error("need to escape, but no escapechar set") end
        elseif ch == d.escapechar then
          out[#out + 1] = ch
        end
      end
    end
    out[#out + 1] = ch
  end
  s = table.concat(out)
  if only and s == "" then -- a row of one empty field would read back as []
    if q == M.QUOTE_NONE then csv_error("single empty field record must be quoted") end
    want_quote = true
  end
  if want_quote and q ~= M.QUOTE_NONE then s = d.quotechar .. s .. d.quotechar end
  return s
end

-- writes one row (a list) and returns what the file's write returned
function Writer:writerow(row)
  if type(row) ~= "table" then
    csv_error("iterable expected, not %s", U.typename(row))
  end
  local n = row.n or #row
  local cells = {}
  for i = 1, n do cells[i] = self:_cell(row[i], n == 1) end
  local line = table.concat(cells, self.dialect.delimiter) .. self.dialect.lineterminator
  local r = self.file:write(line)
  if io.type(self.file) == "file" then return #line end
  return r
end
function Writer:writerows(rows)
  for _, row in ipairs(rows) do self:writerow(row) end
end

-- csv.writer(file[, dialect][, {delimiter=, quoting=, lineterminator=, ...}])
function M.writer(file, ...)
  if not (io.type(file) == "file" or (type(file) == "table" and file.write)) then
    U.error("TypeError: argument 1 must have a \"write\" method")
  end
  return setmetatable({ file = file, dialect = dialect_args("writer", ...) }, Writer)
end

-- ---- dictionaries ----

local DictReader = {}
DictReader.__index = DictReader
DictReader.__name = "csv.DictReader"

-- the next row as a table {fieldname = value}: missing values are restval, extra values a
-- list under restkey (dropped when there is no restkey: Lua has no None key); empty lines are skipped
function DictReader:__next()
  local names = self:_fieldnames()
  local row = self.reader:__next()
  while row and #row == 0 do row = self.reader:__next() end
  if row == nil then return nil end
  self.line_num = self.reader.line_num
  local d = {}
  for i, name in ipairs(names) do
    if row[i] ~= nil then d[name] = row[i] else d[name] = self.restval end
  end
  if #row > #names and self.restkey ~= nil then
    d[self.restkey] = table.move(row, #names + 1, #row, 1, {})
  end
  return d
end
DictReader.__call = function(self) return self:__next() end

function DictReader:_fieldnames()
  if self.fieldnames == nil then
    self.fieldnames = self.reader:__next()
    self.line_num = self.reader.line_num
  end
  return self.fieldnames or {}
end

-- csv.DictReader(f[, {fieldnames=, restkey=, restval=, dialect=, ...format parameters}])
function M.DictReader(src, ...)
  local args = table.pack(...)
  local opts = args[args.n]
  if not (type(opts) == "table" and getmetatable(opts) == nil and rawget(opts, 1) == nil) then opts = {} end
  local fieldnames = opts.fieldnames
  if type(args[1]) == "table" and args[1] ~= opts then fieldnames = args[1] end -- DictReader(f, fieldnames)
  local fmt = {}
  for k, v in pairs(opts) do
    if k ~= "fieldnames" and k ~= "restkey" and k ~= "restval" then fmt[k] = v end
  end
  local self = setmetatable({ restkey = opts.restkey, restval = opts.restval, line_num = 0 }, DictReader)
  self.reader = M.reader(src, fmt)
  if fieldnames then self.fieldnames = table.move(fieldnames, 1, #fieldnames, 1, {}) end
  return self
end

local DictWriter = {}
DictWriter.__index = DictWriter
DictWriter.__name = "csv.DictWriter"

function DictWriter:writeheader()
  return self.writer:writerow(self.fieldnames)
end

function DictWriter:writerow(d)
  if self.extrasaction == "raise" then
    local known, wrong = {}, {}
    for _, f in ipairs(self.fieldnames) do known[f] = true end
    for k in pairs(d) do if not known[k] then wrong[#wrong + 1] = U.pyrepr(k) end end
    if #wrong > 0 then
      table.sort(wrong)
      U.errorf("ValueError: dict contains fields not in fieldnames: %s", table.concat(wrong, ", "))
    end
  end
  local row = { n = #self.fieldnames }
  for i, f in ipairs(self.fieldnames) do
    local v = d[f]
    if v == nil then v = self.restval end
    row[i] = v
  end
  return self.writer:writerow(row)
end
function DictWriter:writerows(rows)
  for _, d in ipairs(rows) do self:writerow(d) end
end

-- csv.DictWriter(f, fieldnames[, {restval="", extrasaction="raise", dialect=, ...format parameters}])
function M.DictWriter(file, fieldnames, opts)
  if type(fieldnames) ~= "table" then U.error("TypeError: DictWriter: fieldnames must be a list") end
  opts = opts or {}
  local extras = opts.extrasaction or "raise"
  if extras ~= "raise" and extras ~= "ignore" then
    U.errorf("ValueError: extrasaction (%s) must be 'raise' or 'ignore'", tostring(extras))
  end
  local fmt = {}
  for k, v in pairs(opts) do
    if k ~= "restval" and k ~= "extrasaction" then fmt[k] = v end
  end
  local restval = opts.restval
  if restval == nil then restval = "" end
  return setmetatable({ fieldnames = fieldnames, restval = restval, extrasaction = extras,
    writer = M.writer(file, fmt) }, DictWriter)
end

return M
