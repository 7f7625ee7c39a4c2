-- A MAT v5 file writer for the dataset tests (tv_matfile reads what it writes):
--   local W = dofile(here .. "mat_writer.lua")("<")   -- "<" little-endian, ">" big-endian
-- W.double(name, dims, values), W.array, W.char, W.struct, W.cell, W.compressed(element), W.file(elements)
return function(e)
  local W = {}
  local function pad8(s) return s .. string.rep("\0", (-#s) % 8) end
  function W.el(typ, data) return string.pack(e .. "I4I4", typ, #data) .. pad8(data) end
  function W.small(typ, data) -- at most 4 bytes: type and size share the first word
    return string.pack(e .. "I4", (#data << 16) | typ) .. data .. string.rep("\0", 4 - #data)
  end
  function W.name(s) return #s <= 4 and #s > 0 and W.small(1, s) or W.el(1, s) end
  -- a numeric array: class (6 double, 9 uint8, 11 uint16, ...), dims, MAT data type and its
  -- string.pack format, the values in column-major order
  function W.array(name, class, dims, typ, fmt, values, flags)
    local data = {}
    for i, v in ipairs(values) do data[i] = string.pack(e .. fmt, v) end
    return W.el(14, W.el(6, string.pack(e .. "I4I4", class | (flags or 0), 0)) ..
      W.el(5, string.pack(e .. string.rep("i4", #dims), table.unpack(dims))) .. W.name(name) .. W.el(typ, table.concat(data)))
  end
  function W.double(name, dims, values) return W.array(name, 6, dims, 9, "d", values) end
  function W.char(name, s)
    local codes = {}
    for i = 1, #s do codes[i] = s:byte(i) end
    return W.array(name, 4, {1, #s}, 4, "I2", codes)
  end
  -- a struct with the given fields (a list of {name, element without its name})
  function W.struct(name, dims, fields, values)
    local flen = 8 -- the field name length: the longest name and its NUL, in 8-byte steps
    for _, f in ipairs(fields) do flen = math.max(flen, (#f + 8) // 8 * 8) end
    local names = {}
    for _, f in ipairs(fields) do names[#names + 1] = f .. string.rep("\0", flen - #f) end
    return W.el(14, W.el(6, string.pack(e .. "I4I4", 2, 0)) .. W.el(5, string.pack(e .. string.rep("i4", #dims),
      table.unpack(dims))) .. W.name(name) .. W.small(5, string.pack(e .. "i4", flen)) .. W.el(1, table.concat(names)) ..
      table.concat(values))
  end
  function W.cell(name, dims, values)
    return W.el(14, W.el(6, string.pack(e .. "I4I4", 1, 0)) .. W.el(5, string.pack(e .. string.rep("i4", #dims),
      table.unpack(dims))) .. W.name(name) .. table.concat(values))
  end
  function W.file(elements)
    local text = "MATLAB 5.0 MAT-file, written by nnrepl's tests"
    return text .. string.rep(" ", 116 - #text) .. string.rep("\0", 8) .. string.pack(e .. "I2", 0x0100) ..
      (e == "<" and "IM" or "MI") .. table.concat(elements)
  end
  -- miCOMPRESSED: a zlib stream of stored (uncompressed) deflate blocks of at most `block` bytes
  function W.compressed(element, block)
    block = block or 65535
    local a, b = 1, 0
    for i = 1, #element do
      a = (a + element:byte(i)) % 65521
      b = (b + a) % 65521
    end
    local parts, pos = {"\x78\x01"}, 1
    repeat
      local chunk = element:sub(pos, pos + block - 1)
      pos = pos + #chunk
      parts[#parts + 1] = string.char(pos > #element and 1 or 0) .. string.pack("<I2I2", #chunk, (~#chunk) & 0xFFFF) .. chunk
    until pos > #element
    parts[#parts + 1] = string.pack(">I4", (b << 16) | a)
    local z = table.concat(parts)
    return string.pack(e .. "I4I4", 15, #z) .. z
  end
  return W
end
