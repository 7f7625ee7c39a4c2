-- torch.distributed.checkpoint (DCP): every rank saves the tensors it holds, rank 0 a metadata
-- file; a load reads, on each rank, the saved chunks that overlap what its state dict holds, so
-- it may run with another world size than the save (resharding).
--   local dcp = torch.distributed.checkpoint
--   dcp.save({ model = model_sd, optim = optim_sd, epoch = 3 }, { checkpoint_id = "ckpt" })
--   dcp.load(state, { checkpoint_id = "ckpt" })    -- in place into state's tensors
--
-- A state dict is a nested table (OrderedDicts, plain tables, lists); its leaves are tensors,
-- ShardedTensors (a rank's piece of a larger tensor at some offsets: the sharded state dicts of
-- fully_shard-ed models, in place of PyTorch's DTensor) and other values. A table holding no
-- tensor is one value. A leaf's name (fqn) is its keys joined with '.': "model.fc.weight".
--
-- On disk, in the checkpoint directory:
--  * __<rank>_0.distcp, one file a rank: torch.save's format (safetensors) of
--    { tensors = OrderedDict(key -> tensor), values = { [fqn] = value } }. A rank writes the
--    pieces of its ShardedTensors (key "<fqn>#<offsets>"); plain tensors, replicated on every
--    rank, and the other values are written once, by rank 0 (key "<fqn>").
--  * .metadata, written by rank 0 after every data file: JSON
--    { "format": "nnrepl-dcp", "version": 1, "world_size": W, "items": [ item, ... ] } with
--    items in rank 0's order, each { "fqn", "path" (the keys: strings, integers),
--      "type": "tensor", "dtype": "float32", "shape": [global sizes],
--      "chunks": [ { "file", "key", "offsets": [...], "sizes": [...] }, ... ] }
--    or { "fqn", "path", "type": "value", "file" }.
-- A load reads each data file it needs whole (once).
local torch = require "torch"
local U = require "nn_util"
local json = require "json"
local dist = torch.distributed
local io_ = torch._io
local OD = U.OrderedDict

local dcp = dist.checkpoint or {}
dist.checkpoint = dcp

-- ---- ShardedTensor: this rank's piece of a tensor of global shape `shape` at `offsets` ----

local ST = { __name = "torch.distributed.checkpoint.ShardedTensor" }
ST.__index = ST

local function is_sharded(v) return getmetatable(v) == ST end
dcp._is_sharded = is_sharded

