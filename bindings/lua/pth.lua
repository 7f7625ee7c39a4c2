-- PyTorch's own checkpoint format, read by torch.load: the zip archive torch.save writes since
-- PyTorch 1.6 (<name>/data.pkl, a pickle of the object; <name>/data/<key>, each storage's raw
-- bytes; <name>/byteorder). The pickle is run on a small virtual machine that knows only what
-- PyTorch's weights_only loader allows: containers, numbers, strings, tensors, parameters,
-- torch.Size, dtypes, devices. A pickled Python class (a whole nn.Module, say) cannot be rebuilt
-- without its Python code: that is an error naming the class.
--
-- Python values become: dict -> table (OrderedDict -> nn_util.OrderedDict, keeping the order),
-- list / tuple / set -> list, str and bytes -> string, int -> integer, float -> number,
-- None -> nil, tensors -> tensors (views of one storage share it, as in PyTorch).
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"

local M = {}

local function fail(what, fmt, ...) error(string.format("torch.load: %s: " .. fmt, what, ...), 0) end

-- ---- the zip archive ----

-- name -> {offset = local header offset, size = bytes, method = compression}
local function zip_entries(f, what)
  local total = f:seek("end")
  local tail_len = math.min(total, 65557)
  f:seek("set", total - tail_len)
  local tail = f:read(tail_len) or ""
  local eocd
  for i = #tail - 21, 1, -1 do
    if tail:sub(i, i + 3) == "PK\5\6" then eocd = i; break end
  end
  if not eocd then fail(what, "not a zip archive (no end of central directory): the file is truncated or corrupt") end
  local count, cd_size, cd_off = string.unpack("<I2I4I4", tail, eocd + 10)
  if cd_off == 0xffffffff or count == 0xffff then -- ZIP64: the locator just before the record
    local loc = eocd - 20
    if loc < 1 or tail:sub(loc, loc + 3) ~= "PK\6\7" then fail(what, "bad ZIP64 end of central directory") end
    local rec_off = string.unpack("<I8", tail, loc + 8)
    f:seek("set", rec_off)
    local rec = f:read(56) or ""
    if rec:sub(1, 4) ~= "PK\6\6" then fail(what, "bad ZIP64 end of central directory record") end
    count, cd_size, cd_off = string.unpack("<I8I8I8", rec, 33)
  end
  f:seek("set", cd_off)
  local cd = f:read(cd_size) or ""
  if #cd ~= cd_size then fail(what, "the central directory is cut short: the file is truncated") end
  local entries, pos = {}, 1
  for _ = 1, count do
    if cd:sub(pos, pos + 3) ~= "PK\1\2" then fail(what, "corrupt zip central directory") end
    local method, _, _, _, csize, usize, nlen, xlen, clen = string.unpack("<I2I2I2I4I4I4I2I2I2", cd, pos + 10)
    local off = string.unpack("<I4", cd, pos + 42)
    local name = cd:sub(pos + 46, pos + 45 + nlen)
    local x, xend = pos + 46 + nlen, pos + 46 + nlen + xlen
    while x + 4 <= xend do -- ZIP64 extra field: the 64-bit values of the fields set to all ones
      local id, len = string.unpack("<I2I2", cd, x)
      if id == 1 then
        local p = x + 4
        if usize == 0xffffffff then usize, p = string.unpack("<I8", cd, p) end
        if csize == 0xffffffff then csize, p = string.unpack("<I8", cd, p) end
        if off == 0xffffffff then off = string.unpack("<I8", cd, p) end
      end
      x = x + 4 + len
    end
    entries[name] = { offset = off, size = usize, csize = csize, method = method }
    pos = xend + clen
  end
  return entries
end

local function entry_bytes(f, e, name, what)
  if e.method ~= 0 then
    fail(what, "entry '%s' is compressed (zip method %d); PyTorch writes its checkpoints uncompressed: re-save the file with torch.save",
      name, e.method)
  end
  f:seek("set", e.offset)
  local hdr = f:read(30) or ""
  if #hdr < 30 or hdr:sub(1, 4) ~= "PK\3\4" then fail(what, "corrupt zip entry '%s'", name) end
  local nlen, xlen = string.unpack("<I2I2", hdr, 27)
  f:seek("set", e.offset + 30 + nlen + xlen)
  if e.size == 0 then return "" end
  local data = f:read(e.size) or ""
  if #data ~= e.size then fail(what, "entry '%s' is cut short: the file is truncated", name) end
  return data
end

-- ---- what the pickle may name ----

