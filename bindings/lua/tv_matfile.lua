-- A MATLAB v5 .mat reader, as far as torchvision's datasets need scipy.io.loadmat:
-- loadmat(path) returns {variable name -> value}. Numeric and logical arrays become CPU tensors
-- with MATLAB's sizes (at least 2 dims, as scipy's; elements in MATLAB's column-major order,
-- so the tensor is a permuted view), dtype from the array's class (double -> float64, uint8 ->
-- uint8; uint16 -> int32 and uint32 / uint64 -> int64 for want of unsigned dtypes). Char arrays
-- become a string (one row) or a list of strings; a 1x1 struct a table of its fields, a struct
-- array a list of such tables; a cell array the list of its cells (column-major); a sparse array
-- a dense float64 (logical: bool) tensor, as scipy's sparse matrix's toarray(). Elements may be
-- miCOMPRESSED or plain, little- or big-endian. Complex, object and function arrays raise an
-- error; v7.3 files (HDF5) and v4 files too.
local torch = require "torch"
local C = torch._matfile

local M = {}

local widths = {1, 1, 2, 2, 4, 4, 4, nil, 8, nil, nil, 8, 8}
local class_dtype = {[6] = "float64", [7] = "float32", [8] = "int8", [9] = "uint8", [10] = "int16", [11] = "int32",
  [12] = "int32", [13] = "int64", [14] = "int64", [15] = "int64"}
local class_names = {[1] = "cell", [2] = "struct", [3] = "object", [4] = "char", [5] = "sparse", [16] = "function",
  [17] = "opaque"}

-- one data element at pos (1-based): type, byte count, where its data starts, where the next one starts
local function element(r, pos)
  local s, e = r.s, r.e
  if pos + 7 > #s then error(string.format("%s: truncated MAT file (element header at byte %d)", r.name, pos - 1), 0) end
  local w1 = string.unpack(e .. "I4", s, pos)
  if w1 >> 16 ~= 0 then -- small data element: type and size in one word, data in the next
    return w1 & 0xFFFF, w1 >> 16, pos + 4, pos + 8
  end
  local n = string.unpack(e .. "I4", s, pos + 4)
  if pos + 7 + n > #s then
    error(string.format("%s: truncated MAT file (an element of %d bytes at byte %d)", r.name, n, pos - 1), 0)
  end
  local nxt = pos + 8 + n
  if w1 ~= 15 then nxt = nxt + (-n) % 8 end -- padded to 8 bytes; compressed elements are not
  return w1, n, pos + 8, nxt
end

