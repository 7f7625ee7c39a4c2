-- torch.linspace(0, 1, {steps = n}), Python's steps=n keyword; float32 values as PyTorch's CUDA
-- kernel rounds them (float step, each value one fused multiply-add), against that formula
-- emulated here: step * i is exact in float64, so the sum rounded to float64 and then to float32
-- is the fused operation's single rounding (these cases never fall on a double-rounding tie).
local T = ...

-- x rounded to float32: one float op is the double op rounded once
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- PyTorch's linspace in float: step = (end - start) / (steps - 1), start + step * i below
-- steps // 2, end - step * (steps - i - 1) from there, each one rounding
local function ref(a, b, n)
  a, b = f32(a), f32(b)
  if n == 1 then return { a } end
  local step, out = f32(f32(b - a) / (n - 1)), {}
  for i = 0, n - 1 do
    out[i + 1] = i < n // 2 and f32(a + step * i) or f32(b - step * (n - i - 1))
  end
  return out
end

local function run(device)
  T.test("linspace's steps keyword " .. device, function()
    local a = torch.linspace(0, 2, { steps = 5, device = device, requires_grad = true })
    T.eq(a:tolist(), { 0.0, 0.5, 1.0, 1.5, 2.0 })
    T.check(a.requires_grad and a.device.type == device, "the other keywords still apply")
    T.eq(torch.linspace(0, 1, { steps = 3 }):tolist(), { 0.0, 0.5, 1.0 }, "steps alone")
    T.eq(torch.linspace(0, 1, 3):tolist(), { 0.0, 0.5, 1.0 }, "positional")
    local out = torch.empty(0, { device = device })
    T.check(rawequal(torch.linspace(0, 1, { steps = 2, out = out }), out), "with out=")
    local ok, err = pcall(torch.linspace, 0, 1, { steps = 3, bogus = 1 })
    T.check(not ok and err:find("unknown keyword 'bogus'", 1, true), err)
  end)

  T.test("float32 linspace rounds as PyTorch's float arithmetic " .. device, function()
    local differs = 0
    for _, r in ipairs({ { -1, 1 }, { 0, 1 }, { -0.9, 2.7 }, { 3, -7.25 }, { 1e-3, 1e3 } }) do
      for n = 1, 64 do
        local got = torch.linspace(r[1], r[2], n, { device = device }):tolist()
        local want = ref(r[1], r[2], n)
        if not T.eq(got, want, string.format("linspace(%g, %g, %d)", r[1], r[2], n)) then return end
        -- where float64-then-round gives another value, the check above could fail
        local d = torch.linspace(r[1], r[2], n, { dtype = torch.float64 }):float():tolist()
        for i = 1, n do if d[i] ~= want[i] then differs = differs + 1 end end
      end
    end
    T.check(differs > 0, "the cases include values that float64 rounding would give differently")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
