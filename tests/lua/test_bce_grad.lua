-- F.binary_cross_entropy / nn.BCELoss gradients: PyTorch's (x - t) / max(x (1 - x), 1e-12) for
-- the input, finite where the input is exactly 0 or 1 (a sigmoid saturating in float32: the
-- clamped logs' own derivatives gave nan there), worked out by hand; float64 finite
-- differences inside (0, 1) for input and target, with weights and each reduction; the
-- second derivative in the input (create_graph) against the closed form; CPU and CUDA.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local function run(device)
  T.test("bce at 0 and 1 " .. device, function()
    local x = torch.tensor({ 1.0, 0.0, 0.5, 1.0, 0.0 }, { device = device, requires_grad = true })
    local t = torch.tensor({ 0.0, 1.0, 1.0, 1.0, 0.0 }, { device = device })
    local loss = nn.BCELoss()(x, t)
    -- -log clamped at 100: 100 + 100 + log 2 + 0 + 0, over 5
    T.near(loss:item(), (200 + math.log(2)) / 5, 1e-6, "loss")
    loss:backward()
    -- (x - t) / max(x (1 - x), 1e-12) / 5
    T.near(x.grad:cpu():tolist(), { 1e12 / 5, -1e12 / 5, -0.5 / 0.25 / 5, 0, 0 }, 1e-6, "input gradient")
    -- a sigmoid saturated at 1 in float32 trains on: a finite gradient reaches the logit
    local z = torch.tensor({ 20.0, -20.0 }, { device = device, requires_grad = true })
    F.binary_cross_entropy(torch.sigmoid(z), torch.tensor({ 1.0, 0.0 }, { device = device })):backward()
    T.check(z.grad:isfinite():all():item(), "finite through a saturated sigmoid: " .. tostring(z.grad))
  end)

  T.test("bce finite differences " .. device, function()
    local g = torch.Generator():manual_seed(5)
    local x = (torch.rand(3, 4, { generator = g, dtype = torch.float64 }) * 0.8 + 0.1):to(device)
    local t = torch.rand(3, 4, { generator = g, dtype = torch.float64 }):to(device)
    local w = torch.rand(3, 4, { generator = g, dtype = torch.float64 }):to(device)
    for _, red in ipairs({ "mean", "sum", "none" }) do
      gradcheck("bce " .. red, function(a, b) return F.binary_cross_entropy(a, b, { weight = w, reduction = red }) end,
        { x, t })
    end
    -- second derivative in x: d/dx of (x - t) / (x (1 - x)) = (x^2 - 2tx + t) / (x (1 - x))^2
    local xl = x:detach():clone():requires_grad_()
    local gx = torch.autograd.grad(F.binary_cross_entropy(xl, t, { reduction = "sum" }), xl, { create_graph = true })[1]
    local hx = torch.autograd.grad(gx:sum(), xl)[1]
    local want = (x * x - 2 * t * x + t) / (x * (1 - x)) ^ 2
    T.near(hx:cpu():reshape(-1):tolist(), want:cpu():reshape(-1):tolist(), 1e-9, "second derivative")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 13) end
