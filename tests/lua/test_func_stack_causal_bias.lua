-- torch.func.stack_module_state, torch.empty(..., {memory_format=}), nn.attention.bias
-- (causal_upper_left / causal_lower_right) against hand-built references.
local T = ...
local torch = require "torch"
local nn = torch.nn
local F = nn.functional

local function checks(device)
  local tag = " (" .. device .. ")"
  T.test("stack_module_state" .. tag, function()
    torch.manual_seed(0)
    local ms = {}
    for i = 1, 3 do ms[i] = nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2)):to(device) end
    local params, buffers = torch.func.stack_module_state(ms)
    T.eq(params:keys(), { "0.weight", "0.bias", "1.weight", "1.bias" }, "parameter names in order")
    T.eq(buffers:keys(), { "1.running_mean", "1.running_var", "1.num_batches_tracked" }, "buffer names")
    T.eq(params["0.weight"].shape, torch.Size({ 3, 2, 4 }), "stacked shape")
    for i = 1, 3 do T.check(torch.equal(params["0.weight"][i - 1], ms[i][0].weight), "slice " .. i .. " is model " .. i) end
    T.check(params["0.weight"].is_leaf and params["0.weight"].requires_grad, "params: requires-grad leaves")
    T.check(not buffers["1.running_var"].requires_grad, "buffers do not require grad")
    T.eq(params["0.weight"].device.type, device, "device kept")
    -- a copy: changing it leaves the models alone
    params["0.bias"]:detach():zero_()
    T.check(ms[1][0].bias:abs():sum():item() > 0, "params are copies")
    -- the ensemble through vmap(functional_call) equals the loop (eval mode: BatchNorm uses buffers)
    for _, m in ipairs(ms) do m:eval() end
    params, buffers = torch.func.stack_module_state(ms)
    local x = torch.randn(5, 4, { device = device })
    local fmodel = function(p, b, xx) return torch.func.functional_call(ms[1], { p, b }, { xx }) end
    local got = torch.vmap(fmodel, { in_dims = { 0, 0, false } })(params, buffers, x)
    local want = {}
    for i, m in ipairs(ms) do want[i] = m(x) end
    T.check(torch.allclose(got, torch.stack(want), { atol = 1e-6 }), "vmap ensemble equals the loop")
    -- one requires_grad=false parameter: that stack does not require grad
    ms[2][0].bias:requires_grad_(false)
    params = torch.func.stack_module_state(ms)
    T.check(not params["0.bias"].requires_grad and params["0.weight"].requires_grad, "requires_grad only if all do")
  end)
end

T.test("stack_module_state errors", function()
  T.raises(function() torch.func.stack_module_state({}) end, "stack_module_state: Expected at least one model, got 0.")
  local a, b = nn.Linear(2, 2), nn.Linear(2, 2)
  b:eval()
  T.raises(function() torch.func.stack_module_state({ a, b }) end,
    "stack_module_state: Expected all models to have the same training/eval mode.")
  T.raises(function() torch.func.stack_module_state({ nn.Linear(2, 2), nn.Linear(2, 2, { bias = false }) }) end,
    "~stack_module_state: Expected all models to have the same parameters")
  T.raises(function() torch.func.stack_module_state(nn.Linear(2, 2)) end, "~Expected a list of models")
end)

T.test("torch.empty memory_format", function()
  local x = torch.empty(10, 3, 32, 32, { memory_format = torch.channels_last })
  T.eq(x:stride(), { 3072, 1, 96, 3 }, "channels_last strides")
  T.eq(x.shape, torch.Size({ 10, 3, 32, 32 }), "shape kept")
  T.eq(torch.empty(2, 3, 4, 5, { memory_format = torch.contiguous_format }):stride(), { 60, 20, 5, 1 }, "contiguous_format")
  T.eq(torch.empty({ 2, 3, 4, 5 }, { memory_format = torch.preserve_format }):stride(), { 60, 20, 5, 1 }, "preserve_format: contiguous")
  local g = torch.empty(2, 3, 4, 5, { memory_format = torch.channels_last, requires_grad = true, dtype = torch.float64 })
  T.check(g.is_leaf and g.requires_grad and g.dtype == torch.float64, "requires_grad leaf, dtype kept")
  T.eq(torch.empty(2, 2, 2, 2, 2, { memory_format = torch.channels_last_3d }):stride(), { 16, 1, 8, 4, 2 }, "channels_last_3d")
  T.raises(function() torch.empty(2, 3, { memory_format = torch.channels_last }) end, "~channels_last")
  T.eq(torch.empty(2, 3):stride(), { 3, 1 }, "no memory_format: as before")
end)

local function causal_checks(device)
  local tag = " (" .. device .. ")"
  T.test("causal biases" .. tag, function()
    local B = nn.attention.bias
    local ul, lr = B.causal_upper_left(2, 4), B.causal_lower_right(2, 4)
    -- by hand: upper left sees j <= i; lower right sees j <= i + 2
    local want_ul = torch.tensor({ { true, false, false, false }, { true, true, false, false } })
    local want_lr = torch.tensor({ { true, true, true, false }, { true, true, true, true } })
    T.check(torch.equal(ul:_materialize(device):cpu(), want_ul), "upper-left mask")
    T.check(torch.equal(lr:_materialize(device):cpu(), want_lr), "lower-right mask")
    T.eq(tostring(ul), tostring(want_ul), "prints as its mask")
    T.eq(getmetatable(ul).__name, "torch.nn.attention.bias.CausalBias", "class name")
    T.eq(lr.variant, B.CausalVariation.LOWER_RIGHT, "variant")
    torch.manual_seed(1)
    local q = torch.randn(2, 3, 2, 5, { device = device })
    local k, v = torch.randn(2, 3, 4, 5, { device = device }), torch.randn(2, 3, 4, 5, { device = device })
    -- reference: softmax over the allowed keys, written out
    local function ref(mask)
      local s = q:matmul(k:transpose(-2, -1)) / math.sqrt(5)
      s = s:masked_fill(mask:to(device):logical_not(), -math.huge)
      return s:softmax(-1):matmul(v)
    end
    T.check(torch.allclose(F.scaled_dot_product_attention(q, k, v, ul), ref(want_ul), { atol = 1e-6 }), "upper left, positional")
    T.check(torch.allclose(F.scaled_dot_product_attention(q, k, v, { attn_mask = lr }), ref(want_lr), { atol = 1e-6 }), "lower right, keyword")
    T.check(torch.allclose(F.scaled_dot_product_attention(q, k, v, ul), F.scaled_dot_product_attention(q, k, v, { is_causal = true }), { atol = 1e-6 }),
      "upper left is is_causal")
    -- gradients flow through
    local qq = q:clone():requires_grad_()
    F.scaled_dot_product_attention(qq, k, v, lr):sum():backward()
    T.check(qq.grad ~= nil and qq.grad.shape == q.shape, "gradient to the query")
    T.raises(function() F.scaled_dot_product_attention(q, k, v, B.causal_upper_left(3, 4)) end,
      "scaled_dot_product_attention: the CausalBias is for 3 queries and 4 keys, got 2 and 4")
    T.raises(function() F.scaled_dot_product_attention(q, k, v, { attn_mask = ul, is_causal = true }) end,
      "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
  end)
end
T.test("causal bias arguments", function()
  T.raises(function() nn.attention.bias.causal_lower_right(0, 3) end, "~seq_len_q")
  T.raises(function() nn.attention.bias.causal_upper_left(2, 1.5) end, "~seq_len_kv")
end)

checks("cpu")
causal_checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
  causal_checks("cuda")
else
  T.skip("no CUDA", 2)
end
