-- require "argparse": Python's argparse for scripts, so a script's flags port as
-- they are (same names, defaults, help text and error messages).
--
--   local argparse = require "argparse"
--   local parser = argparse.ArgumentParser{description = "CV Train"}
--   parser:add_argument("--lr", {type = "float", default = 1e-4, help = "learning rate"})
--   parser:add_argument("--epochs", {type = "int", default = 20})
--   parser:add_argument("--amp", {action = "store_true"})
--   parser:add_argument("-m", "--mode", {choices = {"train", "eval"}, default = "train"})
--   parser:add_argument("data", {nargs = "?", default = "."})
--   local args = parser:parse_args()     -- the script's `arg`; or parse_args{"--lr", "0.1"}
--   print(args.lr, args.epochs, args.amp)
--
-- add_argument takes option strings (or one positional name) and a table of
-- keywords: type ("float", "int", "str"/"string", "bool" (Python's bool: any
-- non-empty string is true) or a function string -> value, which may return nil
-- or raise for a bad value), default, help ("%(default)s" expands), choices,
-- action ("store", "store_true", "store_false", "store_const", "append",
-- "append_const", "count", "help", "version"), required, dest, nargs ("?",
-- "*", "+" or a count), const, metavar, version. The names can also go in the
-- table's list part: parser:add_argument{"--lr", type = "float"}.
-- dest is the first long option without "--", dashes made underscores.
-- "--lr=0.1", "--lr 0.1", "-l0.1", unique prefixes ("--ep") and "--" work as in Python.
-- Sub-commands: local sub = parser:add_subparsers{title = "subcommands", dest = "cmd"};
-- local train = sub:add_parser("train", {help = "..."}); train:add_argument(...) (see below).
--
-- -h/--help prints the help (Python 3.12's layout, width $COLUMNS or 80) and
-- exits 0; errors print the usage and "prog: error: ..." to stderr and exit 2.
-- With ArgumentParser{exit_on_error = false} every error raises a Lua error
-- holding the message instead; parser:exit(status, message) is the one exit
-- point and may be replaced. parser.columns (instead of $COLUMNS) and
-- parser.stdout / parser.stderr (anything with :write) are there for tests.
local M = {}

local ArgumentParser = {}
ArgumentParser.__index = ArgumentParser
ArgumentParser.__name = "ArgumentParser"
M.ArgumentParser = setmetatable(ArgumentParser, {
  __call = function(cls, ...) return cls.new(...) end,
})
M.SUPPRESS = setmetatable({}, { __tostring = function() return "==SUPPRESS==" end })
M.float, M.int, M.str, M.bool = "float", "int", "str", "bool"

local function usage_error(fmt, ...) error(string.format(fmt, ...), 3) end

-- ---- Python-style value text ----

local pyfloat = require("nn_util").pyfloat
-- Python's str / repr of a float (the shortest text that reads back), for ports of print(x)
M.float_repr = pyfloat

local function pystr(v)
  if v == nil then return "None" end
  if type(v) == "boolean" then return v and "True" or "False" end
  if math.type(v) == "float" then return pyfloat(v) end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = type(v[i]) == "string" and "'" .. v[i] .. "'" or pystr(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

local function pyrepr(v)
  if type(v) == "string" then return "'" .. v .. "'" end
  return pystr(v)
end

-- ---- text wrapping (textwrap.wrap on whitespace) ----

local function words_of(text)
  local words = {}
  for w in text:gmatch("%S+") do words[#words + 1] = w end
  return words
end

local function wrap(text, width)
  local lines, line = {}, nil
  for _, w in ipairs(words_of(text)) do
    while #w > width and not line do -- a word longer than a line is cut
      lines[#lines + 1] = w:sub(1, width)
      w = w:sub(width + 1)
    end
    if line and #line + 1 + #w > width then
      lines[#lines + 1] = line
      line = nil
    end
    if #w > 0 then line = line and (line .. " " .. w) or w end
  end
  if line then lines[#lines + 1] = line end
  return lines
end

local function fill(text, width, indent)
  local lines = wrap(text, width - #indent)
  for i, l in ipairs(lines) do lines[i] = indent .. l end
  return table.concat(lines, "\n")
end

-- ---- the parser ----

local PARSER_KEYS = {
  prog = true, usage = true, description = true, epilog = true, add_help = true, exit_on_error = true,
  allow_abbrev = true, argument_default = true, prefix_chars = true, formatter_class = true, parents = true,
  fromfile_prefix_chars = true, conflict_handler = true,
}

local function script_name()
  local a = rawget(_G, "arg")
  local s = type(a) == "table" and a[0] or nil
  if type(s) ~= "string" then return "nnrepl" end
  return s:match("[^/]*$")
end

function ArgumentParser.new(opts, ...)
  if type(opts) == "string" then opts = { description = opts } end -- ArgumentParser("desc")
  opts = opts or {}
  if select("#", ...) > 0 then usage_error("ArgumentParser takes one table of keywords") end
  for k in pairs(opts) do
    if not PARSER_KEYS[k] then usage_error("ArgumentParser() got an unexpected keyword argument '%s'", tostring(k)) end
  end
  local self = setmetatable({
    prog = opts.prog or script_name(),
    usage = opts.usage,
    description = opts.description,
    epilog = opts.epilog,
    exit_on_error = opts.exit_on_error ~= false,
    allow_abbrev = opts.allow_abbrev ~= false,
    argument_default = opts.argument_default,
    actions = {},
    defaults = {},
    option_index = {},
    groups = {},
    mutex = {},
  }, ArgumentParser)
  self.positionals = self:add_argument_group("positional arguments")
  self.optionals = self:add_argument_group("options")
  if opts.add_help ~= false then
    self:add_argument("-h", "--help", { action = "help", help = "show this help message and exit" })
  end
  for _, p in ipairs(opts.parents or {}) do
    for _, a in ipairs(p.actions) do
      if a.action ~= "help" then
        local copy = {}
        for k, v in pairs(a) do copy[k] = v end
        copy.container = nil
        self:_add_action(copy, a.container == p.positionals and self.positionals or
          a.container == p.optionals and self.optionals or self.optionals)
      end
    end
  end
  return self
end

-- ---- groups ----

local Group = {}
Group.__index = Group

function ArgumentParser:add_argument_group(title, description)
  if type(title) == "table" then title, description = title.title, title.description end
  local g = setmetatable({ parser = self, title = title, description = description, actions = {} }, Group)
  self.groups[#self.groups + 1] = g
  return g
end

function ArgumentParser:add_mutually_exclusive_group(opts)
  local g = setmetatable({ parser = self, mutex = true, required = opts and opts.required or false, actions = {} }, Group)
  self.mutex[#self.mutex + 1] = g
  return g
end

function Group:add_argument(...)
  return self.parser:_add_argument(self, ...)
end

function Group:add_mutually_exclusive_group(opts)
  local g = self.parser:add_mutually_exclusive_group(opts)
  g.section = self
  return g
end

function ArgumentParser:add_argument(...)
  return self:_add_argument(nil, ...)
end

-- ---- add_argument ----

local ACTION_KEYS = {
  action = true, nargs = true, const = true, default = true, type = true, choices = true, required = true,
  help = true, metavar = true, dest = true, version = true,
}
local ACTIONS = {
  store = true, store_true = true, store_false = true, store_const = true, append = true, append_const = true,
  count = true, help = true, version = true, extend = true,
}

function ArgumentParser:_add_argument(group, ...)
  local names, opts = {}, {}
  local n = select("#", ...)
  for i = 1, n do
    local v = select(i, ...)
    if type(v) == "string" then
      names[#names + 1] = v
    elseif type(v) == "table" and i == n then
      for j, s in ipairs(v) do names[#names + 1] = s; if type(s) ~= "string" then usage_error("argument names must be strings") end end
      for k, x in pairs(v) do
        if type(k) ~= "number" then
          if not ACTION_KEYS[k] then usage_error("add_argument() got an unexpected keyword argument '%s'", tostring(k)) end
          opts[k] = x
        end
      end
    else
      usage_error("add_argument: bad argument #%d (option string or table of keywords expected, got %s)", i, type(v))
    end
  end
  if #names == 0 then usage_error("add_argument: an option string or a positional name is required") end
  local a = {}
  for k, v in pairs(opts) do a[k] = v end
  a.action = a.action or "store"
  if not ACTIONS[a.action] then usage_error("unknown action \"%s\"", tostring(a.action)) end
  local positional = names[1]:sub(1, 1) ~= "-" or names[1] == "-"
  if positional then
    if #names > 1 then usage_error("invalid option string '%s': must start with a character '-'", names[2]) end
    if a.dest then usage_error("dest supplied twice for positional argument") end
    a.dest = names[1]
    a.option_strings = {}
    if a.required ~= nil then usage_error("'required' is an invalid argument for positionals") end
    a.required = not (a.nargs == "?" or a.nargs == "*")
  else
    for _, s in ipairs(names) do
      if s:sub(1, 1) ~= "-" then usage_error("invalid option string '%s': must start with a character '-'", s) end
      if self.option_index[s] then usage_error("argument %s: conflicting option string: %s", table.concat(names, "/"), s) end
    end
    a.option_strings = names
    if not a.dest then
      local long
      for _, s in ipairs(names) do
        if s:sub(1, 2) == "--" and #s > 2 then long = s; break end
      end
      a.dest = ((long or names[1]):gsub("^%-+", ""):gsub("%-", "_"))
    end
    a.required = a.required or false
  end
  local act = a.action
  if act == "store_true" or act == "store_false" or act == "store_const" or act == "append_const"
      or act == "count" or act == "help" or act == "version" then
    if a.nargs ~= nil then usage_error("nargs is not allowed with action %s", act) end
    a.nargs = 0
    if act == "store_true" then a.const = true; if a.default == nil then a.default = false end end
    if act == "store_false" then a.const = false; if a.default == nil then a.default = true end end
    if act == "help" or act == "version" then a.default = M.SUPPRESS end
    if (act == "store_const" or act == "append_const") and opts.const == nil then
      usage_error("argument %s: const is required for action %s", names[1], act)
    end
  else
    local nargs = a.nargs
    if nargs ~= nil and nargs ~= "?" and nargs ~= "*" and nargs ~= "+" and math.type(nargs) ~= "integer" then
      usage_error("invalid nargs value")
    end
    if nargs == 0 then usage_error("nargs for store actions must be != 0; if you have nothing to store, actions such as store true or store const may be more appropriate") end
  end
  if a.type ~= nil and type(a.type) ~= "function" and not ({ float = 1, int = 1, str = 1, string = 1, bool = 1 })[a.type] then
    usage_error("add_argument: unknown type %s (use \"float\", \"int\", \"str\", \"bool\" or a function)", pyrepr(a.type))
  end
  if a.choices ~= nil and type(a.choices) ~= "table" then usage_error("add_argument: choices must be a list") end
  if a.default == nil and self.argument_default ~= nil then a.default = self.argument_default end
  local section = group
  if group and group.mutex then
    group.actions[#group.actions + 1] = a
    a.mutex = group
    if positional and a.required then usage_error("mutually exclusive arguments must be optional") end
    section = group.section
  end
  section = section or (positional and self.positionals or self.optionals)
  return self:_add_action(a, section)
end

function ArgumentParser:_add_action(a, section)
  a.container = section
  section.actions[#section.actions + 1] = a
  self.actions[#self.actions + 1] = a
  for _, s in ipairs(a.option_strings) do self.option_index[s] = a end
  return a
end

function ArgumentParser:set_defaults(t)
  for k, v in pairs(t) do
    self.defaults[k] = v
    for _, a in ipairs(self.actions) do if a.dest == k then a.default = v end end
  end
end

function ArgumentParser:get_default(dest)
  for _, a in ipairs(self.actions) do if a.dest == dest and a.default ~= nil then return a.default end end
  return self.defaults[dest]
end

-- ---- sub-commands: parser:add_subparsers{dest = "cmd"}:add_parser("train", {help = ...}) ----
-- The command is the first positional token after those of the positionals added before
-- add_subparsers; everything after it goes to that command's parser, whose values join the
-- namespace (its unknown arguments are reported by the top parser, as in Python).

local SubParsers = {}
SubParsers.__index = SubParsers
local SUBPARSERS_KEYS = {
  title = true, description = true, prog = true, dest = true, required = true, help = true, metavar = true,
}

function ArgumentParser:add_subparsers(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if not SUBPARSERS_KEYS[k] then usage_error("add_subparsers() got an unexpected keyword argument '%s'", tostring(k)) end
  end
  if self.subparsers then self:error("cannot have multiple subparser arguments") end
  local prog = opts.prog
  if prog == nil then
    prog = self.prog
    for _, a in ipairs(self.positionals.actions) do prog = prog .. " " .. a.dest end
  end
  local section = self.positionals
  if opts.title ~= nil or opts.description ~= nil then
    section = self:add_argument_group(opts.title or "subcommands", opts.description)
  end
  local dest = opts.dest or M.SUPPRESS
  local a = setmetatable({
    action = "parsers", option_strings = {}, dest = dest, default = dest == M.SUPPRESS and M.SUPPRESS or nil,
    nargs = "A...", choices = {}, parsers = {}, choice_rows = {}, required = opts.required or false,
    help = opts.help, metavar = opts.metavar, prog_prefix = prog,
  }, SubParsers)
  self.subparsers = a
  return self:_add_action(a, section)
end

-- add_parser(name, {help = ..., aliases = {...}, <ArgumentParser keywords>}): the command's parser
function SubParsers:add_parser(name, opts)
  local popts, help, aliases = {}, nil, {}
  for k, v in pairs(opts or {}) do
    if k == "help" then help = v elseif k == "aliases" then aliases = v else popts[k] = v end
  end
  for _, n in ipairs({ name, table.unpack(aliases) }) do
    if self.parsers[n] then usage_error("conflicting subparser: %s", n) end
  end
  popts.prog = popts.prog or (self.prog_prefix .. " " .. name)
  local parser = ArgumentParser.new(popts)
  for _, n in ipairs({ name, table.unpack(aliases) }) do
    self.parsers[n] = parser
    self.choices[#self.choices + 1] = n
  end
  if help ~= nil then
    local shown = #aliases > 0 and string.format("%s (%s)", name, table.concat(aliases, ", ")) or name
    self.choice_rows[#self.choice_rows + 1] = { option_strings = {}, dest = shown, metavar = shown, help = help }
  end
  return parser
end

-- ---- formatting ----

-- argparse's width: $COLUMNS (else 80) minus 2; parser.columns overrides $COLUMNS
local function width_of(self)
  local cols = self.columns or tonumber(os.getenv("COLUMNS") or "") or 80
  return cols - 2
end

local function metavar_of(a)
  if a.metavar ~= nil then return a.metavar end
  if a.choices then
    local parts = {}
    for i, c in ipairs(a.choices) do parts[i] = pystr(c) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if #a.option_strings == 0 then return a.dest end
  return a.dest:upper()
end

local function format_args(a)
  local mv = metavar_of(a)
  local function m(i) return type(mv) == "table" and mv[i] or mv end
  local nargs = a.nargs
  if nargs == nil then return m(1)
  elseif nargs == "?" then return "[" .. m(1) .. "]"
  elseif nargs == "*" then return "[" .. m(1) .. " ...]"
  elseif nargs == "+" then return m(1) .. " [" .. m(2) .. " ...]"
  elseif nargs == 0 then return ""
  elseif nargs == "A..." then return m(1) .. " ..."
  end
  local parts = {}
  for i = 1, nargs do parts[i] = m(i) end
  return table.concat(parts, " ")
end

local function invocation(a)
  if #a.option_strings == 0 then
    local mv = metavar_of(a)
    return type(mv) == "table" and mv[1] or mv
  end
  if a.nargs == 0 then return table.concat(a.option_strings, ", ") end
  local args = format_args(a)
  local parts = {}
  for i, s in ipairs(a.option_strings) do parts[i] = s .. " " .. args end
  return table.concat(parts, ", ")
end

local function expand_help(self, a)
  local vals = {
    prog = self.prog, dest = a.dest, default = pystr(a.default == M.SUPPRESS and nil or a.default),
    type = type(a.type) == "string" and a.type or nil, required = pystr(a.required), nargs = pystr(a.nargs),
    const = pystr(a.const), metavar = pystr(a.metavar), help = a.help,
  }
  if a.choices then
    local parts = {}
    for i, c in ipairs(a.choices) do parts[i] = pystr(c) end
    vals.choices = table.concat(parts, ", ")
  end
  local out = a.help:gsub("%%%((%w+)%)s", function(k) return vals[k] ~= nil and tostring(vals[k]) or "None" end)
  return (out:gsub("%%%%", "%%"))
end

function ArgumentParser:format_usage()
  return "usage: " .. self:_usage_text() .. "\n"
end

function ArgumentParser:_usage_text()
  if self.usage then return (self.usage:gsub("%%%(prog%)s", self.prog)) end
  local prog = self.prog
  local opt_parts, pos_parts = {}, {}
  for _, a in ipairs(self.actions) do
    if a.help ~= M.SUPPRESS then
      if #a.option_strings == 0 then
        local part = format_args(a)
        if part ~= "" then pos_parts[#pos_parts + 1] = part end
      else
        local part = a.option_strings[1]
        if a.nargs ~= 0 then part = part .. " " .. format_args(a) end
        if not a.required then part = "[" .. part .. "]" end
        opt_parts[#opt_parts + 1] = part
      end
    end
  end
  local all = {}
  for _, p in ipairs(opt_parts) do all[#all + 1] = p end
  for _, p in ipairs(pos_parts) do all[#all + 1] = p end
  local usage = table.concat(all, " ")
  usage = usage == "" and prog or prog .. " " .. usage
  local text_width = width_of(self)
  local prefix = "usage: "
  if #prefix + #usage <= text_width then return usage end
  -- wrap as argparse does: parts after the prog, aligned under the first part
  local function get_lines(parts, indent, pfx)
    local lines, line = {}, {}
    local line_len = pfx and #pfx - 1 or #indent - 1
    for _, part in ipairs(parts) do
      if line_len + 1 + #part > text_width and #line > 0 then
        lines[#lines + 1] = indent .. table.concat(line, " ")
        line = {}
        line_len = #indent - 1
      end
      line[#line + 1] = part
      line_len = line_len + #part + 1
    end
    if #line > 0 then lines[#lines + 1] = indent .. table.concat(line, " ") end
    if pfx then lines[1] = lines[1]:sub(#indent + 1) end
    return lines
  end
  local lines
  if #prefix + #prog <= 0.75 * text_width then
    local indent = string.rep(" ", #prefix + #prog + 1)
    local first = { prog }
    if #opt_parts > 0 then
      for _, p in ipairs(opt_parts) do first[#first + 1] = p end
      lines = get_lines(first, indent, prefix)
      for _, l in ipairs(get_lines(pos_parts, indent)) do lines[#lines + 1] = l end
    elseif #pos_parts > 0 then
      for _, p in ipairs(pos_parts) do first[#first + 1] = p end
      lines = get_lines(first, indent, prefix)
    else
      lines = { prog }
    end
  else
    local indent = string.rep(" ", #prefix)
    local parts = {}
    for _, p in ipairs(opt_parts) do parts[#parts + 1] = p end
    for _, p in ipairs(pos_parts) do parts[#parts + 1] = p end
    lines = get_lines(parts, indent)
    if #lines > 1 then
      lines = get_lines(opt_parts, indent)
      for _, l in ipairs(get_lines(pos_parts, indent)) do lines[#lines + 1] = l end
    end
    table.insert(lines, 1, prog)
  end
  return table.concat(lines, "\n")
end

function ArgumentParser:format_help()
  local width = width_of(self)
  local max_help = math.min(24, math.max(width - 20, 4))
  local max_len = 0
  for _, g in ipairs(self.groups) do
    for _, a in ipairs(g.actions) do
      if a.help ~= M.SUPPRESS then max_len = math.max(max_len, #invocation(a) + 2) end
      for _, r in ipairs(a.choice_rows or {}) do max_len = math.max(max_len, #r.metavar + 4) end
    end
  end
  local help_pos = math.min(max_len + 2, max_help)
  local help_width = math.max(width - help_pos, 11)
  local out = { self:format_usage() }
  if self.description then out[#out + 1] = "\n" .. fill(self.description, width, "") .. "\n" end
  for _, g in ipairs(self.groups) do
    local shown = {}
    for _, a in ipairs(g.actions) do if a.help ~= M.SUPPRESS then shown[#shown + 1] = a end end
    if #shown > 0 or g.description then
      local sec = { "\n" .. (g.title and g.title .. ":\n" or "") }
      if g.description then sec[#sec + 1] = fill(g.description, width, "  ") .. "\n\n" end
      local function row(a, indent)
        local head = invocation(a)
        local help = a.help and expand_help(self, a) or nil
        local lines = help and help:find("%S") and wrap(help, help_width) or {}
        local width_left = help_pos - #indent - 2
        if #lines == 0 then
          sec[#sec + 1] = indent .. head .. "\n"
        elseif #head <= width_left then
          sec[#sec + 1] = indent .. head .. string.rep(" ", width_left - #head) .. "  " .. lines[1] .. "\n"
        else
          sec[#sec + 1] = indent .. head .. "\n" .. string.rep(" ", help_pos) .. lines[1] .. "\n"
        end
        for i = 2, #lines do sec[#sec + 1] = string.rep(" ", help_pos) .. lines[i] .. "\n" end
        for _, r in ipairs(a.choice_rows or {}) do row(r, indent .. "  ") end -- a sub-command's rows
      end
      for _, a in ipairs(shown) do row(a, "  ") end
      out[#out + 1] = table.concat(sec)
    end
  end
  if self.epilog then out[#out + 1] = "\n" .. fill(self.epilog, width, "") .. "\n" end
  local text = table.concat(out)
  text = text:gsub("\n\n\n+", "\n\n")
  return (text:gsub("^\n+", ""):gsub("\n+$", "")) .. "\n"
end

-- parser.stdout / parser.stderr (default io.stdout / io.stderr) take what it prints
function ArgumentParser:print_usage(file) (file or self.stdout or io.stdout):write(self:format_usage()) end
function ArgumentParser:print_help(file) (file or self.stdout or io.stdout):write(self:format_help()) end

function ArgumentParser:exit(status, message)
  if message then (self.stderr or io.stderr):write(message) end
  io.stdout:flush()
  os.exit(status or 0)
end

-- The error exit: usage and "prog: error: message" on stderr, status 2; with
-- exit_on_error = false, a Lua error holding the message.
function ArgumentParser:error(message)
  if not self.exit_on_error then error(message, 0) end
  self:print_usage(self.stderr or io.stderr)
  self:exit(2, string.format("%s: error: %s\n", self.prog, message))
end

-- ---- parsing ----

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local converters = {}
function converters.int(s)
  local t = trim(s):gsub("(%d)_(%d)", "%1%2")
  if not t:match("^[-+]?%d+$") then return nil end
  return math.tointeger(tonumber(t)) or tonumber(t)
end
function converters.float(s)
  local t = trim(s):gsub("(%d)_(%d)", "%1%2"):lower()
  local sign, rest = t:match("^([-+]?)(.*)$")
  if rest == "inf" or rest == "infinity" then return sign == "-" and -math.huge or math.huge end
  if rest == "nan" then return 0.0 / 0.0 end
  if not (rest:match("^%d+%.?%d*$") or rest:match("^%.%d+$") or rest:match("^%d+%.?%d*e[-+]?%d+$")
      or rest:match("^%.%d+e[-+]?%d+$")) then
    return nil
  end
  return tonumber(t) + 0.0
end
function converters.str(s) return s end
converters.string = converters.str
function converters.bool(s) return #s > 0 end

local function type_name(a)
  if type(a.type) == "string" then return a.type == "string" and "str" or a.type end
  if a.type == tonumber then return "number" end
  return "function"
end

local function arg_name(a)
  if #a.option_strings > 0 then return table.concat(a.option_strings, "/") end
  if a.action == "parsers" then -- Python's order: metavar, dest, the choices
    if a.metavar ~= nil then return a.metavar end
    if a.dest ~= M.SUPPRESS then return a.dest end
    return "{" .. table.concat(a.choices, ",") .. "}"
  end
  local mv = metavar_of(a)
  return type(mv) == "table" and mv[1] or mv
end

local ArgError = {}

local function arg_error(a, fmt, ...)
  error(setmetatable({ message = "argument " .. arg_name(a) .. ": " .. string.format(fmt, ...) }, ArgError), 0)
end

local function convert(a, s)
  if a.type == nil then return s end
  local f = type(a.type) == "function" and a.type or converters[a.type]
  local ok, v = pcall(f, s)
  if not ok and type(v) == "string" and type(a.type) == "function" then
    arg_error(a, "%s", (v:gsub("^[^\n]-:%d+: ", "")))
  end
  if not ok or v == nil then arg_error(a, "invalid %s value: %s", type_name(a), pyrepr(s)) end
  return v
end

local function check_choice(a, v)
  if not a.choices then return end
  for _, c in ipairs(a.choices) do if c == v then return end end
  local parts = {}
  for i, c in ipairs(a.choices) do parts[i] = pyrepr(c) end
  arg_error(a, "invalid choice: %s (choose from %s)", pyrepr(v), table.concat(parts, ", "))
end

-- The value stored for the strings given to a (PyTorch's _get_values).
local function values_for(a, strings)
  if a.nargs == "?" and #strings == 0 then
    local v = a.const
    if type(v) == "string" then v = convert(a, v) end
    return v
  end
  if a.nargs == nil or a.nargs == "?" then
    local v = convert(a, strings[1])
    check_choice(a, v)
    return v
  end
  local out = {}
  for i, s in ipairs(strings) do out[i] = convert(a, s) end
  for _, v in ipairs(out) do check_choice(a, v) end
  return out
end

local Namespace = {}
Namespace.__name = "Namespace"
-- Python 3.9+ order: the actions' dests in the order they were added, then the rest
function Namespace.__tostring(ns)
  local mt = getmetatable(ns)
  local keys, listed = {}, {}
  for _, k in ipairs(mt._order) do keys[#keys + 1] = k; listed[k] = true end
  local rest = {}
  for k in pairs(ns) do if not listed[k] then rest[#rest + 1] = k end end
  table.sort(rest, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(rest) do keys[#keys + 1] = k end
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = tostring(k) .. "=" .. pyrepr(rawget(ns, k)) end
  return "Namespace(" .. table.concat(parts, ", ") .. ")"
end

local function looks_negative(s) return s:match("^%-%d+$") or s:match("^%-%d*%.%d+$") or s:match("^%-%d+%.?%d*e[-+]?%d+$") end

function ArgumentParser:_is_option(s, has_negative_options)
  if s:sub(1, 1) ~= "-" or s == "-" then return false end
  if looks_negative(s) and not has_negative_options then return false end
  if s:find(" ") and not self.option_index[s:match("^[^=]*")] then return false end
  return true
end

-- The action an option token names, and an explicit value ("--lr=0.1", "-l0.1").
function ArgumentParser:_match_option(tok)
  local idx = self.option_index
  if idx[tok] then return idx[tok], nil, tok end
  local name, value = tok:match("^([^=]+)=(.*)$")
  if name and idx[name] then return idx[name], value, name end
  if tok:sub(1, 2) == "--" or (#tok > 2 and not idx[tok:sub(1, 2)]) then
    if self.allow_abbrev then
      local key = name or tok
      local found = {}
      for s, a in pairs(idx) do
        if #s > #key and s:sub(1, #key) == key and (s:sub(1, 2) == "--" or key:sub(1, 2) ~= "--") then
          found[#found + 1] = s
        end
      end
      table.sort(found)
      if #found == 1 then return idx[found[1]], value, found[1] end
      if #found > 1 then
        self:error(string.format("ambiguous option: %s could match %s", key, table.concat(found, ", ")))
      end
    end
    if tok:sub(1, 2) == "--" then return nil end
  end
  local short = tok:sub(1, 2)
  if idx[short] then return idx[short], tok:sub(3), short, true end
  return nil
end

-- The command's name and the rest of the line: parse the rest with its parser into ns.
function ArgumentParser:_run_subparser(a, strings, ns)
  local name = strings[1]
  check_choice(a, name)
  local parser = a.parsers[name]
  if a.dest ~= M.SUPPRESS then ns[a.dest] = name end
  for _, k in ipairs({ "stdout", "stderr", "columns" }) do
    if rawget(parser, k) == nil then parser[k] = self[k] end
  end
  local sub_ns, extras = parser:parse_known_args({ table.unpack(strings, 2) })
  local order = (getmetatable(ns) or {})._order
  if order then -- the command's dests print after the top parser's
    local listed = {}
    for _, k in ipairs(order) do listed[k] = true end
    for _, k in ipairs(getmetatable(sub_ns)._order) do
      if not listed[k] then order[#order + 1] = k end
    end
  end
  for k, v in pairs(sub_ns) do ns[k] = v end
  return extras
end

function ArgumentParser:_parse(argv, ns)
  local has_negative_options = false
  for s in pairs(self.option_index) do if looks_negative(s) then has_negative_options = true end end
  local seen, extras, positional_tokens = {}, {}, {}
  local mutex_seen = {}
  local i = 1
  local function take(a, strings, opt_string)
    if a.mutex then
      local other = mutex_seen[a.mutex]
      if other and other ~= a then
        arg_error(a, "not allowed with argument %s", arg_name(other))
      end
      mutex_seen[a.mutex] = a
    end
    seen[a] = true
    local act = a.action
    if act == "help" then
      self:print_help()
      self:exit(0)
    elseif act == "version" then
      (self.stdout or io.stdout):write(tostring(a.version or ""):gsub("%%%(prog%)s", self.prog) .. "\n")
      self:exit(0)
    elseif act == "store_true" or act == "store_false" or act == "store_const" then
      ns[a.dest] = a.const
    elseif act == "append_const" then
      local list = rawget(ns, a.dest)
      list = type(list) == "table" and { table.unpack(list) } or {}
      list[#list + 1] = a.const
      ns[a.dest] = list
    elseif act == "count" then
      ns[a.dest] = (rawget(ns, a.dest) or 0) + 1
    elseif act == "append" or act == "extend" then
      local list = rawget(ns, a.dest)
      list = type(list) == "table" and { table.unpack(list) } or {}
      local v = values_for(a, strings)
      if act == "extend" and type(v) == "table" then
        for _, x in ipairs(v) do list[#list + 1] = x end
      else
        list[#list + 1] = v
      end
      ns[a.dest] = list
    else
      ns[a.dest] = values_for(a, strings)
    end
  end
  local only_positional = false
  local sub_strings, n_before_command = nil, 0
  if self.subparsers then
    for _, a in ipairs(self.actions) do
      if a == self.subparsers then break end
      if #a.option_strings == 0 then n_before_command = n_before_command + 1 end
    end
  end
  while i <= #argv do
    local tok = argv[i]
    if type(tok) ~= "string" then tok = tostring(tok) end
    i = i + 1
    if not only_positional and tok == "--" then
      only_positional = true
    elseif only_positional or not self:_is_option(tok, has_negative_options) then
      if self.subparsers and #positional_tokens == n_before_command then
        sub_strings = { tok, table.unpack(argv, i) }
        break
      end
      positional_tokens[#positional_tokens + 1] = tok
    else
      local a, explicit, opt_string, attached = self:_match_option(tok)
      if not a then
        extras[#extras + 1] = tok
      else
        -- combined short flags: -xyz is -x -yz when -x takes no value
        while attached and a.nargs == 0 and explicit ~= nil and explicit ~= "" do
          local b = self.option_index["-" .. explicit:sub(1, 1)]
          if not b then arg_error(a, "ignored explicit argument %s", pyrepr(explicit)) end
          take(a, {}, opt_string)
          a, opt_string, explicit = b, "-" .. explicit:sub(1, 1), explicit:sub(2)
        end
        if attached and explicit == "" then explicit = nil end
        local nargs = a.nargs
        local strings = {}
        if nargs == 0 then
          if explicit ~= nil then arg_error(a, "ignored explicit argument %s", pyrepr(explicit)) end
        elseif explicit ~= nil then
          if nargs == nil or nargs == "?" or nargs == 1 or nargs == "*" or nargs == "+" then
            strings = { explicit }
          else
            arg_error(a, "expected %d arguments", nargs)
          end
        else
          local function is_value(j)
            local s = argv[j]
            return s ~= nil and s ~= "--" and not self:_is_option(tostring(s), has_negative_options)
          end
          local want_min, want_max
          if nargs == nil then want_min, want_max = 1, 1
          elseif nargs == "?" then want_min, want_max = 0, 1
          elseif nargs == "*" then want_min, want_max = 0, math.huge
          elseif nargs == "+" then want_min, want_max = 1, math.huge
          else want_min, want_max = nargs, nargs end
          while #strings < want_max and is_value(i) do
            strings[#strings + 1] = tostring(argv[i])
            i = i + 1
          end
          if #strings < want_min then
            if nargs == nil then arg_error(a, "expected one argument")
            elseif nargs == "+" then arg_error(a, "expected at least one argument")
            else arg_error(a, "expected %d argument%s", nargs, nargs == 1 and "" or "s") end
          end
        end
        take(a, strings, opt_string)
      end
    end
  end
  -- positionals: each takes what its nargs allows, leaving enough for the ones after it
  local pos = {}
  for _, a in ipairs(self.actions) do
    if #a.option_strings == 0 and a ~= self.subparsers then pos[#pos + 1] = a end
  end
  local function min_of(a)
    if a.nargs == nil or a.nargs == "+" then return 1 end
    if a.nargs == "?" or a.nargs == "*" then return 0 end
    return a.nargs
  end
  -- the longest prefix of the positionals that the tokens can fill (argparse's match_partial)
  local ntok = #positional_tokens
  local function assign(m)
    local counts, used = {}, 0
    for pi = 1, m do
      local a = pos[pi]
      local reserve = 0
      for j = pi + 1, m do reserve = reserve + min_of(pos[j]) end
      local avail = ntok - used - reserve
      local count
      if a.nargs == nil then count = 1
      elseif a.nargs == "?" then count = math.min(1, math.max(avail, 0))
      elseif a.nargs == "*" or a.nargs == "+" then count = math.max(avail, 0)
      else count = a.nargs end
      if count < min_of(a) or count > ntok - used then return nil end
      counts[pi], used = count, used + count
    end
    return counts, used
  end
  local counts, used
  for m = #pos, 0, -1 do
    counts, used = assign(m)
    if counts then break end
  end
  local k = 1
  for pi, count in ipairs(counts) do
    local a = pos[pi]
    local strings = {}
    for j = 1, count do strings[j] = positional_tokens[k + j - 1] end
    k = k + count
    if count == 0 and a.nargs == "?" then
      seen[a] = "default"
    elseif count == 0 and a.nargs == "*" and a.default ~= nil then
      seen[a] = "default" -- an empty '*' positional keeps its default when it has one
    else
      take(a, strings)
    end
  end
  k = used + 1
  for j = k, #positional_tokens do extras[#extras + 1] = positional_tokens[j] end
  if sub_strings then
    seen[self.subparsers] = true
    for _, x in ipairs(self:_run_subparser(self.subparsers, sub_strings, ns)) do extras[#extras + 1] = x end
  end
  -- defaults, then required checks
  for _, a in ipairs(self.actions) do
    if (not seen[a] or seen[a] == "default") and a.default ~= M.SUPPRESS and rawget(ns, a.dest) == nil then
      local d = a.default
      if d == nil then d = self.defaults[a.dest] end
      if type(d) == "string" and a.type ~= nil and (a.action == "store" or a.action == "append") then
        d = convert(a, d)
      end
      ns[a.dest] = d
    end
  end
  for k2, v in pairs(self.defaults) do if rawget(ns, k2) == nil then ns[k2] = v end end
  local missing = {}
  for _, a in ipairs(self.actions) do
    if a.required and not seen[a] then missing[#missing + 1] = arg_name(a) end
  end
  if #missing > 0 then
    error(setmetatable({ message = "the following arguments are required: " .. table.concat(missing, ", ") }, ArgError), 0)
  end
  for _, g in ipairs(self.mutex) do
    if g.required and not mutex_seen[g] then
      local names = {}
      for _, a in ipairs(g.actions) do if a.help ~= M.SUPPRESS then names[#names + 1] = arg_name(a) end end
      error(setmetatable({ message = "one of the arguments " .. table.concat(names, " ") .. " is required" }, ArgError), 0)
    end
  end
  return ns, extras
end

local function new_namespace(self)
  local order, seen = {}, {}
  for _, a in ipairs(self.actions) do
    if a.default ~= M.SUPPRESS and not seen[a.dest] then order[#order + 1] = a.dest; seen[a.dest] = true end
  end
  for k in pairs(self.defaults) do
    if not seen[k] then order[#order + 1] = k; seen[k] = true end
  end
  local mt = {}
  for k, v in pairs(Namespace) do mt[k] = v end
  mt._order = order
  return setmetatable({}, mt)
end

local function argv_of(args)
  if args == nil then
    args = rawget(_G, "arg") or {}
  end
  if type(args) ~= "table" then usage_error("parse_args: a list of strings expected, got %s", type(args)) end
  local out = {}
  for i = 1, #args do out[i] = args[i] end
  return out
end

-- Returns the namespace and the list of arguments it did not know.
function ArgumentParser:parse_known_args(args, namespace)
  local ns = namespace or new_namespace(self)
  local ok, res, extras = pcall(self._parse, self, argv_of(args), ns)
  if not ok then
    if getmetatable(res) == ArgError then self:error(res.message) end
    error(res, 0)
  end
  return res, extras
end

function ArgumentParser:parse_args(args, namespace)
  local ns, extras = self:parse_known_args(args, namespace)
  if #extras > 0 then self:error("unrecognized arguments: " .. table.concat(extras, " ")) end
  return ns
end

function ArgumentParser:__tostring()
  return string.format("ArgumentParser(prog=%s, usage=%s, description=%s)", pyrepr(self.prog), pyrepr(self.usage),
    pyrepr(self.description))
end

return M
