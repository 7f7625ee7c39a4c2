-- nn.utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
-- unpad_sequence, unpack_sequence, invert_permutation and PackedSequence, as PyTorch's. A PackedSequence has PyTorch's fields (data, batch_sizes,
-- sorted_indices, unsorted_indices) and also keeps the padded batch it came from, which the
-- recurrent layers run on with each sequence stopping at its own length.
local torch = require "torch"
local U = require "nn_util"

local M = {}

local PackedSequence = { __name = "PackedSequence" }
PackedSequence.__index = PackedSequence
M.PackedSequence = PackedSequence

function PackedSequence.is(v) return getmetatable(v) == PackedSequence end

function PackedSequence:__tostring()
  return string.format("PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)", tostring(self.data),
    tostring(self.batch_sizes), tostring(self.sorted_indices), tostring(self.unsorted_indices))
end

-- padded: [T, N, *] (time first); lengths: a list of N integers
local function make(padded, lengths, enforce_sorted)
  local N = #lengths
  local order = {}
  for i = 1, N do order[i] = i end
  table.sort(order, function(a, b) return lengths[a] > lengths[b] or (lengths[a] == lengths[b] and a < b) end)
  if enforce_sorted then
    for i = 2, N do
      if lengths[i] > lengths[i - 1] then
        U.error("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do not need ONNX exportability.")
      end
    end
  end
  local sorted, unsorted = {}, {}
  for i, o in ipairs(order) do sorted[i] = o - 1; unsorted[o] = i - 1 end
  local dev = padded.device
  local sorted_idx = torch.tensor(sorted, { dtype = torch.int64 })
  local sorted_padded = padded:index_select(1, sorted_idx:to(dev))
  local sizes, parts = {}, {}
  for t = 1, lengths[order[1]] do
    local k = 0
    for _, o in ipairs(order) do if lengths[o] >= t then k = k + 1 end end
    sizes[t] = k
    parts[t] = sorted_padded[t - 1]:narrow(0, 0, k)
  end
  local self = setmetatable({}, PackedSequence)
  self.data = #parts > 0 and torch.cat(parts, 0) or padded:narrow(0, 0, 0):reshape(-1)
  self.batch_sizes = torch.tensor(sizes, { dtype = torch.int64 })
  self.sorted_indices = not enforce_sorted and sorted_idx or nil
  self.unsorted_indices = not enforce_sorted and torch.tensor(unsorted, { dtype = torch.int64 }) or nil
  self._padded, self._lengths = padded, lengths
  return self
end

-- lengths as a list of integers; the errors of PyTorch's torch.as_tensor(lengths) and its
-- _pack_padded_sequence's check (none_text: the function's own error for None)
local function lengths_list(lengths, none_text)
  if lengths == nil then U.error(none_text or "Could not infer dtype of NoneType") end
  if type(lengths) == "number" then lengths = torch.tensor(lengths, { dtype = torch.int64 }) end
  if torch.is_tensor(lengths) then
    if lengths:dim() ~= 1 then
      U.errorf("'lengths' argument should be a 1D CPU int64 tensor, but got %dD cpu Long tensor", lengths:dim())
    end
    return lengths:to(torch.int64):tolist()
  end
  if type(lengths) ~= "table" then U.errorf("new(): invalid data type '%s'", U.typename(lengths)) end
  local l = {}
  for i, v in ipairs(lengths) do l[i] = math.tointeger(v) or U.errorf("lengths must be integers, got %s", tostring(v)) end
  return l
end

