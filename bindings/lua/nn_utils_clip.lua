-- torch.nn.utils gradient clipping: clip_grad_norm_, clip_grad_value_, and PyTorch
-- 2.6's split of clip_grad_norm_ into get_total_norm + clip_grads_with_norm_.
--
-- `parameters` is a tensor, a Lua list of tensors or model:parameters(); tensors
-- whose .grad is nil are skipped. The total norm stays a tensor on the first grad's
-- device and the clip coefficient min(max_norm / (total + 1e-6), 1) multiplies every
-- grad as a tensor, so CUDA grads are clipped with no host sync (unless
-- error_if_nonfinite asks to look at the norm). `foreach` is accepted and ignored.
-- The gradients are read in C (torch._optim), not as a Tensor object each, every step. The 2-norm is
-- one pass over all of them (summed in float64), and on one GPU the scaling too.
local torch = require "torch"
local U = require "nn_util"
local C = torch._optim

local M = {}

-- The tensors of `parameters` as a fresh Lua list.
function M._tensors(fname, parameters)
  if torch.is_tensor(parameters) then return { parameters } end
  if type(parameters) ~= "table" or rawget(parameters, "_parameters") ~= nil then
    U.errorf("%s: parameters must be a Tensor or a list of Tensors (model:parameters()), got %s",
      fname, U.typename(parameters))
  end
  local out = {}
  for i, p in ipairs(parameters) do
    if not torch.is_tensor(p) then U.errorf("%s: parameters[%d] is %s, not a Tensor", fname, i, U.typename(p)) end
    out[i] = p
  end
  return out
end

-- norm_type: a number, math.huge, or "inf" / "-inf" as Python's float() reads them
local function norm_value(fname, v)
  if v == "inf" or v == "+inf" then return math.huge end
  if v == "-inf" then return -math.huge end
  local x = tonumber(v)
  if x == nil then U.errorf("%s: norm_type must be a number, got %s", fname, U.typename(v)) end
  return x + 0.0
end

local function number(fname, name, v)
  if type(v) ~= "number" then U.errorf("%s: %s must be a number, got %s", fname, name, U.typename(v)) end
  return v + 0.0
end

-- total, or PyTorch's error where error_if_nonfinite asks to look at it (a host sync)
local function checked(total, p, error_if_nonfinite)
  if error_if_nonfinite and not torch.isfinite(total):item() then
    U.errorf("The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be " ..
      "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set " ..
      "`error_if_nonfinite=False`", U.pyfloat(p))
  end
  return total
end

local total_spec = { { "norm_type", 2.0 }, { "error_if_nonfinite", false }, { "foreach", nil } }

-- get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=false, foreach=nil): the norm of
-- the norms of `tensors` (the grads themselves, not parameters), as a 0-dim tensor.
function M.get_total_norm(tensors, ...)
  local o = U.parse("get_total_norm", total_spec, ...)
  local p = norm_value("get_total_norm", o.norm_type)
  local list = M._tensors("get_total_norm", tensors)
  if #list == 0 then return torch.tensor(0.0) end
  for _, t in ipairs(list) do -- the norm of each is linalg.vector_norm's, with its dtype check
    if not (t:is_floating_point() or t:is_complex()) then
      U.errorf("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s", U.scalar_name(t.dtype))
    end
  end
  return checked(C.total_norm(list, p), p, o.error_if_nonfinite)
end

-- clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=nil): scale the grads by
-- min(max_norm / (total_norm + 1e-6), 1) in place.
function M.clip_grads_with_norm_(parameters, ...)
  local fname = "clip_grads_with_norm_"
  local o = U.parse(fname, { { "max_norm", U.REQUIRED }, { "total_norm", U.REQUIRED }, { "foreach", nil } }, ...)
  local max_norm = number(fname, "max_norm", o.max_norm)
  local params = M._tensors(fname, parameters)
  local _ <close> = torch.no_grad()
  local total = o.total_norm
  if not torch.is_tensor(total) then total = torch.tensor(number(fname, "total_norm", total)) end
  C.mul_grads_(params, (max_norm / (total + 1e-6)):clamp(nil, 1.0))
end

-- The norm over parameters some of which are fully_shard's chunks (torch.distributed.fsdp):
-- each process group's chunks are this rank's part of the whole, so their norm ** p is summed
-- (the max for inf) over the group; nil when there are none.
function M._sharded_total_norm(params, p)
  local dist = torch.distributed
  local groups = dist and dist.fsdp and dist.fsdp._fsdp2_chunk_group
  if not groups or next(groups) == nil then return nil end -- no chunks anywhere: nothing to look up
  local plain, by_group, order = {}, {}, {}
  for _, t in ipairs(params) do
    local g = groups[t]
    if g == nil then plain[#plain + 1] = t
    else
      if not by_group[g] then by_group[g] = {}; order[#order + 1] = g end
      table.insert(by_group[g], t)
    end
  end
  if #order == 0 then return nil end
  local device = params[1].device
  local function norm_of(list) -- this rank's norm as a float64 tensor on device (0 without grads)
    local held = {}
    for _, t in ipairs(list) do if t:numel() > 0 then held[#held + 1] = t end end -- a rank's chunk may be empty
    local n = #held > 0 and C.grad_total_norm(held, p) or nil
    return n and n:to(torch.float64):to(device) or torch.zeros({}, { dtype = torch.float64, device = device })
  end
  local inf = p == math.huge
  local acc = norm_of(plain)
  if not inf then acc = acc:pow(p) end
  for _, g in ipairs(order) do
    local n = norm_of(by_group[g]):reshape(1)
    if not inf then n = n:pow(p) end
    dist.all_reduce(n, { op = inf and dist.ReduceOp.MAX or dist.ReduceOp.SUM, group = g or nil })
    acc = inf and torch.maximum(acc, n[0]) or acc + n[0]
  end
  if not inf then acc = acc:pow(1 / p) end
  return acc:to(params[1].dtype)
end

-- clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=false, foreach=nil):
-- returns the total norm of the grads (before clipping) as a tensor.
function M.clip_grad_norm_(parameters, ...)
  local fname = "clip_grad_norm_"
  local o = U.parse(fname, { { "max_norm", U.REQUIRED }, table.unpack(total_spec) }, ...)
  local max_norm = number(fname, "max_norm", o.max_norm)
  local p = norm_value(fname, o.norm_type)
  local params = M._tensors(fname, parameters)
  local total = M._sharded_total_norm(params, p) or C.grad_total_norm(params, p)
  if total == nil then return torch.tensor(0.0) end
  checked(total, p, o.error_if_nonfinite)
  M.clip_grads_with_norm_(params, max_norm, total)
  return total
end

-- clip_grad_value_(parameters, clip_value, foreach=nil): clamp every grad to [-clip_value, clip_value].
function M.clip_grad_value_(parameters, ...)
  local fname = "clip_grad_value_"
  local o = U.parse(fname, { { "clip_value", U.REQUIRED }, { "foreach", nil } }, ...)
  C.clamp_grads_(M._tensors(fname, parameters), number(fname, "clip_value", o.clip_value))
end

return M
