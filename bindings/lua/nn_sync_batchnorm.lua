-- nn.SyncBatchNorm: BatchNorm whose training statistics are those of the whole batch across
-- the ranks of a process group (torch.distributed, NCCL or gloo), and
-- SyncBatchNorm.convert_sync_batchnorm. Forward all-reduces each channel's sum, sum of
-- squares and count in one call; backward all-reduces the sums of dy and dy * (x - mean)
-- to form the input's gradient, while weight and bias get their local gradients (DDP
-- averages those). Outside training or a group of one it is BatchNorm.
local torch = require "torch"
local U = require "nn_util"
local BatchNorm = require("nn_norm")._BatchNorm

local M = {}

-- the view that broadcasts a per-channel vector over x, and the dims summed per channel
local function channel_layout(x)
  local shape, dims = {}, {}
  for d = 0, x:dim() - 1 do
    shape[d + 1] = d == 1 and x:size(1) or 1
    if d ~= 1 then dims[#dims + 1] = d end
  end
  return shape, dims
end

local Sync = torch.autograd.Function:extend("SyncBatchNormFunction")

function Sync.forward(ctx, x, weight, bias, bn, factor)
  local dist = torch.distributed
  local shape, dims = channel_layout(x)
  local C = x:size(1)
  local acc = (x.dtype == torch.float16 or x.dtype == torch.bfloat16) and x:float() or x
  local count = torch.full({ 1 }, x:numel() // C, { dtype = acc.dtype, device = x.device })
  local stats = torch.cat({ acc:sum(dims), (acc * acc):sum(dims), count })
  dist.all_reduce(stats, { group = bn.process_group })
  local n = stats:narrow(0, 2 * C, 1)
  local mean = stats:narrow(0, 0, C) / n
  local var = stats:narrow(0, C, C) / n - mean * mean
  local invstd = (var + bn.eps):rsqrt()
  if bn.track_running_stats and bn.running_mean ~= nil then
    bn.running_mean:mul_(1 - factor):add_((mean * factor):to(bn.running_mean.dtype))
    bn.running_var:mul_(1 - factor):add_((var * n / (n - 1) * factor):to(bn.running_var.dtype))
  end
  local y = (acc - mean:view(shape)) * invstd:view(shape)
  if weight ~= nil then y = y * weight:view(shape) + bias:view(shape) end
  ctx:save_for_backward(x, weight, mean, invstd, n)
  ctx.group = bn.process_group
  return y:to(x.dtype)
end

function Sync.backward(ctx, dy)
  local x, weight, mean, invstd, n = table.unpack(ctx.saved_tensors)
  local shape, dims = channel_layout(x)
  local C = x:size(1)
  local acc = mean.dtype ~= x.dtype and x:to(mean.dtype) or x
  dy = dy:to(mean.dtype)
  local xmu = acc - mean:view(shape)
  local sum_dy, sum_dy_xmu = dy:sum(dims), (dy * xmu):sum(dims)
  local gw, gb
  if weight ~= nil then gw, gb = (sum_dy_xmu * invstd):to(weight.dtype), sum_dy:to(weight.dtype) end
  local gx
  if ctx.needs_input_grad[1] then
    local sums = torch.cat({ sum_dy, sum_dy_xmu })
    torch.distributed.all_reduce(sums, { group = ctx.group })
    local mean_dy = sums:narrow(0, 0, C) / n
    local mean_dy_xmu = sums:narrow(0, C, C) / n
    local scale = weight ~= nil and invstd * weight:to(invstd.dtype) or invstd
    gx = ((dy - mean_dy:view(shape) - xmu * (invstd * invstd * mean_dy_xmu):view(shape)) * scale:view(shape)):to(x.dtype)
  end
  return gx, gw, gb, nil, nil
end

local SyncBatchNorm = BatchNorm:extend("SyncBatchNorm")
M.SyncBatchNorm = SyncBatchNorm
SyncBatchNorm._dims = { [2] = true, [3] = true, [4] = true, [5] = true }
SyncBatchNorm._dims_msg = "expected at least 2D input (got %dD input)"

function SyncBatchNorm:__init(...)
  local o = U.parse("SyncBatchNorm", { { "num_features", U.REQUIRED }, { "eps", 1e-5 }, { "momentum", 0.1 },
    { "affine", true }, { "track_running_stats", true }, { "process_group" }, { "device" }, { "dtype" } }, ...)
  BatchNorm.__init(self, o.num_features, o.eps, o.momentum, o.affine,
    o.track_running_stats, { device = o.device, dtype = o.dtype })
  self.process_group = o.process_group
end

local function group_size(group)
  local dist = torch.distributed
  if not (dist and dist.is_available() and dist.is_initialized()) then return 1 end
  return dist.get_world_size(group)
end

function SyncBatchNorm:forward(x)
  if not (self.training and group_size(self.process_group) > 1) then return BatchNorm.forward(self, x) end
  if not torch.is_tensor(x) then U.errorf("SyncBatchNorm expected a tensor as input, got %s", U.typename(x)) end
  self:_check_input_dim(x)
  if x:size(1) ~= self.num_features then
    U.errorf("SyncBatchNorm: expected input with %d channels, got %s", self.num_features, U.shape_str(x))
  end
  local factor = self:_momentum_factor()
  return Sync.apply(x, self.weight, self.bias, self, factor)
end

-- Every BatchNorm*d in module (or module itself) replaced by a SyncBatchNorm sharing its
-- parameters and buffers; returns the converted module.
function SyncBatchNorm.convert_sync_batchnorm(module, process_group)
  local out = module
  if module:isinstance(BatchNorm) and not module._is_instance_norm and not module:isinstance(SyncBatchNorm) then
    out = SyncBatchNorm(module.num_features, module.eps, module.momentum or false, module.affine,
      module.track_running_stats, { process_group = process_group })
    if module.affine then
      out.weight, out.bias = module.weight, module.bias
    end
    if module.track_running_stats then
      out.running_mean, out.running_var = module.running_mean, module.running_var
      out.num_batches_tracked = module.num_batches_tracked
    end
    out.training = module.training
  end
  for _, e in ipairs(module:named_children()) do
    local converted = SyncBatchNorm.convert_sync_batchnorm(e[2], process_group)
    if converted ~= e[2] then out[e[1]] = converted end
  end
  return out
end

return M
