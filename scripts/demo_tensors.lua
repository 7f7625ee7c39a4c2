-- A short tour of the tensor engine: creation, views, broadcasting, reductions, matmul.
torch.manual_seed(0)

local x = torch.arange(6):view(2, 3):float() * 2
print("x =", x)
print("x.shape =", x.shape, " x:size(1) =", x:size(1))
print("x:t() =", x:t())
print("x + torch.tensor({1, 10, 100}) =", x + torch.tensor({1, 10, 100}))
print("x:sum(1) =", x:sum(1), " x:mean() =", x:mean():item())

local values, indices = x:max(1)
print("max over dim 1:", values, indices)

local a, b = torch.randn(256, 512), torch.randn(512, 128)
local t0 = time.perf_counter()
local c = a:matmul(b)
print(string.format("256x512 @ 512x128 -> %s in %.2f ms", tostring(c.shape), (time.perf_counter() - t0) * 1e3))
print("x[0] =", x[0], " x[-1][2] =", x[-1][2]:item())
