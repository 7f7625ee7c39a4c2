-- Protobuf (proto3) encoding of the TensorBoard plugins' messages for
-- torch_tensorboard_more.lua: each function returns the bytes of one field.
-- Scalar fields at their default (0, "", false) are left out as proto3 does;
-- messages and oneof members are always written. engine/tfevents.c frames
-- the Event around the Summary these build.
local P = {}

local function varint(v) -- a negative int64 takes ten bytes (two's complement)
  local out = {}
  repeat
    local b = v & 0x7F
    v = v >> 7 -- logical shift
    if v ~= 0 then b = b | 0x80 end
    out[#out + 1] = string.char(b)
  until v == 0
  return table.concat(out)
end

local function key(field, wire) return varint(field << 3 | wire) end

-- a length-delimited field (a message, bytes or a string), written even when empty
function P.msg(field, bytes) return key(field, 2) .. varint(#bytes) .. bytes end

function P.str(field, s)
  if s == nil or s == "" then return "" end
  return P.msg(field, s)
end

function P.int(field, v)
  if v == nil or v == 0 then return "" end
  return key(field, 0) .. varint(math.tointeger(v))
end

-- proto3 leaves out +0.0 only (its bits are all zero)
function P.double(field, v)
  local b = string.pack("<d", v or 0)
  if b == string.pack("<d", 0.0) then return "" end
  return key(field, 1) .. b
end

function P.float(field, v)
  local b = string.pack("<f", v or 0)
  if b == string.pack("<f", 0.0) then return "" end
  return key(field, 5) .. b
end

-- oneof members: written whatever their value
function P.oneof_double(field, v) return key(field, 1) .. string.pack("<d", v) end
function P.oneof_bool(field, v) return key(field, 0) .. (v and "\1" or "\0") end

local function packed(field, list, fmt)
  if #list == 0 then return "" end
  local parts = {}
  for i = 1, #list do parts[i] = string.pack(fmt, list[i]) end
  return P.msg(field, table.concat(parts))
end
function P.packed_floats(field, list) return packed(field, list, "<f") end
function P.packed_doubles(field, list) return packed(field, list, "<d") end
function P.packed_ints(field, list)
  if #list == 0 then return "" end
  local parts = {}
  for i = 1, #list do parts[i] = varint(math.tointeger(list[i])) end
  return P.msg(field, table.concat(parts))
end

function P.repeated_str(field, list)
  local parts = {}
  for i = 1, #list do parts[i] = P.msg(field, list[i]) end
  return table.concat(parts)
end

-- ---- tensorflow messages ----

P.DT_FLOAT, P.DT_STRING = 1, 7

-- TensorShapeProto { repeated Dim dim = 2 { int64 size = 1 } }
function P.shape(dims)
  local parts = {}
  for i = 1, #dims do parts[i] = P.msg(2, P.int(1, dims[i])) end
  return table.concat(parts)
end

-- TensorProto { dtype = 1; tensor_shape = 2; float_val = 5 [packed]; string_val = 8 }
function P.float_tensor(dims, values)
  return P.int(1, P.DT_FLOAT) .. P.msg(2, P.shape(dims)) .. P.packed_floats(5, values)
end
function P.string_tensor(dims, strings)
  return P.int(1, P.DT_STRING) .. P.msg(2, P.shape(dims)) .. P.repeated_str(8, strings)
end

-- SummaryMetadata { PluginData plugin_data = 1 { plugin_name = 1; bytes content = 2 } }
function P.metadata(plugin_name, content) return P.msg(1, P.str(1, plugin_name) .. P.str(2, content)) end

-- Summary.Value { tag = 1; histo = 5; audio = 6; tensor = 8; metadata = 9 }, fields in number order
function P.value(tag, v)
  return P.str(1, tag) .. (v.histo and P.msg(5, v.histo) or "") .. (v.audio and P.msg(6, v.audio) or "")
    .. (v.tensor and P.msg(8, v.tensor) or "") .. (v.metadata and P.msg(9, v.metadata) or "")
end

-- Summary { repeated Value value = 1 }
function P.summary(values)
  local parts = {}
  for i = 1, #values do parts[i] = P.msg(1, values[i]) end
  return table.concat(parts)
end

-- HistogramProto { min = 1; max = 2; num = 3; sum = 4; sum_squares = 5; bucket_limit = 6; bucket = 7 }
function P.histogram(h)
  return P.double(1, h.min) .. P.double(2, h.max) .. P.double(3, h.num) .. P.double(4, h.sum)
    .. P.double(5, h.sum_squares) .. P.packed_doubles(6, h.limits) .. P.packed_doubles(7, h.counts)
end

-- Summary.Audio { float sample_rate = 1; int64 num_channels = 2; int64 length_frames = 3;
--                 bytes encoded_audio_string = 4; string content_type = 5 }
function P.audio(rate, channels, frames, wav, content_type)
  return P.float(1, rate) .. P.int(2, channels) .. P.int(3, frames) .. P.str(4, wav) .. P.str(5, content_type)
end

-- google.protobuf.Value { number_value = 2; string_value = 3; bool_value = 4 } (a oneof)
function P.struct_value(kind, v)
  if kind == "number" then return P.oneof_double(2, v) end
  if kind == "string" then return P.msg(3, v) end
  return P.oneof_bool(4, v)
end

return P