local STORAGE_DTYPES = {
  FloatStorage = "float32", DoubleStorage = "float64", HalfStorage = "float16", BFloat16Storage = "bfloat16",
  LongStorage = "int64", IntStorage = "int32", ShortStorage = "int16", CharStorage = "int8", ByteStorage = "uint8",
  BoolStorage = "bool", ComplexFloatStorage = "complex64", ComplexDoubleStorage = "complex128",
  UntypedStorage = "uint8",
}
local DTYPE_NAMES = {
  float32 = true, float = true, float64 = true, double = true, float16 = true, half = true, bfloat16 = true,
  int64 = true, long = true, int32 = true, int = true, int16 = true, short = true, int8 = true, uint8 = true,
  bool = true, complex64 = true, complex128 = true,
}

local len = setmetatable({}, { __mode = "k" }) -- a pickled list or tuple -> its length (None leaves a nil hole)
local function count(t) return t.n or len[t] or #t end
local function list_of(t) return t or {} end

-- a tensor of the storage's elements: the storage, then as_strided
local function rebuild_tensor(storage, offset, size, stride, requires_grad)
  local t = storage.tensor:as_strided(list_of(size), list_of(stride), offset)
  if requires_grad then t:requires_grad_(true) end
  return t
end

local function globals(what)
  local G = {}
  G["collections.OrderedDict"] = function() return U.OrderedDict.new() end
  G["torch._utils._rebuild_tensor_v2"] = function(storage, offset, size, stride, requires_grad)
    return rebuild_tensor(storage, offset, size, stride, requires_grad)
  end
  G["torch._utils._rebuild_tensor_v3"] = function(storage, offset, size, stride, requires_grad, _, dtype)
    local s = storage
    if dtype and s.tensor:dtype() ~= dtype then s = { tensor = torch._storage_view(s.tensor, dtype) } end
    return rebuild_tensor(s, offset, size, stride, requires_grad)
  end
  local function parameter(data, requires_grad) return Parameter(data, requires_grad ~= false) end
  G["torch._utils._rebuild_parameter"] = parameter
  G["torch._utils._rebuild_parameter_with_state"] = parameter
  G["torch._tensor._rebuild_from_type_v2"] = function(fn, cls, args)
    if cls ~= "torch.Tensor" and cls ~= "torch.nn.parameter.Parameter" then
      fail(what, "the file holds a tensor of the Python subclass '%s', which nnrepl cannot rebuild", tostring(cls))
    end
    return fn(table.unpack(args, 1, count(args)))
  end
  G["torch.Tensor"] = "torch.Tensor"
  G["torch.nn.parameter.Parameter"] = "torch.nn.parameter.Parameter"
  G["torch.Size"] = function(dims) return torch.Size(list_of(dims)) end
  G["torch.device"] = function(kind, index) return torch.device(index and (kind .. ":" .. index) or kind) end
  G["_codecs.encode"] = function(s, enc) -- bytes, pickled (protocol 2) as their latin-1 text
    if enc ~= "latin1" and enc ~= "latin-1" then fail(what, "bytes encoded as '%s'", tostring(enc)) end
    return (utf8.len(s) and s:gsub(utf8.charpattern, function(c) return string.char(utf8.codepoint(c)) end)) or s
  end
  G["builtins.set"] = function(items) return list_of(items) end
  G["builtins.frozenset"] = G["builtins.set"]
  G["builtins.bytearray"] = function(s) return s or "" end
  for name in pairs(STORAGE_DTYPES) do G["torch." .. name] = { storage_dtype = STORAGE_DTYPES[name] } end
  for name in pairs(DTYPE_NAMES) do G["torch." .. name] = torch[name] end
  return G
end

-- ---- the pickle machine ----

local MARK = {}

