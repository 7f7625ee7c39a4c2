-- nn.AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"), as
-- PyTorch's: a head over the shortlist (the first cutoffs[1] classes) plus one entry per
-- cluster, and per cluster a tail of two bias-free Linear layers (in -> in // div_value^i ->
-- cluster size). forward(input, target) returns the target's log-probability per row and the
-- loss (their negated mean) as two values (PyTorch's named tuple _ASMoutput(output, loss));
-- log_prob(input) gives every class's log-probability, predict(input) the most likely class.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local ASM = Module:extend("AdaptiveLogSoftmaxWithLoss")
M.AdaptiveLogSoftmaxWithLoss = ASM

function ASM:__init(...)
  local name = "AdaptiveLogSoftmaxWithLoss"
  local o = U.parse(name, { { "in_features", REQ }, { "n_classes", REQ }, { "cutoffs", REQ }, { "div_value", 4.0 },
    { "head_bias", false }, { "device" }, { "dtype" } }, ...)
  local in_features = U.check_int(name, "in_features", o.in_features, 1)
  local n_classes = U.check_int(name, "n_classes", o.n_classes, 1)
  local cutoffs = o.cutoffs
  local ok = type(cutoffs) == "table" and #cutoffs > 0
  for i = 1, ok and #cutoffs or 0 do
    local c = cutoffs[i]
    if math.type(c) ~= "integer" and not (type(c) == "number" and c == math.floor(c)) then ok = false; break end
    if c <= 0 or c > n_classes - 1 or (i > 1 and c <= cutoffs[i - 1]) then ok = false; break end
  end
  if not ok then
    U.error("cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value " ..
      "is between 1 and n_classes-1")
  end
  self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, o.div_value, o.head_bias
  local cut = {}
  for i, c in ipairs(cutoffs) do cut[i] = math.tointeger(c) end
  cut[#cut + 1] = n_classes
  self.cutoffs = cut
  self.shortlist_size = cut[1]
  self.n_clusters = #cut - 1
  self.head_size = self.shortlist_size + self.n_clusters
  local fk = { dtype = o.dtype, device = o.device }
  self.head = torch.nn.Linear(in_features, self.head_size, { bias = o.head_bias, dtype = fk.dtype, device = fk.device })
  self.tail = torch.nn.ModuleList()
  for i = 1, self.n_clusters do
    local hsz = math.floor(in_features / o.div_value ^ i)
    local osz = cut[i + 1] - cut[i]
    self.tail:append(torch.nn.Sequential(torch.nn.Linear(in_features, hsz, { bias = false, dtype = fk.dtype, device = fk.device }),
      torch.nn.Linear(hsz, osz, { bias = false, dtype = fk.dtype, device = fk.device })))
  end
end

function ASM:reset_parameters()
  self.head:reset_parameters()
  for i = 0, self.n_clusters - 1 do
    for j = 0, 1 do self.tail[i][j]:reset_parameters() end
  end
end

function ASM:forward(input_, target_)
  U.tensor_arg("AdaptiveLogSoftmaxWithLoss", "input", input_)
  U.tensor_arg("AdaptiveLogSoftmaxWithLoss", "target", target_)
  local tdim = target_:dim()
  if tdim == 1 then
    if input_:size(0) ~= target_:size(0) then U.error("Input and target should have the same size in the batch dimension.") end
    if input_:dim() ~= 2 then U.errorf("1D target tensor expects 2D input tensors, but found inputs with size %s", U.shape_str(input_)) end
  elseif tdim == 0 then
    if input_:dim() ~= 1 then U.errorf("0D target tensor expects 1D input tensors, but found inputs with size %s", U.shape_str(input_)) end
  else
    U.error("0D or 1D target tensor expected, multi-target not supported")
  end
  local batched = tdim > 0
  local input = batched and input_ or input_:unsqueeze(0)
  local target = (batched and target_ or target_:unsqueeze(0)):to(torch.int64)
  local n = target:size(0)
  if n > 0 then
    local lo, hi = target:min():item(), target:max():item()
    if lo < 0 or hi >= self.n_classes then
      U.errorf("Target values should be in [0, %d], but values in range [%d, %d] were found. ", self.n_classes - 1, lo, hi)
    end
  end
  local output = input.new_zeros(input, n)
  local head_index = target:clone()
  for i = 1, self.n_clusters do
    local low, high = self.cutoffs[i], self.cutoffs[i + 1]
    local mask = target:ge(low):logical_and(target:lt(high))
    local rows = mask:nonzero():reshape(-1)
    if rows:numel() > 0 then
      local relative = target:index_select(0, rows) - low
      local cluster_logprob = F.log_softmax(self.tail[i - 1](input:index_select(0, rows)), 1)
      local lp = cluster_logprob:gather(1, relative:unsqueeze(1)):squeeze(1)
      output = output:index_copy(0, rows, lp)
      head_index = torch.where(mask, torch.full_like(head_index, self.shortlist_size + i - 1), head_index)
    end
  end
  local head_logprob = F.log_softmax(self.head(input), 1)
  output = output + head_logprob:gather(1, head_index:unsqueeze(1)):squeeze(1)
  local loss = (-output):mean()
  if not batched then output = output:squeeze(0) end
  return output, loss
end

-- every class's log-probability: [N, n_classes] (or [n_classes] for one unbatched row)
function ASM:log_prob(input)
  U.tensor_arg("log_prob", "input", input)
  local batched = input:dim() == 2
  if not batched and input:dim() ~= 1 then U.errorf("log_prob: expected a 1D or 2D input, got %s", U.shape_str(input)) end
  local x = batched and input or input:unsqueeze(0)
  local head_logprob = F.log_softmax(self.head(x), 1)
  local parts = { head_logprob:narrow(1, 0, self.shortlist_size) }
  for i = 1, self.n_clusters do
    local cluster_logprob = F.log_softmax(self.tail[i - 1](x), 1)
    parts[#parts + 1] = cluster_logprob + head_logprob:narrow(1, self.shortlist_size + i - 1, 1)
  end
  local out = torch.cat(parts, 1)
  return batched and out or out:squeeze(0)
end

-- the most likely class of each row (int64)
function ASM:predict(input)
  return self:log_prob(input):argmax(-1)
end

return M
