-- PyTorch tutorial "Learn the Basics: Automatic Differentiation with torch.autograd"
-- (beginner_source/basics/autogradqs_tutorial.py) in Lua: a one-layer net's gradients, grad_fn,
-- no_grad and detach, and vector-Jacobian products accumulating over backward calls.
--
--   nnrepl scripts/tutorials/basics/autogradqs.lua
--
-- Differences from the original:
-- * `with torch.no_grad():` is a block holding `local _ <close> = torch.no_grad()`.
-- * Booleans print as true / false where Python prints True / False.
-- * The comment's torchviz / TORCH_LOGS graph drawing has no equivalent.
local x = torch.ones(5)
local y = torch.zeros(3)
local w = torch.randn(5, 3, { requires_grad = true })
local b = torch.randn(3, { requires_grad = true })
local z = torch.matmul(x, w) + b
local loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

print(string.format("Gradient function for z = %s", z.grad_fn))
print(string.format("Gradient function for loss = %s", loss.grad_fn))

loss:backward()
print(w.grad)
print(b.grad)

z = torch.matmul(x, w) + b
print(z.requires_grad)

do
  local _ <close> = torch.no_grad()
  z = torch.matmul(x, w) + b
end
print(z.requires_grad)

z = torch.matmul(x, w) + b
local z_det = z:detach()
print(z_det.requires_grad)

local inp = torch.eye(4, 5, { requires_grad = true })
local out = (inp + 1):pow(2):t()
out:backward(torch.ones_like(out), { retain_graph = true })
print(string.format("First call\n%s", inp.grad))
out:backward(torch.ones_like(out), { retain_graph = true })
print(string.format("\nSecond call\n%s", inp.grad))
inp.grad:zero_()
out:backward(torch.ones_like(out), { retain_graph = true })
print(string.format("\nCall after zeroing gradients\n%s", inp.grad))
