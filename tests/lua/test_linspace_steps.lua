-- torch.linspace(0, 1, {steps = n}), Python's steps=n keyword.
local T = ...

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
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