-- ShardedTensor(local_tensor, global_shape, offsets) (offsets: one a dim, 0-based)
function dcp.ShardedTensor(local_tensor, shape, offsets)
  if not torch.is_tensor(local_tensor) then U.errorf("ShardedTensor: expected a tensor, got %s", U.typename(local_tensor)) end
  if getmetatable(shape) and getmetatable(shape).__name == "torch.Size" then shape = shape:totable() end
  if #shape ~= local_tensor:dim() or #offsets ~= #shape then
    U.errorf("ShardedTensor: a %d-dim local tensor needs %d sizes and offsets, got %d and %d", local_tensor:dim(), local_tensor:dim(), #shape, #offsets)
  end
  for d = 1, #shape do
    if offsets[d] < 0 or offsets[d] + local_tensor:size(d - 1) > shape[d] then
      U.errorf("ShardedTensor: the local tensor %s at offsets [%s] does not fit in the global shape [%s]",
        U.shape_str(local_tensor), table.concat(offsets, ", "), table.concat(shape, ", "))
    end
  end
  return setmetatable({ _local = local_tensor, _shape = shape, offsets = offsets,
    dtype = local_tensor.dtype, device = local_tensor.device }, ST)
end

function ST:to_local() return self._local end
function ST:dim() return #self._shape end
function ST:size(d)
  if d == nil then return torch.Size(self._shape) end
  return self._shape[U.wrap_dim(d, #self._shape) + 1]
end
function ST:numel()
  local n = 1
  for _, s in ipairs(self._shape) do n = n * s end
  return n
end

-- the whole tensor on every rank (a collective: each rank's piece, summed in place of zeros)
function ST:full_tensor(group)
  local full = torch.zeros(self._shape, { dtype = self.dtype, device = self.device })
  if self._local:numel() > 0 then
    local box = full
    for d, off in ipairs(self.offsets) do box = box:narrow(d - 1, off, self._local:size(d - 1)) end
    box:copy_(self._local)
  end
  if dist.is_initialized() and dist.get_world_size(group) > 1 then dist.all_reduce(full, { group = group }) end
  return full
end

function ST:__tostring()
  return string.format("ShardedTensor(global shape [%s], offsets [%s], local %s)", table.concat(self._shape, ", "),
    table.concat(self.offsets, ", "), tostring(self._local))
end

-- ---- storage: FileSystemWriter / FileSystemReader name the directory ----

local FSW = { __name = "torch.distributed.checkpoint.FileSystemWriter" }
FSW.__index = FSW
local FSR = { __name = "torch.distributed.checkpoint.FileSystemReader" }
FSR.__index = FSR

function dcp.FileSystemWriter(...)
  local o = U.parse("FileSystemWriter", { { "path", U.REQUIRED }, { "single_file_per_rank", true }, { "sync_files", true },
    { "thread_count", 1 }, { "per_thread_copy_ahead", 10000000 }, { "cache_staged_state_dict", false }, { "overwrite", true } }, ...)
  if not o.single_file_per_rank then U.error("FileSystemWriter: single_file_per_rank=false is not supported; each rank writes one file") end
  return setmetatable({ path = tostring(o.path), overwrite = o.overwrite }, FSW)
end

function dcp.FileSystemReader(...)
  local o = U.parse("FileSystemReader", { { "path", U.REQUIRED } }, ...)
  return setmetatable({ path = tostring(o.path) }, FSR)
end

-- the directory of checkpoint_id or the storage object
local function directory(fn, o, key, mt)
  local s = o[key]
  if s ~= nil then
    if getmetatable(s) ~= mt then U.errorf("%s: %s must be a %s, got %s", fn, key, mt.__name:match("[^.]+$"), U.typename(s)) end
    if o.checkpoint_id ~= nil and tostring(o.checkpoint_id) ~= s.path then
      U.errorf("%s: checkpoint_id '%s' and the %s's path '%s' differ", fn, tostring(o.checkpoint_id), key, s.path)
    end
    return s.path, s
  end
  if o.checkpoint_id == nil then U.errorf("%s: give checkpoint_id (a directory) or %s", fn, key) end
  return tostring(o.checkpoint_id), nil
end

-- ---- state dicts as leaves ----

local function is_container(v)
  return type(v) == "table" and not torch.is_tensor(v) and (getmetatable(v) == nil or OD.is(v) or require("optim_state_dict").is(v))
end

local function holds_tensor(v)
  if torch.is_tensor(v) or is_sharded(v) then return true end
  if not is_container(v) then return false end
  for _, x in pairs(v) do if holds_tensor(x) then return true end end
  return false
end

-- keys in a fixed order: an OrderedDict's own, else numbers then strings, sorted
local function keys_of(t)
  if OD.is(t) then return t:keys() end
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b)
    local na, nb = type(a) == "number", type(b) == "number"
    if na ~= nb then return na end
    if na or type(a) == type(b) then return a < b end
    return tostring(a) < tostring(b)
  end)
  return ks
end

local function key_text(k) return math.type(k) == "float" and U.pyfloat(k) or tostring(k) end

-- the leaves of sd: { fqn, path, value, parent, key } in order
local function flatten(sd, fn)
  if not is_container(sd) then U.errorf("%s: state_dict must be a table (a state dict), got %s", fn, U.typename(sd)) end
  local out = {}
  local function walk(t, path)
    for _, k in ipairs(keys_of(t)) do
      if type(k) ~= "string" and math.type(k) ~= "integer" then
        U.errorf("%s: state dict keys must be strings or integers, got %s", fn, U.typename(k))
      end
      local v, p = t[k], table.move(path, 1, #path, 1, {})
      p[#p + 1] = k
      if is_container(v) and holds_tensor(v) then walk(v, p)
      else
        local names = {}
        for i, x in ipairs(p) do names[i] = key_text(x) end
        out[#out + 1] = { fqn = table.concat(names, "."), path = p, value = v, parent = t, key = k }
      end
    end
  end
  walk(sd, {})
  return out
end

local function dtype_name(dt) return (tostring(dt):gsub("^torch%.", "")) end
local function sizes(t) return t:size():totable() end

-- ---- JSON out (the metadata) ----

local function encode(v)
  if type(v) == "string" then return json.string(v) end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if type(v) == "boolean" then return tostring(v) end
  if type(v) ~= "table" then U.errorf("checkpoint metadata: cannot encode %s", U.typename(v)) end
  local parts = {}
  if v[1] ~= nil or next(v) == nil and getmetatable(v) == "array" then
    for i, x in ipairs(v) do parts[i] = encode(x) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  for _, k in ipairs(keys_of(v)) do parts[#parts + 1] = json.string(k) .. ":" .. encode(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- [] for an empty list (a 0-dim tensor's shape)
local function list(t) return setmetatable(table.move(t, 1, #t, 1, {}), { __metatable = "array" }) end

local function same_shape(a, b) return #a == #b and table.concat(a, ",") == table.concat(b, ",") end

local function prod(t)
  local n = 1
  for _, s in ipairs(t) do n = n * s end
  return n
end

-- ---- save ----

local save_spec = { { "checkpoint_id" }, { "storage_writer" }, { "planner" }, { "process_group" }, { "no_dist", false } }

local function ranks(o)
  local on = not o.no_dist and dist.is_available() and dist.is_initialized()
  if not on then return false, 0, 1 end
  return true, dist.get_rank(o.process_group), dist.get_world_size(o.process_group)
end

local function data_file(rank) return string.format("__%d_0.distcp", rank) end

function dcp.save(state_dict, ...)
  local o = U.parse("save", save_spec, ...)
  local dir, writer = directory("save", o, "storage_writer", FSW)
  if o.planner ~= nil then U.error("save: a custom planner is not supported (the default planner's deduplication is built in)") end
  local on, rank, world = ranks(o)
  local leaves = flatten(state_dict, "save")
  if writer and not writer.overwrite then
    local f = io.open(dir .. "/.metadata")
    if f then f:close(); U.errorf("save: %s already holds a checkpoint and the FileSystemWriter has overwrite=false", dir) end
  end
  io_.makedirs(dir)
  local file = data_file(rank)
  local tensors, values, items = OD.new(), {}, {}
  for _, l in ipairs(leaves) do
    local v = l.value
    local item = { fqn = l.fqn, path = l.path }
    if is_sharded(v) then
      local loc = v._local:detach()
      item.type, item.dtype, item.shape, item.chunks = "tensor", dtype_name(loc.dtype), list(v._shape), list({})
      if loc:numel() > 0 then
        local key = l.fqn .. "#" .. table.concat(v.offsets, ",")
        tensors[key] = loc
        item.chunks[1] = { file = file, key = key, offsets = list(v.offsets), sizes = list(sizes(loc)) }
      end
    elseif torch.is_tensor(v) then
      item.type, item.dtype, item.shape, item.chunks = "tensor", dtype_name(v.dtype), list(sizes(v)), list({})
      if rank == 0 then
        tensors[l.fqn] = v:detach()
        local zeros = {}
        for d = 1, v:dim() do zeros[d] = 0 end
        item.chunks[1] = { file = file, key = l.fqn, offsets = list(zeros), sizes = list(sizes(v)) }
      end
    else
      item.type = "value"
      if rank == 0 then values[l.fqn], item.file = v, file end
    end
    items[#items + 1] = item
  end
  torch.save({ tensors = tensors, values = values }, dir .. "/" .. file)
  local all = { items }
  if on and world > 1 then
    all = {}
    dist.all_gather_object(all, items, o.process_group)
  end
  if rank == 0 then
    local merged, by = {}, {}
    for r, its in ipairs(all) do
      for _, it in ipairs(its) do
        local m = by[it.fqn]
        if not m then
          merged[#merged + 1], by[it.fqn] = it, it
        elseif m.type ~= it.type or m.dtype ~= it.dtype or not same_shape(m.shape or {}, it.shape or {}) then
          U.errorf("save: '%s' differs between rank 0 and rank %d (type, dtype or global shape)", it.fqn, r - 1)
        elseif r > 1 and it.chunks then
          for _, c in ipairs(it.chunks) do m.chunks[#m.chunks + 1] = c end
        end
      end
    end
    for _, m in ipairs(merged) do
      if m.type == "tensor" then
        local n = 0
        for _, c in ipairs(m.chunks) do n = n + prod(c.sizes) end
        if n ~= prod(m.shape) then
          U.errorf("save: the pieces of '%s' hold %d elements of its %d (shards overlap or are missing)", m.fqn, n, prod(m.shape))
        end
      end
    end
    local text = encode({ format = "nnrepl-dcp", version = 1, world_size = world, items = list(merged) })
    local tmp = dir .. "/.metadata.tmp"
    local f = assert(io.open(tmp, "wb"))
    f:write(text)
    f:close()
    assert(os.rename(tmp, dir .. "/.metadata"))
  end
  if on and world > 1 then dist.barrier(o.process_group) end
end

-- async_save runs the save now and returns a completed Future
function dcp.async_save(state_dict, ...)
  local o = U.parse("async_save", { { "checkpoint_id" }, { "storage_writer" }, { "planner" }, { "process_group" },
    { "async_checkpointer_type" }, { "async_stager" }, { "no_dist", false } }, ...)
  dcp.save(state_dict, { checkpoint_id = o.checkpoint_id, storage_writer = o.storage_writer, planner = o.planner,
    process_group = o.process_group, no_dist = o.no_dist })
  local fut = torch.futures.Future()
  fut:set_result(nil)
  return fut
end

-- ---- load ----

local function read_metadata(fn, dir)
  local f = io.open(dir .. "/.metadata", "rb")
  if not f then
    local d = io.open(dir, "rb")
    if not d then U.errorf("%s: checkpoint directory '%s' does not exist", fn, dir) end
    d:close()
    U.errorf("%s: '%s' is not a checkpoint: it has no .metadata file", fn, dir)
  end
  local text = f:read("a")
  f:close()
  local meta = json.decode(text, function(msg, pos)
    U.errorf("%s: corrupt checkpoint metadata %s/.metadata (%s at byte %d)", fn, dir, msg, pos)
  end)
  if type(meta) ~= "table" or meta.format ~= "nnrepl-dcp" or type(meta.items) ~= "table" then
    U.errorf("%s: corrupt checkpoint metadata %s/.metadata (not an nnrepl checkpoint's)", fn, dir)
  end
  meta.by = {}
  for _, it in ipairs(meta.items) do meta.by[it.fqn] = it end
  return meta
end

-- the data files of dir, each read once
local function file_cache(fn, dir)
  local files = {}
  return function(name, fqn)
    if not files[name] then
      local path = dir .. "/" .. name
      local f = io.open(path, "rb")
      if not f then U.errorf("%s: checkpoint file %s is missing (it holds '%s')", fn, path, fqn) end
      f:close()
      files[name] = torch.load(path, { map_location = "cpu" })
    end
    return files[name]
  end
end

-- copy the parts of the checkpoint's chunks of item that overlap dst (at offsets) into dst
local function fill(item, dst, offsets, open)
  for _, c in ipairs(item.chunks) do
    local src, box, skip = nil, dst, false
    for d = 1, #offsets do
      local lo = math.max(offsets[d], c.offsets[d])
      local hi = math.min(offsets[d] + dst:size(d - 1), c.offsets[d] + c.sizes[d])
      if hi <= lo then skip = true; break end
    end
    if not skip then
      src = open(c.file, item.fqn).tensors[c.key]
      if not src then U.errorf("load: the checkpoint file %s has no piece '%s'", c.file, c.key) end
      for d = 1, #offsets do
        local lo = math.max(offsets[d], c.offsets[d])
        local hi = math.min(offsets[d] + dst:size(d - 1), c.offsets[d] + c.sizes[d])
        src = src:narrow(d - 1, lo - c.offsets[d], hi - lo)
        box = box:narrow(d - 1, lo - offsets[d], hi - lo)
      end
      box:copy_(src)
    end
  end
end

local function shape_text(t) return "torch.Size([" .. table.concat(t, ", ") .. "])" end

function dcp.load(state_dict, ...)
  local o = U.parse("load", { { "checkpoint_id" }, { "storage_reader" }, { "planner" }, { "process_group" }, { "no_dist", false } }, ...)
  local dir = directory("load", o, "storage_reader", FSR)
  if o.planner ~= nil then U.error("load: a custom planner is not supported") end
  local meta = read_metadata("load", dir)
  local open = file_cache("load", dir)
  local leaves = flatten(state_dict, "load")
  local _ <close> = torch.no_grad()
  for _, l in ipairs(leaves) do
    local item = meta.by[l.fqn]
    if not item then U.errorf("load: Missing key in checkpoint state_dict: %s.", l.fqn) end
    local v = l.value
    if torch.is_tensor(v) or is_sharded(v) then
      if item.type ~= "tensor" then U.errorf("load: '%s' is a tensor in the state dict but not in the checkpoint", l.fqn) end
      local shape = is_sharded(v) and v._shape or sizes(v)
      if not same_shape(shape, item.shape) then
        U.errorf("load: Size mismatch between saved %s and current: %s for %s", shape_text(item.shape), shape_text(shape), l.fqn)
      end
      if is_sharded(v) then fill(item, v._local, v.offsets, open)
      else
        local zeros = {}
        for d = 1, v:dim() do zeros[d] = 0 end
        fill(item, v, zeros, open)
      end
    elseif item.type == "value" then
      l.parent[l.key] = open(item.file, l.fqn).values[l.fqn]
    else
      U.errorf("load: '%s' is a tensor in the checkpoint but %s in the state dict", l.fqn, U.typename(v))
    end
  end
end

-- ---- format_utils: one torch.save file <-> a DCP directory ----

local format_utils = {}
dcp.format_utils = format_utils

-- the whole checkpoint in dir as a nested table (OrderedDicts under string keys)
local function read_all(fn, dir)
  local meta = read_metadata(fn, dir)
  local open = file_cache(fn, dir)
  local out = OD.new()
  for _, it in ipairs(meta.items) do
    local t = out
    for i = 1, #it.path - 1 do
      local k = it.path[i]
      if t[k] == nil then t[k] = type(it.path[i + 1]) == "string" and OD.new() or {} end
      t = t[k]
    end
    local v
    if it.type == "tensor" then
      local dt = torch[it.dtype]
      if not dt then U.errorf("%s: unknown dtype '%s' for %s in the metadata", fn, tostring(it.dtype), it.fqn) end
      v = torch.empty(it.shape, { dtype = dt })
      local zeros = {}
      for d = 1, #it.shape do zeros[d] = 0 end
      fill(it, v, zeros, open)
    else
      v = open(it.file, it.fqn).values[it.fqn]
    end
    t[it.path[#it.path]] = v
  end
  return out
end

function format_utils.dcp_to_torch_save(...)
  local o = U.parse("dcp_to_torch_save", { { "dcp_checkpoint_dir", U.REQUIRED }, { "torch_save_path", U.REQUIRED } }, ...)
  torch.save(read_all("dcp_to_torch_save", tostring(o.dcp_checkpoint_dir)), tostring(o.torch_save_path))
end

function format_utils.torch_save_to_dcp(...)
  local o = U.parse("torch_save_to_dcp", { { "torch_save_path", U.REQUIRED }, { "dcp_checkpoint_dir", U.REQUIRED } }, ...)
  dcp.save(torch.load(tostring(o.torch_save_path), { map_location = "cpu" }), { checkpoint_id = tostring(o.dcp_checkpoint_dir), no_dist = true })
end

return dcp
