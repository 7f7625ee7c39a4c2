-- PyTorch tutorial "Introduction to PyTorch Tensors" (beginner_source/introyt/tensors_deeper_tutorial.py)
-- in Lua: creating tensors, seeding, dtypes, arithmetic and broadcasting, math and in-place ops,
-- out=, copying and detaching, devices, and changing shapes.
--
--   nnrepl scripts/tutorials/introyt/tensors_deeper_tutorial.lua
--
-- Differences from the original:
-- * type(x) is the Lua type ("userdata"): the tensor's class is printed with torch.typename(x)
--   (torch.FloatTensor) in its place. Python's `c is d` is rawequal(c, d) and id(c) the object itself.
-- * The cells the tutorial shows failing (mismatched shapes) run under pcall and print the error.
-- * The NumPy bridge (np.ones, torch.from_numpy, .numpy()) is left out: Lua has no NumPy.
-- * The random numbers come from nnrepl's generator, so the random tensors differ from PyTorch's
--   for the same seed; the cuda cells run when a GPU is there, as in the tutorial.

-- Creating tensors
local x = torch.empty(3, 4)
print(torch.typename(x))
print(x)

local zeros = torch.zeros(2, 3)
print(zeros)

local ones = torch.ones(2, 3)
print(ones)

torch.manual_seed(1729)
local random = torch.rand(2, 3)
print(random)

-- Random tensors and seeding
torch.manual_seed(1729)
local random1 = torch.rand(2, 3)
print(random1)

local random2 = torch.rand(2, 3)
print(random2)

torch.manual_seed(1729)
local random3 = torch.rand(2, 3)
print(random3)

local random4 = torch.rand(2, 3)
print(random4)

-- Tensor shapes
x = torch.empty(2, 2, 3)
print(x.shape)
print(x)

local empty_like_x = torch.empty_like(x)
print(empty_like_x.shape)
print(empty_like_x)

local zeros_like_x = torch.zeros_like(x)
print(zeros_like_x.shape)
print(zeros_like_x)

local ones_like_x = torch.ones_like(x)
print(ones_like_x.shape)
print(ones_like_x)

local rand_like_x = torch.rand_like(x)
print(rand_like_x.shape)
print(rand_like_x)

local some_constants = torch.tensor({ { 3.1415926, 2.71828 }, { 1.61803, 0.0072897 } })
print(some_constants)

local some_integers = torch.tensor({ 2, 3, 5, 7, 11, 13, 17, 19 })
print(some_integers)

local more_integers = torch.tensor({ { 2, 4, 6 }, { 3, 6, 9 } })
print(more_integers)

-- Tensor data types
local a = torch.ones({ 2, 3 }, { dtype = torch.int16 })
print(a)

local b = torch.rand({ 2, 3 }, { dtype = torch.float64 }) * 20.
print(b)

local c = b:to(torch.int32)
print(c)

-- Math & logic with PyTorch tensors
ones = torch.zeros(2, 2) + 1
local twos = torch.ones(2, 2) * 2
local threes = (torch.ones(2, 2) * 7 - 1) / 2
local fours = twos ^ 2
local sqrt2s = twos ^ 0.5

print(ones)
print(twos)
print(threes)
print(fours)
print(sqrt2s)

local powers2 = twos ^ torch.tensor({ { 1, 2 }, { 3, 4 } })
print(powers2)

local fives = ones + fours
print(fives)

local dozens = threes * fours
print(dozens)

-- the cell the tutorial shows failing: tensors of different shapes
print(select(2, pcall(function()
  local a_ = torch.rand(2, 3)
  local b_ = torch.rand(3, 2)
  print(a_ * b_)
end)))

-- In brief: tensor broadcasting
local rand = torch.rand(2, 4)
local doubled = rand * (torch.ones(1, 4) * 2)

print(rand)
print(doubled)

a = torch.ones(4, 3, 2)

b = a * torch.rand(3, 2) -- 3rd & 2nd dims identical to a, dim 1 absent
print(b)

c = a * torch.rand(3, 1) -- 3rd dim = 1, 2nd dim identical to a
print(c)

local d = a * torch.rand(1, 2) -- 3rd dim identical to a, 2nd dim = 1
print(d)

-- the broadcasts the tutorial shows failing, each with its error
for _, bad in ipairs({ { 4, 3 }, { 2, 3 }, { 0 } }) do
  print(select(2, pcall(function() return a * torch.rand(bad) end)))
end

-- More math with tensors
-- common functions
a = torch.rand(2, 4) * 2 - 1
print("Common functions:")
print(torch.abs(a))
print(torch.ceil(a))
print(torch.floor(a))
print(torch.clamp(a, -0.5, 0.5))

-- trigonometric functions and their inverses
local angles = torch.tensor({ 0, math.pi / 4, math.pi / 2, 3 * math.pi / 4 })
local sines = torch.sin(angles)
local inverses = torch.asin(sines)
print("\nSine and arcsine:")
print(angles)
print(sines)
print(inverses)

-- bitwise operations
print("\nBitwise XOR:")
b = torch.tensor({ 1, 5, 11 })
c = torch.tensor({ 2, 7, 10 })
print(torch.bitwise_xor(b, c))