function M.pack_padded_sequence(...)
  local o = U.parse("pack_padded_sequence", { { "input", U.REQUIRED }, { "lengths", U.REQUIRED }, { "batch_first", false },
    { "enforce_sorted", true } }, ...)
  U.check_tensor("pack_padded_sequence", "input", 1, o.input)
  local lengths = lengths_list(o.lengths)
  if o.input:dim() < 2 then U.wrap_dim(1, o.input:dim()) end -- PyTorch's IndexError for input.size(1)
  local x = o.batch_first and o.input:transpose(0, 1) or o.input
  if #lengths ~= x:size(1) then
    U.errorf("Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)", #lengths, x:size(1))
  end
  for _, l in ipairs(lengths) do
    if l <= 0 then U.error("Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0") end
    if l > x:size(0) then U.errorf("a length (%d) is longer than the sequence (%d)", l, x:size(0)) end
  end
  return make(x, lengths, o.enforce_sorted)
end

-- pad_packed_sequence(p, {batch_first, padding_value, total_length}): the padded batch and the lengths
function M.pad_packed_sequence(...)
  local o = U.parse("pad_packed_sequence", { { "sequence", U.REQUIRED }, { "batch_first", false }, { "padding_value", 0.0 },
    { "total_length" } }, ...)
  local p = o.sequence
  if not PackedSequence.is(p) then U.errorf("pad_packed_sequence: expected a PackedSequence, got %s", U.typename(p)) end
  local x, lengths = p._padded, p._lengths
  local T = 0
  for _, l in ipairs(lengths) do T = math.max(T, l) end
  local total = o.total_length or T
  if total < T then
    U.errorf("Expected total_length to be at least the length of the longest sequence in input, but got total_length=%d and max sequence length being %d", total, T)
  end
  local N = #lengths
  local t_idx = torch.arange(total, { device = x.device }):view(total, 1)
  local len = torch.tensor(lengths, { dtype = torch.int64 }):to(x.device):view(1, N)
  local keep = t_idx:lt(len)
  local out = x:narrow(0, 0, math.min(x:size(0), total))
  if total > out:size(0) then
    local pad = out:size()
    local shape = { total - out:size(0) }
    for i = 1, #pad - 1 do shape[#shape + 1] = pad[i] end
    out = torch.cat({ out, torch.zeros(shape, { dtype = x.dtype, device = x.device }) }, 0)
  end
  for _ = 3, x:dim() do keep = keep:unsqueeze(-1) end
  out = torch.where(keep, out, torch.full({}, o.padding_value, { dtype = x.dtype, device = x.device }))
  if o.batch_first then out = out:transpose(0, 1) end
  return out, torch.tensor(lengths, { dtype = torch.int64 })
end

-- pad_sequence(list, {batch_first=false, padding_value=0, padding_side="right"})
function M.pad_sequence(sequences, ...)
  local o = U.parse("pad_sequence", { { "batch_first", false }, { "padding_value", 0.0 }, { "padding_side", "right" } }, ...)
  if type(sequences) ~= "table" or #sequences == 0 then U.error("pad_sequence: expected a non-empty list of tensors") end
  for i, s in ipairs(sequences) do -- PyTorch's parser for its TensorList
    if not torch.is_tensor(s) then U.errorf("expected Tensor as element %d in argument 0, but got %s", i - 1, U.typename(s)) end
  end
  local T = 0
  for _, s in ipairs(sequences) do T = math.max(T, s:size(0)) end
  local padded = {}
  for i, s in ipairs(sequences) do
    local n = s:size(0)
    if n < T then
      local shape = { T - n }
      for d = 1, s:dim() - 1 do shape[#shape + 1] = s:size(d) end
      local fill = torch.full(shape, o.padding_value, { dtype = s.dtype, device = s.device })
      s = o.padding_side == "left" and torch.cat({ fill, s }, 0) or torch.cat({ s, fill }, 0)
    end
    padded[i] = s
  end
  return torch.stack(padded, o.batch_first and 0 or 1)
end

function M.pack_sequence(sequences, ...)
  local o = U.parse("pack_sequence", { { "enforce_sorted", true } }, ...)
  if type(sequences) ~= "table" and not torch.is_tensor(sequences) then -- Python's iteration
    U.errorf("'%s' object is not iterable", U.typename(sequences))
  end
  local lengths = {}
  for i, s in ipairs(sequences) do
    if not torch.is_tensor(s) then U.errorf("'%s' object has no attribute 'size'", U.typename(s)) end
    lengths[i] = s:size(0)
  end
  return M.pack_padded_sequence(M.pad_sequence(sequences), lengths, { enforce_sorted = o.enforce_sorted })
end

-- unpad_sequence(padded, lengths, {batch_first=false}): the list of sequences, each cut to its length
function M.unpad_sequence(padded, lengths, ...)
  local o = U.parse("unpad_sequence", { { "batch_first", false } }, ...)
  if not torch.is_tensor(padded) then U.errorf("unpad_sequence: padded_sequences must be a Tensor, got %s", U.typename(padded)) end
  local l = lengths_list(lengths, "'NoneType' object is not iterable")
  if not o.batch_first then U.wrap_dim(1, padded:dim()); padded = padded:transpose(0, 1) end
  if #l ~= padded:size(0) then U.errorf("unpad_sequence: %d lengths for a batch of %d", #l, padded:size(0)) end
  local out = {}
  for i, n in ipairs(l) do out[i] = padded[i - 1]:narrow(0, 0, n) end
  return out
end

-- unpack_sequence(packed): the list of sequences a PackedSequence holds, in their original order
function M.unpack_sequence(packed)
  if not PackedSequence.is(packed) then U.errorf("unpack_sequence: expected a PackedSequence, got %s", U.typename(packed)) end
  local padded, lengths = M.pad_packed_sequence(packed, { batch_first = true })
  return M.unpad_sequence(padded, lengths, { batch_first = true })
end

-- invert_permutation(p): q with q[p[i]] = i (nil stays nil)
function M.invert_permutation(p)
  if p == nil then return nil end
  U.check_tensor("empty_like", "input", 1, p)
  local q = torch.empty_like(p)
  q:scatter_(0, p, torch.arange(0, p:numel(), { device = p.device, dtype = p.dtype }))
  return q
end

-- for the recurrent layers: a PackedSequence with new padded contents (same lengths)
function M._repack(p, padded) return make(padded, p._lengths, p.sorted_indices == nil) end

return M
