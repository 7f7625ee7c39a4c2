-- gradcheck(name, f, inputs, opts) for the Lua tests: x.grad after backward of sum(f(...) * w)
-- (w random, fixed) against float64 central differences, element by element. Usage in a test:
--   local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
return function(T)
  local f64 = { dtype = torch.float64 }

  local function flatten(v, out)
    out = out or {}
    if type(v) ~= "table" then out[#out + 1] = v; return out end
    for _, e in ipairs(v) do flatten(e, out) end
    return out
  end

  -- gradcheck(name, f, inputs, opts): inputs is a list of tensors (float64 ones are checked
  -- unless opts.const[i]); opts.seed reseeds torch before every call of f (random functions);
  -- opts.eps, opts.tol. One check per checked input.
  local function gradcheck(name, f, inputs, opts)
    opts = opts or {}
    local eps, tol, const = opts.eps or 1e-6, opts.tol or 1e-6, opts.const or {}
    local function call(args)
      if opts.seed then torch.manual_seed(opts.seed) end
      local out = f(table.unpack(args, 1, #inputs))
      return out
    end
    local checked, leaves = {}, {}
    for i, x in ipairs(inputs) do
      checked[i] = x.dtype == torch.float64 and not const[i]
      leaves[i] = checked[i] and x:detach():clone():requires_grad_() or x
    end
    local out = call(leaves)
    torch.manual_seed(4242)
    local w = torch.randn(out.shape, f64):to(out.device) -- drawn on the CPU: the same weights on every device
    local ok, err = pcall(function() (out * w):sum():backward() end)
    if not T.check(ok, name .. ": backward: " .. tostring(err)) then return end
    local function loss(args)
      local _ <close> = torch.no_grad()
      return (call(args) * w):sum():item()
    end
    for i, x in ipairs(inputs) do
      if checked[i] then
        local shape = x.shape:totable()
        local base = flatten(x:tolist())
        local g = leaves[i].grad
        local G = g and flatten(g:tolist())
        local worst, at = 0, nil
        local args = { table.unpack(inputs, 1, #inputs) }
        for k = 1, #base do
          local vals = { table.unpack(base) }
          vals[k] = base[k] + eps
          args[i] = torch.tensor(vals, f64):reshape(shape):to(x.device)
          local up = loss(args)
          vals[k] = base[k] - eps
          args[i] = torch.tensor(vals, f64):reshape(shape):to(x.device)
          local down = loss(args)
          local num = (up - down) / (2 * eps)
          local ana = G and G[k] or 0
          local e = math.abs(num - ana) / math.max(1, math.abs(num), math.abs(ana))
          if e > worst or e ~= e then worst, at = e, string.format("element %d: analytic %.10g, numeric %.10g", k - 1, ana, num) end
        end
        T.check(worst <= tol and (g ~= nil or #base == 0), string.format("%s: gradient of input %d (%s%s)", name, i,
          g and "" or "no .grad; ", at or "empty"))
      end
    end
  end
  return gradcheck
end
