-- The transformer step's (bench/seq_speed.lua) products and heavier elementwise ops one at a
-- time on cuda:0, float32 with TF32 off, in microseconds per call (bench/op_timer.lua);
-- bench/seq_ops.py times the same in PyTorch. bench/device_run.sh ("seqops") prints both.
--   nnrepl bench/seq_ops.lua [iters] [reps]
local iters, reps = tonumber(arg[1]) or 50, tonumber(arg[2]) or 7
local dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = false
torch.manual_seed(0)
local time = dofile(arg[0]:match("^(.*)/") .. "/op_timer.lua")(iters, reps, dev)

local function r(...) return torch.randn({ ... }, { device = dev }) end
local x, h = r(4096, 512), r(4096, 2048)
local w512, b512, w2048, b2048, w1536, b1536 = r(512, 512), r(512), r(2048, 512), r(2048), r(1536, 512), r(1536)
local w2048t = r(512, 2048)
local g512, g2048, g1536 = r(4096, 512), r(4096, 2048), r(4096, 1536)
time("linear_4096x512_512", function() return F.linear(x, w512, b512) end)
time("linear_4096x512_1536", function() return F.linear(x, w1536, b1536) end)
time("linear_4096x512_2048", function() return F.linear(x, w2048, b2048) end)
time("linear_4096x2048_512", function() return F.linear(h, w2048t, b512) end)
time("dX_4096x512_by_512x512", function() return g512:mm(w512) end)
time("dX_4096x2048_by_2048x512", function() return g2048:mm(w2048) end)
time("dX_4096x512_by_512x2048", function() return g512:mm(w2048t) end)
time("dX_4096x1536_by_1536x512", function() return g1536:mm(w1536) end)
time("dW_512x4096_by_4096x512", function() return g512:t():mm(x) end)
time("dW_2048x4096_by_4096x512", function() return g2048:t():mm(x) end)
time("dW_512x4096_by_4096x2048", function() return g512:t():mm(h) end)
time("dW_1536x4096_by_4096x512", function() return g1536:t():mm(x) end)
local q, k = r(256, 128, 64), r(256, 128, 64)
local p = r(256, 128, 128)
time("bmm_qk_256x128x64", function() return q:bmm(k:transpose(1, 2)) end)
time("bmm_pv_256x128x128", function() return p:bmm(q) end)
local y = r(32, 128, 512)
time("dropout_32x128x512", function() return F.dropout(y, 0.1, true) end)
time("layer_norm_32x128x512", function() return F.layer_norm(y, { 512 }, b512, b512) end)
time("softmax_256x128x128", function() return F.softmax(p, -1) end)
time("add_32x128x512", function() return y + y end)
