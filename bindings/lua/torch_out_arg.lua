-- out= for torch.add / sub / mul / matmul / mm, as PyTorch: torch.mul(a, b, {out = c}) writes
-- the result into c and returns c. c must be on the result's device and take its dtype
-- (torch.can_cast); a c of another shape is resized (with PyTorch's warning when it was not
-- empty). Not differentiable: an argument that requires grad is an error while grad mode is on.
-- Loaded before torch_sparse.lua, whose sparse-aware matmul / mm / add call these.
local torch = require "torch"
local U = require "nn_util"

-- the positional arguments, the keyword table without out (nil when nothing else is left), out
local function split_out(n, ...)
  local args = table.pack(...)
  local opts = args[n]
  if n == 0 or not U.is_opts(opts) or opts.out == nil then return nil end
  local rest, any = {}, false
  for k, v in pairs(opts) do
    if k ~= "out" then rest[k], any = v, true end
  end
  args[n] = any and rest or nil
  args.n = any and n or n - 1
  return args, opts.out
end

local function write_out(name, result, out)
  if not torch.is_tensor(out) then U.errorf("torch.%s(): argument 'out' must be Tensor, not %s", name, U.typename(out)) end
  if torch.is_grad_enabled() and (result.requires_grad or out.requires_grad) then
    U.errorf("torch.%s(): functions with out=... arguments don't support automatic differentiation, " ..
      "but one of the arguments requires grad.", name)
  end
  if tostring(out.device) ~= tostring(result.device) then
    U.errorf("torch.%s(): Expected out tensor to have device %s, but got %s instead", name, result.device, out.device)
  end
  if not torch.can_cast(result.dtype, out.dtype) then
    U.errorf("torch.%s(): result type %s can't be cast to the desired output type %s", name,
      U.scalar_name(result.dtype), U.scalar_name(out.dtype))
  end
  local same = out:dim() == result:dim()
  for d = 0, result:dim() - 1 do same = same and out:size(d) == result:size(d) end
  if not same then
    if out:numel() ~= 0 then
      U.warn(string.format("An output with one or more elements was resized since it had shape %s, which does not " ..
        "match the required output shape %s. This behavior is deprecated, and in a future PyTorch release outputs " ..
        "will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing " ..
        "it, inplace, to zero elements with t.resize_(0).", U.shape_str(out), U.shape_str(result)))
    end
    out:resize_(result.shape)
  end
  local _ <close> = torch.no_grad()
  out:copy_(result)
  return out
end

local orig = { add = torch.add, sub = torch.sub, mul = torch.mul, matmul = torch.matmul, mm = torch.mm }
-- each called through a constant field, so that an argument error names the function ('add')
local plain = {
  add = function(...) return orig.add(...) end,
  sub = function(...) return orig.sub(...) end,
  mul = function(...) return orig.mul(...) end,
  matmul = function(...) return orig.matmul(...) end,
  mm = function(...) return orig.mm(...) end,
}

for name, f in pairs(plain) do
  -- matmul and mm take no keywords but out: an unknown key is an error rather than ignored
  local no_keys = name == "matmul" or name == "mm"
  torch[name] = function(...)
    local n = select("#", ...)
    if n > 0 and not U.is_opts((select(n, ...))) then return U.call(f, ...) end -- no keywords: no table made
    local args, out = split_out(n, ...)
    if not args then
      if no_keys and n > 2 and U.is_opts((select(n, ...))) then
        local key = next((select(n, ...)))
        if key ~= nil then U.errorf("torch.%s(): unknown keyword '%s'", name, tostring(key)) end
      end
      return U.call(f, ...)
    end
    if no_keys and args.n > 2 then
      U.errorf("torch.%s(): unknown keyword '%s'", name, tostring(next(args[args.n])))
    end
    return write_out(name, U.call(f, table.unpack(args, 1, args.n)), out)
  end
end
return { split_out = split_out, write_out = write_out }
