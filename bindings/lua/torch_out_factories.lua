-- out= for the factory functions (torch.rand(2, 2, {out = c}) as PyTorch's torch.rand(2, 2, out=c)):
-- the values are made with out's dtype and device (a dtype given must be out's) and written into
-- out, resized to the requested shape as torch_out_arg.lua does for torch.mul & co; out is returned.
local torch = require "torch"
local U = require "nn_util"
local O = require "torch_out_arg"

for _, name in ipairs({ "rand", "randn", "zeros", "ones", "empty", "full", "arange", "randint", "linspace" }) do
  local orig = torch[name]
  torch[name] = function(...)
    local n = select("#", ...)
    if n == 0 or not U.is_opts((select(n, ...))) then return orig(...) end
    local args, out = O.split_out(n, ...)
    if not args then return orig(...) end
    if not torch.is_tensor(out) then U.errorf("torch.%s(): argument 'out' must be Tensor, not %s", name, U.typename(out)) end
    local opts = args.n == n and args[n] or {}
    if opts.dtype ~= nil and opts.dtype ~= out.dtype then
      U.errorf("torch.%s(): dtype %s does not match dtype of out parameter (%s)", name, U.scalar_name(opts.dtype), U.scalar_name(out.dtype))
    end
    if opts.requires_grad then U.errorf("torch.%s(): out= cannot be used with requires_grad=True", name) end
    opts.dtype, opts.device = out.dtype, opts.device or out.device
    args[n], args.n = opts, n
    return O.write_out(name, orig(table.unpack(args, 1, n)), out)
  end
end