local function numbers(r, typ, n, at, dtype)
  local w = widths[typ]
  if not w then error(string.format("%s: unsupported MAT data type %d in a numeric array", r.name, typ), 0) end
  return C.decode(r.s, at - 1, typ, n // w, dtype, r.e == ">")
end

-- a column-major block of `dims` as a tensor with those sizes
local function shaped(t, dims)
  local rev, perm = {}, {}
  for i = #dims, 1, -1 do rev[#rev + 1] = dims[i] end
  for i = #dims - 1, 0, -1 do perm[#perm + 1] = i end
  return t:reshape(rev):permute(perm)
end

local function chars(r, typ, n, at, dims)
  local codes
  if typ == 16 or typ == 2 or typ == 1 then codes = {string.byte(r.s, at, at + n - 1)}
  else
    local t = typ == 17 and 4 or typ == 18 and 6 or typ
    codes = numbers(r, t, n, at, "int64"):tolist()
  end
  local rows, cols = dims[1], #codes // math.max(dims[1], 1)
  local out = {}
  for i = 1, rows do
    local row = {}
    for j = 1, cols do
      local c = codes[(j - 1) * rows + i]
      row[j] = (typ == 16 or typ == 2 or typ == 1) and string.char(c) or utf8.char(c)
    end
    out[i] = table.concat(row)
  end
  if rows == 1 then return out[1] end
  return out
end

local matrix

-- a sparse array (row indices ir, column starts jc, values pr from pos) as a dense tensor
local function sparse(r, pos, dims, logical)
  local ityp, inn, iat, jtyp, jn, jat, ptyp, pn, pat
  ityp, inn, iat, pos = element(r, pos)
  jtyp, jn, jat, pos = element(r, pos)
  ptyp, pn, pat = element(r, pos)
  local rows, cols = dims[1], dims[2]
  local jc = numbers(r, jtyp, jn, jat, "int64"):tolist()
  local nnz = jc[cols + 1] or 0
  local out = torch.zeros(rows * cols, {dtype = torch.float64})
  if nnz > 0 then
    local ir = numbers(r, ityp, inn, iat, "int64"):narrow(0, 0, nnz)
    local col = {}
    for c = 1, cols do for k = jc[c] + 1, jc[c + 1] do col[k] = c - 1 end end
    local where = ir * cols + torch.tensor(col, {dtype = torch.int64})
    out:scatter_(0, where, numbers(r, ptyp, pn, pat, "float64"):narrow(0, 0, nnz))
  end
  out = out:view(rows, cols)
  return logical and out:ne(0) or out
end

-- the value of the miMATRIX element whose data spans [at, at + n)
function matrix(r, at, n)
  if n == 0 then return torch.empty(0, 0, {dtype = torch.float64}), "" end
  local stop = at + n
  local _, _, fat, pos = element(r, at)
  local flags = string.unpack(r.e .. "I4", r.s, fat)
  local class, complex, logical = flags & 0xFF, flags & 0x800 ~= 0, flags & 0x200 ~= 0
  local dtyp, dn, dat
  dtyp, dn, dat, pos = element(r, pos)
  local dims = numbers(r, dtyp, dn, dat, "int64"):tolist()
  local ntyp, nn, nat
  ntyp, nn, nat, pos = element(r, pos)
  local name = r.s:sub(nat, nat + nn - 1)
  local count = 1
  for _, d in ipairs(dims) do count = count * d end
  if class_dtype[class] then
    if complex then error(string.format("%s: variable '%s' is complex, which is not supported", r.name, name), 0) end
    local typ, bn, bat = element(r, pos)
    local w = widths[typ]
    if not w or bn // w ~= count then
      error(string.format("%s: corrupt MAT file (variable '%s' holds %d bytes for %d elements)", r.name, name, bn, count), 0)
    end
    return shaped(numbers(r, typ, bn, bat, logical and "bool" or class_dtype[class]), dims), name
  elseif class == 5 then
    if complex then error(string.format("%s: variable '%s' is complex, which is not supported", r.name, name), 0) end
    return sparse(r, pos, dims, logical), name
  elseif class == 4 then
    local typ, bn, bat = element(r, pos)
    return chars(r, typ, bn, bat, dims), name
  elseif class == 1 then
    local out = {}
    for i = 1, count do
      local _, cn, cat, nxt = element(r, pos)
      out[i] = matrix(r, cat, cn)
      pos = nxt
    end
    return out, name
  elseif class == 2 then
    local _, _, lat, nxt = element(r, pos)
    local flen = string.unpack(r.e .. "i4", r.s, lat)
    local _, fnn, fat
    _, fnn, fat, pos = element(r, nxt)
    local fields = {}
    for k = 0, fnn // flen - 1 do
      fields[#fields + 1] = r.s:sub(fat + k * flen, fat + (k + 1) * flen - 1):gsub("%z.*$", "")
    end
    local out = {}
    for i = 1, count do
      local item = {}
      for _, f in ipairs(fields) do
        local _, cn, cat, after = element(r, pos)
        item[f] = matrix(r, cat, cn)
        pos = after
      end
      out[i] = item
    end
    if pos > stop + 8 then error(string.format("%s: corrupt MAT file (struct '%s' runs past its element)", r.name, name), 0) end
    if count == 1 then return out[1], name end
    return out, name
  end
  error(string.format("%s: variable '%s' is a %s array, which this reader does not support", r.name, name,
    class_names[class] or ("class " .. class)), 0)
end

-- {name -> value} of the variables in the MAT file held in the string s
function M.loadmat_bytes(s, name)
  name = name or "<bytes>"
  if #s < 128 then error(name .. ": not a MAT file (shorter than the 128-byte header)", 0) end
  local head = s:sub(1, 116)
  if head:find("^MATLAB 7%.3") then
    error(name .. ": a MAT v7.3 file (HDF5), which is not supported: save it with -v7 or -v6 in MATLAB", 0)
  end
  local mark = s:sub(127, 128)
  if not head:find("^MATLAB 5%.0") or (mark ~= "IM" and mark ~= "MI") then
    error(name .. ": not a MATLAB 5 MAT file (v4 files are not supported)", 0)
  end
  local out = {}
  local outer = {s = s, e = mark == "IM" and "<" or ">", name = name}
  local pos = 129
  while pos + 7 <= #s do
    local typ, n, at, nxt = element(outer, pos)
    local r, a, len = outer, at, n
    if typ == 15 then
      r = {s = C.inflate(s, at - 1, n, name), e = outer.e, name = name}
      typ, len, a = element(r, 1)
    end
    if typ == 14 then
      local value, vname = matrix(r, a, len)
      out[vname] = value
    end
    pos = nxt
  end
  return out
end

function M.loadmat(path)
  local f, err = io.open(path, "rb")
  if not f then error(string.format("loadmat: cannot open %s (%s)", path, tostring(err):gsub("^[^:]*: ", "")), 0) end
  local s = f:read("a")
  f:close()
  return M.loadmat_bytes(s, path)
end

return M
