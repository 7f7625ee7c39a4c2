-- out= for the factory functions (torch.rand(2, 2, {out = c}) as PyTorch's torch.rand(2, 2, out=c)):
-- the values are made with out's dtype and device (a dtype given must be out's) and written into
-- out, resized to the requested shape as torch_out_arg.lua does for torch.mul & co; out is returned.
local torch = require "torch"
local U = require "nn_util"
local O = require "torch_out_arg"

local orig = {}
for _, name in ipairs({ "rand", "randn", "zeros", "ones", "empty", "full", "arange", "randint", "linspace" }) do
  orig[name] = torch[name]
end
-- each called through a constant field, so that an argument error names the function ('zeros')
local plain = {
  rand = function(...) return orig.rand(...) end,
  randn = function(...) return orig.randn(...) end,
  zeros = function(...) return orig.zeros(...) end,
  ones = function(...) return orig.ones(...) end,
  empty = function(...) return orig.empty(...) end,
  full = function(...) return orig.full(...) end,
  arange = function(...) return orig.arange(...) end,
  randint = function(...) return orig.randint(...) end,
  linspace = function(...) return orig.linspace(...) end,
}

for name, f in pairs(plain) do
  torch[name] = function(...)
    local n = select("#", ...)
    if n == 0 or not U.is_opts((select(n, ...))) then return U.call(f, ...) end
    local args, out = O.split_out(n, ...)
    if not args then return U.call(f, ...) end
    if not torch.is_tensor(out) then U.errorf("torch.%s(): argument 'out' must be Tensor, not %s", name, U.typename(out)) end
    local opts = args.n == n and args[n] or {}
    if opts.dtype ~= nil and opts.dtype ~= out.dtype then
      U.errorf("torch.%s(): dtype %s does not match dtype of out parameter (%s)", name, U.scalar_name(opts.dtype), U.scalar_name(out.dtype))
    end
    if opts.requires_grad then U.errorf("torch.%s(): out= cannot be used with requires_grad=True", name) end
    opts.dtype, opts.device = out.dtype, opts.device or out.device
    args[n], args.n = opts, n
    return O.write_out(name, U.call(f, table.unpack(args, 1, n)), out)
  end
end
