-- A reader for TensorBoard event files, for the tensorboard tests: TFRecord framing with both
-- masked CRC-32Cs computed here bit by bit, and a protobuf decoder (field number -> list of raw
-- values). Usage: local R = dofile(here .. "tb_reader.lua")(T)
return function(T)
-- ---- CRC-32C (Castagnoli), bit by bit ----
local function crc32c(s)
  local crc = 0xFFFFFFFF
  for i = 1, #s do
    crc = crc ~ s:byte(i)
    for _ = 1, 8 do
      if crc & 1 == 1 then crc = (crc >> 1) ~ 0x82F63B78 else crc = crc >> 1 end
    end
  end
  return crc ~ 0xFFFFFFFF
end
local function masked(s)
  local c = crc32c(s)
  return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xa282ead8) & 0xFFFFFFFF
end

-- ---- TFRecord reader ----
local function read_records(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  local records, pos, ok = {}, 1, true
  while pos <= #s do
    if pos + 11 > #s then ok = false; break end
    local lenbytes = s:sub(pos, pos + 7)
    local n = string.unpack("<I8", lenbytes)
    local lcrc = string.unpack("<I4", s, pos + 8)
    if lcrc ~= masked(lenbytes) then ok = false; break end
    local data = s:sub(pos + 12, pos + 11 + n)
    if #data ~= n or pos + 15 + n > #s then ok = false; break end
    local dcrc = string.unpack("<I4", s, pos + 12 + n)
    if dcrc ~= masked(data) then ok = false; break end
    records[#records + 1] = data
    pos = pos + 16 + n
  end
  return records, ok
end

-- ---- protobuf: field number -> list of raw values ----
local function pb_decode(s)
  local fields, pos = {}, 1
  local function varint()
    local v, shift = 0, 0
    while true do
      local b = s:byte(pos)
      pos = pos + 1
      v = v | ((b & 0x7F) << shift)
      if b < 0x80 then return v end
      shift = shift + 7
    end
  end
  while pos <= #s do
    local key = varint()
    local field, wt = key >> 3, key & 7
    local v
    if wt == 0 then v = varint()
    elseif wt == 1 then v = s:sub(pos, pos + 7); pos = pos + 8
    elseif wt == 2 then local n = varint(); v = s:sub(pos, pos + n - 1); pos = pos + n
    elseif wt == 5 then v = s:sub(pos, pos + 3); pos = pos + 4
    else error("bad wire type " .. wt) end
    fields[field] = fields[field] or {}
    table.insert(fields[field], v)
  end
  return fields
end
local function f64(b) return (string.unpack("<d", b)) end
local function f32(b) return (string.unpack("<f", b)) end
local function packed_doubles(b)
  local out = {}
  for i = 1, #b, 8 do out[#out + 1] = string.unpack("<d", b, i) end
  return out
end

-- Event -> {wall_time, step, file_version, values = {{tag, fields}}}
local function decode_event(data)
  local e = pb_decode(data)
  local ev = { wall_time = e[1] and f64(e[1][1]), step = e[2] and e[2][1] or 0, file_version = e[3] and e[3][1] }
  if e[5] then
    ev.values = {}
    for _, v in ipairs(pb_decode(e[5][1])[1] or {}) do
      local val = pb_decode(v)
      ev.values[#ev.values + 1] = { tag = val[1][1], fields = val }
    end
  end
  return ev
end

local function events_in(dir)
  local files = {}
  local p = io.popen('ls "' .. dir .. '"')
  for name in p:lines() do
    if name:find("^events%.out%.tfevents%.") then files[#files + 1] = dir .. "/" .. name end
  end
  p:close()
  table.sort(files)
  return files
end

local function read_events(path)
  local recs, ok = read_records(path)
  T.check(ok, "framing and CRCs of " .. path)
  local evs = {}
  for i, r in ipairs(recs) do evs[i] = decode_event(r) end
  return evs
end

return { crc32c = crc32c, masked = masked, read_records = read_records, pb_decode = pb_decode, f64 = f64, f32 = f32,
  packed_doubles = packed_doubles, decode_event = decode_event, events_in = events_in, read_events = read_events }
end