-- Runs the pickle in data; persistent(pid) turns a storage id into its storage.
local function unpickle(data, persistent, what)
  local G = globals(what)
  local stack, top, marks, memo, memo_len = {}, 0, {}, {}, 0
  local pos = 1
  local function push(v) top = top + 1; stack[top] = v end
  local function pop()
    local v = stack[top]; stack[top] = nil; top = top - 1; return v
  end
  local function put(k)
    if memo[k] == nil then memo_len = memo_len + 1 end
    memo[k] = stack[top]
  end
  local function pop_mark() -- the items since the last MARK, as a list
    local m = table.remove(marks)
    if not m then fail(what, "corrupt pickle (no MARK)") end
    local items = { n = top - m }
    for i = m + 1, top do items[i - m] = stack[i]; stack[i] = nil end
    top = m
    return items
  end
  local function u(fmt)
    local v, nxt = string.unpack(fmt, data, pos)
    pos = nxt
    return v
  end
  local function bytes(n)
    local s = data:sub(pos, pos + n - 1)
    if #s ~= n then fail(what, "corrupt pickle (cut short)") end
    pos = pos + n
    return s
  end
  local function new_list(items)
    local t = {}
    for i = 1, items.n do t[i] = items[i] end
    len[t] = items.n
    return t
  end
  local function set_item(d, k, v)
    if type(d) ~= "table" then fail(what, "corrupt pickle (SETITEM on a %s)", type(d)) end
    if k == nil then fail(what, "a dict key is None") end
    d[k] = v
  end
  local function call(fn, args)
    if type(fn) ~= "function" then
      fail(what, "corrupt pickle (calls %s)", type(fn) == "string" and fn or type(fn))
    end
    return fn(table.unpack(args, 1, count(args)))
  end
  local function global(module, name)
    local full = module .. "." .. name
    local g = G[full]
    if g == nil then
      fail(what, "the file holds the Python object '%s', which nnrepl cannot rebuild (it loads tensors, state_dicts and plain " ..
        "containers, as weights_only=True does); in PyTorch save model.state_dict() instead of the model, then " ..
        "model:load_state_dict(torch.load(path))", full)
    end
    return g
  end
  local ops = {}
  ops[0x80] = function() u("B") end                                   -- PROTO
  ops[0x95] = function() u("<I8") end                                 -- FRAME
  ops[0x2e] = function() return true end                              -- STOP
  ops[0x28] = function() marks[#marks + 1] = top end                  -- MARK
  ops[0x7d] = function() push({}) end                                 -- EMPTY_DICT
  ops[0x5d] = function() push(new_list({ n = 0 })) end                -- EMPTY_LIST
  ops[0x29] = function() push(new_list({ n = 0 })) end                -- EMPTY_TUPLE
  ops[0x8f] = ops[0x5d]                                               -- EMPTY_SET
  ops[0x4e] = function() push(nil) end                                -- NONE
  ops[0x88] = function() push(true) end                               -- NEWTRUE
  ops[0x89] = function() push(false) end                              -- NEWFALSE
  ops[0x4a] = function() push(u("<i4")) end                           -- BININT
  ops[0x4b] = function() push(u("B")) end                             -- BININT1
  ops[0x4d] = function() push(u("<I2")) end                           -- BININT2
  ops[0x8a] = function()                                              -- LONG1
    local n = u("B")
    if n == 0 then push(0) return end
    if n > 8 then fail(what, "an integer of %d bytes does not fit in 64 bits", n) end
    local s = bytes(n)
    local v = string.unpack("<i" .. n, s)
    push(v)
  end
  ops[0x47] = function() push(u(">d")) end                            -- BINFLOAT
  ops[0x58] = function() push(bytes(u("<I4"))) end                    -- BINUNICODE
  ops[0x8c] = function() push(bytes(u("B"))) end                      -- SHORT_BINUNICODE
  ops[0x8d] = function() push(bytes(u("<I8"))) end                    -- BINUNICODE8
  ops[0x54] = function() push(bytes(u("<i4"))) end                    -- BINSTRING
  ops[0x55] = function() push(bytes(u("B"))) end                      -- SHORT_BINSTRING
  ops[0x42] = function() push(bytes(u("<I4"))) end                    -- BINBYTES
  ops[0x43] = function() push(bytes(u("B"))) end                      -- SHORT_BINBYTES
  ops[0x8e] = function() push(bytes(u("<I8"))) end                    -- BINBYTES8
  ops[0x71] = function() put(u("B")) end                              -- BINPUT
  ops[0x72] = function() put(u("<I4")) end                            -- LONG_BINPUT
  ops[0x94] = function() put(memo_len) end                            -- MEMOIZE
  ops[0x68] = function() push(memo[u("B")]) end                       -- BINGET
  ops[0x6a] = function() push(memo[u("<I4")]) end                     -- LONG_BINGET
  ops[0x30] = function() pop() end                                    -- POP
  ops[0x32] = function() push(stack[top]) end                         -- DUP
  ops[0x74] = function() push(new_list(pop_mark())) end               -- TUPLE
  ops[0x85] = function() local a = pop(); push(new_list({ n = 1, a })) end
  ops[0x86] = function() local b = pop(); local a = pop(); push(new_list({ n = 2, a, b })) end
  ops[0x87] = function() local c = pop(); local b = pop(); local a = pop(); push(new_list({ n = 3, a, b, c })) end
  ops[0x61] = function()                                              -- APPEND
    local v = pop(); local l = stack[top]; local n = (len[l] or #l) + 1; l[n] = v; len[l] = n
  end
  ops[0x65] = function()                                              -- APPENDS
    local items = pop_mark(); local l = stack[top]; local n = len[l] or #l
    for i = 1, items.n do l[n + i] = items[i] end
    len[l] = n + items.n
  end
  ops[0x90] = ops[0x65]                                               -- ADDITEMS (a set)
  ops[0x73] = function() local v = pop(); local k = pop(); set_item(stack[top], k, v) end -- SETITEM
  ops[0x75] = function()                                              -- SETITEMS
    local items = pop_mark(); local d = stack[top]
    for i = 1, items.n, 2 do set_item(d, items[i], items[i + 1]) end
  end
  ops[0x63] = function()                                              -- GLOBAL
    local module = data:match("^([^\n]*)\n", pos); pos = pos + #module + 1
    local name = data:match("^([^\n]*)\n", pos); pos = pos + #name + 1
    push(global(module, name))
  end
  ops[0x93] = function() local name = pop(); local module = pop(); push(global(module, name)) end -- STACK_GLOBAL
  ops[0x52] = function() local args = pop(); local fn = pop(); push(call(fn, args)) end -- REDUCE
  ops[0x81] = function() local args = pop(); local cls = pop(); push(call(cls, args)) end -- NEWOBJ
  ops[0x62] = function() pop() end -- BUILD: the state of an OrderedDict (_metadata) or a Parameter; not kept
  ops[0x51] = function() push(persistent(pop())) end                  -- BINPERSID
  while true do
    local op = data:byte(pos)
    if not op then fail(what, "corrupt pickle (no STOP)") end
    pos = pos + 1
    local f = ops[op]
    if not f then fail(what, "unsupported pickle opcode 0x%02x at byte %d", op, pos - 2) end
    if f() then break end
  end
  if top ~= 1 then fail(what, "corrupt pickle (%d values left at STOP)", top) end
  return stack[1]
end

-- ---- the loader ----

-- A legacy checkpoint opens with a pickled LONG1 of PyTorch's magic number 0x1950a86a20f9469cfc6c.
local LEGACY_MAGIC = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"

-- Whether the file at path is one of PyTorch's zip checkpoints (or its legacy pickle format).
function M.sniff(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local head = f:read(14) or ""
  f:close()
  if head:sub(1, 4) == "PK\3\4" then return "zip" end
  if head == LEGACY_MAGIC then return "legacy" end
  return nil
end

-- The object in the PyTorch checkpoint at path; map(tensor, location) places each storage.
function M.load(path, map)
  local what = "'" .. path .. "'"
  if M.sniff(path) == "legacy" then
    fail(what, "the file is in PyTorch's legacy format (torch.save with _use_new_zipfile_serialization=False, or PyTorch before " ..
      "1.6); load it in PyTorch and save it again with torch.save(obj, path)")
  end
  local f = assert(io.open(path, "rb"))
  local ok, result = pcall(function()
    local entries = zip_entries(f, what)
    local prefix
    for name in pairs(entries) do
      local p = name:match("^(.-)data%.pkl$")
      if p and (not prefix or #p < #prefix) then prefix = p end
    end
    if not prefix then fail(what, "a zip file without data.pkl: not a PyTorch checkpoint") end
    local order = entries[prefix .. "byteorder"] and entry_bytes(f, entries[prefix .. "byteorder"], "byteorder", what)
    if order and order ~= "little" then fail(what, "its tensors are stored %s-endian; nnrepl reads little-endian files", order) end
    local storages = {}
    local function persistent(pid)
      if type(pid) ~= "table" or pid[1] ~= "storage" then fail(what, "corrupt pickle (a persistent id that is not a storage)") end
      local kind, key, location, numel = pid[2], pid[3], pid[4], pid[5]
      if storages[key] then return storages[key] end
      if type(kind) ~= "table" or not kind.storage_dtype then fail(what, "corrupt pickle (storage of unknown type)") end
      local name = prefix .. "data/" .. tostring(key)
      local e = entries[name]
      if not e then fail(what, "storage '%s' is missing from the archive", tostring(key)) end
      local dtype = torch[kind.storage_dtype]
      local raw = entry_bytes(f, e, name, what)
      local t = #raw == 0 and torch.empty(0, { dtype = dtype }) or torch.frombuffer(raw, { dtype = dtype })
      if numel and t:numel() ~= numel and kind.storage_dtype ~= "uint8" then
        fail(what, "storage '%s' holds %d elements, the pickle says %d", tostring(key), t:numel(), numel)
      end
      storages[key] = { tensor = map(t, location or "cpu") }
      return storages[key]
    end
    return unpickle(entry_bytes(f, entries[prefix .. "data.pkl"], "data.pkl", what), persistent, what)
  end)
  f:close()
  if not ok then error(result, 0) end
  return result
end

return M
