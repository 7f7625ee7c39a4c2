-- A NumPy .npy reader (format versions 1.0, 2.0 and 3.0): load(path) / load_bytes(s, name) give
-- a CPU tensor. dtypes u1 i1 i2 i4 i8 f2 f4 f8 b1 map to uint8 int8 int16 int32 int64 float16
-- float32 float64 bool; u2 widens to int32 for want of a uint16 dtype. Little- and big-endian
-- data; a fortran_order array comes back as the permuted view of its column-major data (the same
-- values as NumPy's). Object arrays, structured dtypes and other kinds raise an error.
local torch = require "torch"

local M = {}

local dtypes = {u1 = "uint8", i1 = "int8", b1 = "bool", i2 = "int16", u2 = "int32", i4 = "int32", i8 = "int64",
  f2 = "float16", f4 = "float32", f8 = "float64"}

local function fail(name, fmt, ...) error(name .. ": " .. string.format(fmt, ...), 0) end

-- the header dict's 'descr', 'fortran_order' and 'shape'
local function header(name, h)
  local descr = h:match("['\"]descr['\"]%s*:%s*['\"]([^'\"]*)['\"]")
  local fortran = h:match("['\"]fortran_order['\"]%s*:%s*(%a+)")
  local shape = h:match("['\"]shape['\"]%s*:%s*(%b())")
  if not descr or not fortran or not shape then
    fail(name, "corrupt .npy header (expected 'descr', 'fortran_order' and 'shape'): %s", h)
  end
  local dims = {}
  for d in shape:sub(2, -2):gmatch("[^,%s]+") do
    local v = math.tointeger(tonumber((d:gsub("L$", ""))))
    if not v or v < 0 then fail(name, "corrupt .npy header (bad shape %s)", shape) end
    dims[#dims + 1] = v
  end
  if fortran ~= "True" and fortran ~= "False" then fail(name, "corrupt .npy header (fortran_order %s)", fortran) end
  return descr, fortran == "True", dims
end

function M.load_bytes(s, name)
  name = name or "<bytes>"
  if s:sub(1, 6) ~= "\147NUMPY" then fail(name, "not a .npy file (bad magic string)") end
  if #s < 10 then fail(name, "truncated .npy file (no header)") end
  local major, minor = s:byte(7, 8)
  local hlen, start
  if major == 1 then hlen, start = string.unpack("<I2", s, 9), 11
  elseif major == 2 or major == 3 then
    if #s < 12 then fail(name, "truncated .npy file (no header)") end
    hlen, start = string.unpack("<I4", s, 9), 13
  else fail(name, "unsupported .npy format version %d.%d (1.0, 2.0 and 3.0 are read)", major, minor) end
  if start + hlen - 1 > #s then fail(name, "truncated .npy file (header of %d bytes)", hlen) end
  local descr, fortran, dims = header(name, s:sub(start, start + hlen - 1))
  local order, code = descr:match("^([<>|=]?)(%a%d+)$")
  local dtype = code and dtypes[code]
  if not dtype then
    fail(name, "unsupported dtype '%s' (supported: u1 i1 i2 i4 i8 u2 f2 f4 f8 b1)", descr)
  end
  local width = tonumber(code:sub(2))
  local count = 1
  for _, d in ipairs(dims) do count = count * d end
  local at = start + hlen -- 1-based start of the data
  if #s - at + 1 < count * width then
    fail(name, "truncated .npy file (%d data bytes for %d elements of %d bytes)", #s - at + 1, count, width)
  end
  local t
  if count == 0 then t = torch.empty(0, {dtype = torch[dtype]})
  else
    local bytes = torch.frombuffer(s, {dtype = torch.uint8, offset = at - 1, count = count * width})
    if width > 1 then
      bytes = bytes:view(count, width)
      if order == ">" then bytes = bytes:flip({1}) end -- to little-endian byte order
      if code == "u2" then
        local w = bytes:to(torch.int32)
        t = w:select(1, 0) + w:select(1, 1) * 256
      else
        t = torch._storage_view(bytes:contiguous():view(-1), torch[dtype])
      end
    else
      t = torch._storage_view(bytes, torch[dtype])
    end
  end
  if not fortran or #dims < 2 then return t:reshape(dims) end
  local rev, perm = {}, {}
  for i = #dims, 1, -1 do rev[#rev + 1] = dims[i]; perm[#perm + 1] = i - 1 end
  return t:reshape(rev):permute(perm)
end

function M.load(path)
  local f, err = io.open(path, "rb")
  if not f then error(string.format("npy: cannot open %s (%s)", path, tostring(err):gsub("^[^:]*: ", "")), 0) end
  local s = f:read("a")
  f:close()
  return M.load_bytes(s, path)
end

return M