-- comparisons:
print("\nBroadcasted, element-wise equality comparison:")
d = torch.tensor({ { 1., 2. }, { 3., 4. } })
local e = torch.ones(1, 2) -- many comparison ops support broadcasting!
print(torch.eq(d, e))      -- returns a tensor of type bool

-- reductions:
print("\nReduction ops:")
print(torch.max(d))         -- returns a single-element tensor
print(torch.max(d):item())  -- extracts the value from the returned tensor
print(torch.mean(d))        -- average
print(torch.std(d))         -- standard deviation
print(torch.prod(d))        -- product of all numbers
print(torch.unique(torch.tensor({ 1, 2, 1, 2, 1, 2 }))) -- filter unique elements

-- vector and linear algebra operations
local v1 = torch.tensor({ 1., 0., 0. })          -- x unit vector
local v2 = torch.tensor({ 0., 1., 0. })          -- y unit vector
local m1 = torch.rand(2, 2)                      -- random matrix
local m2 = torch.tensor({ { 3., 0. }, { 0., 3. } }) -- three times identity matrix

print("\nVectors & Matrices:")
print(torch.cross(v2, v1)) -- negative of z unit vector (v1 x v2 == -v2 x v1)
print(m1)
local m3 = torch.matmul(m1, m2)
print(m3)                  -- 3 times m1
local U, S, V = torch.svd(m3) -- singular value decomposition (a named tuple in Python)
print(string.format("torch.return_types.svd(\nU=%s,\nS=%s,\nV=%s)", U, S, V))

-- Altering tensors in place
a = torch.tensor({ 0, math.pi / 4, math.pi / 2, 3 * math.pi / 4 })
print("a:")
print(a)
print(torch.sin(a)) -- this operation creates a new tensor in memory
print(a)            -- a has not changed

b = torch.tensor({ 0, math.pi / 4, math.pi / 2, 3 * math.pi / 4 })
print("\nb:")
print(b)
print(torch.sin_(b)) -- note the underscore
print(b)             -- b has changed

a = torch.ones(2, 2)
b = torch.rand(2, 2)

print("Before:")
print(a)
print(b)
print("\nAfter adding:")
print(a:add_(b))
print(a)
print(b)
print("\nAfter multiplying")
print(b:mul_(b))
print(b)

a = torch.rand(2, 2)
b = torch.rand(2, 2)
c = torch.zeros(2, 2)
local old_id = c

print(c)
d = torch.matmul(a, b, { out = c })
print(c) -- contents of c have changed

assert(rawequal(c, d))      -- test c & d are same object, not just containing equal values
assert(rawequal(c, old_id)) -- make sure that our new c is the same object as the old one

torch.rand(2, 2, { out = c }) -- works for creation too!
print(c)                      -- c has changed again
assert(rawequal(c, old_id))   -- still the same object!

-- Copying tensors
a = torch.ones(2, 2)
b = a

a[0][1] = 561 -- we change a...
print(b)      -- ...and b is also altered

a = torch.ones(2, 2)
b = a:clone()

assert(not rawequal(b, a)) -- different objects in memory...
print(torch.eq(a, b))      -- ...but still with the same contents!

a[0][1] = 561 -- a changes...
print(b)      -- ...but b is still all ones

a = torch.rand(2, 2, { requires_grad = true }) -- turn on autograd
print(a)

b = a:clone()
print(b)

c = a:detach():clone()
print(c)

print(a)

-- Moving to GPU
if torch.cuda.is_available() then
  print("We have a GPU!")
else
  print("Sorry, CPU only.")
end

if torch.cuda.is_available() then
  local gpu_rand = torch.rand(2, 2, { device = "cuda" })
  print(gpu_rand)
else
  print("Sorry, CPU only.")
end

local my_device
if torch.cuda.is_available() then
  my_device = torch.device("cuda")
else
  my_device = torch.device("cpu")
end
print(string.format("Device: %s", my_device))

x = torch.rand(2, 2, { device = my_device })
print(x)

local y = torch.rand(2, 2)
y = y:to(my_device)

-- Manipulating tensor shapes: changing the number of dimensions
a = torch.rand(3, 226, 226)
b = a:unsqueeze(0)

print(a.shape)
print(b.shape)

c = torch.rand(1, 1, 1, 1, 1)
print(c)

a = torch.rand(1, 20)
print(a.shape)
print(a)

b = a:squeeze(0)
print(b.shape)
print(b)

c = torch.rand(2, 2)
print(c.shape)

d = c:squeeze(0)
print(d.shape)

a = torch.ones(4, 3, 2)
b = torch.rand(3)   -- trying to multiply a * b will give a runtime error
c = b:unsqueeze(1)  -- change to a 2-dimensional tensor, adding new dim at the end
print(c.shape)
print(a * c)        -- broadcasting works again!

local batch_me = torch.rand(3, 226, 226)
print(batch_me.shape)
batch_me:unsqueeze_(0)
print(batch_me.shape)

local output3d = torch.rand(6, 20, 20)
print(output3d.shape)

local input1d = output3d:reshape(6 * 20 * 20)
print(input1d.shape)

-- can also call it as a method on the torch module:
print(torch.reshape(output3d, { 6 * 20 * 20 }).shape)

-- NumPy bridge: left out (no NumPy in Lua)
