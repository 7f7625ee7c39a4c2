-- Port of pytorch/tutorials intermediate_source/autograd_saved_tensors_hooks_tutorial.py
-- (Hooks for autograd saved tensors): grad_fn._saved_* attributes, saved_tensors_hooks with
-- pack/unpack pairs, save_on_cpu, and saving tensors to disk.
--
-- Run: nnrepl scripts/tutorials/autograd/autograd_saved_tensors_hooks.lua
--
-- Differences from the original:
--  * `a is b` is rawequal(a, b). nnrepl hands out a new Lua value for a saved input each time,
--    so `y.grad_fn._saved_self is a` prints false here where PyTorch prints True (both are the
--    same tensor: same storage, same values); `_saved_result is y` is false in both.
--  * The "Returning a str" example evaluates repr(x) as Python source; here the printed
--    tensor's list is read back as a Lua table (load), the same idea.
--  * uuid.uuid4() is a random hex name; tempfile.TemporaryDirectory is a folder made with
--    mkdir under os.tmpname()'s and removed at the end; __del__ is a __gc metamethod (Lua
--    collects the packed value after backward at its next cycle: collectgarbage() makes it now,
--    and the script prints how many files are left).
--  * The SAVE_ON_DISK pack_hook saves its argument x (the original's `tensor` is undefined).
--  * pin_memory=True: nnrepl accepts it (pinned host memory on CUDA).

local a = torch.randn(5, { requires_grad = true })
local b = torch.ones(5, { requires_grad = true })
local y = a * b

print(y.grad_fn._saved_self)
print(y.grad_fn._saved_other)

local function f(x)
  return x * x
end

local x = torch.randn(5, { requires_grad = true })
y = f(f(f(x)))

a = torch.randn(5, { requires_grad = true })
b = torch.ones(5, { requires_grad = true })
y = a * b

print(rawequal(y.grad_fn._saved_self, a)) -- True in PyTorch (see the header)
print(rawequal(y.grad_fn._saved_other, b))

a = torch.randn(5, { requires_grad = true })
y = torch.exp(a)
print(y.grad_fn._saved_result:equal(y)) -- true
print(rawequal(y.grad_fn._saved_result, y)) -- false

-- Saved tensors hooks
local function pack_hook(x)
  print("Packing " .. tostring(x))
  return x
end

local function unpack_hook(x)
  print("Unpacking " .. tostring(x))
  return x
end
a = torch.ones(5, { requires_grad = true })
b = torch.ones(5, { requires_grad = true }) * 2

do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)
  y = a * b
end

y:sum():backward()

x = torch.randn(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(function(x) return x * 4 end, function(x) return x / 4 end)
  y = torch.pow(x, 2)
end
y:sum():backward()
assert(x.grad:equal(2 * x))

-- Returning an int
local storage = {}

local function pack(x)
  storage[#storage + 1] = x
  return #storage
end

local function unpack(x)
  return storage[x]
end

x = torch.randn(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
  y = x * x
end
y:sum():backward()

assert(x.grad:equal(2 * x))

-- Returning a tuple
pack = function(x)
  local delta = torch.randn(x:size())
  return { x - delta, function(x) return x + delta end }
end

unpack = function(packed)
  local x, f = packed[1], packed[2]
  return f(x)
end

x = torch.randn(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
  y = x * x
end
y:sum():backward()

assert(torch.allclose(x.grad, 2 * x))

-- Returning a str
x = torch.randn(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(function(x) return tostring(x) end, function(x)
    local list = x:match("^tensor(%b())"):match("^%((%b[])"):gsub("%[", "{"):gsub("%]", "}")
    return torch.tensor(load("return " .. list)())
  end)
  y = x * x
end
y:sum():backward()
assert(torch.all((x.grad - 2 * x):le(1e-4)):item())

-- Saving tensors to CPU
pack_hook = function(x)
  return { x.device, x:cpu() }
end

unpack_hook = function(packed)
  local device, tensor = packed[1], packed[2]
  return tensor:to(device)
end

x = torch.randn(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
  y = x * x
end
y:sum():backward()

print(torch.allclose(x.grad, (2 * x)))

local Model = nn.Module:extend("Model")
function Model:__init()
  self.w = nn.Parameter(torch.randn(5))
end

function Model:forward(x)
  local _ <close> = torch.autograd.graph.save_on_cpu({ pin_memory = true })
  return self.w * x
end

x = torch.randn(5)
local model = Model()
local loss = model(x):sum()
loss:backward()
print(model.w.grad:equal(x))

local SaveToCpu = nn.Module:extend("SaveToCpu")
function SaveToCpu:__init(module)
  self.module = module
end

function SaveToCpu:forward(...)
  local _ <close> = torch.autograd.graph.save_on_cpu({ pin_memory = true })
  return self.module(...)
end

model = nn.Sequential(
  nn.Linear(10, 100),
  SaveToCpu(nn.Linear(100, 100)),
  nn.Linear(100, 10)
)

x = torch.randn(10)
loss = model(x):sum()
loss:backward()

-- Saving tensors to disk
local function uuid4()
  return (string.gsub("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", "[xy]", function(c)
    return string.format("%x", c == "x" and math.random(0, 15) or math.random(8, 11))
  end))
end

local tmp_dir = "temp"

pack_hook = function(tensor)
  local name = tmp_dir .. "/" .. uuid4()
  torch.save(tensor, name)
  return name
end

unpack_hook = function(name)
  return torch.load(name)
end

-- tempfile.TemporaryDirectory()
tmp_dir = os.tmpname()
os.remove(tmp_dir)
assert(os.execute("mkdir '" .. tmp_dir .. "'"))

pack_hook = function(tensor)
  local name = tmp_dir .. "/" .. uuid4()
  torch.save(tensor, name)
  return name
end

unpack_hook = function(name)
  local tensor = torch.load(name)
  os.remove(name)
  return tensor
end

x = torch.ones(5, { requires_grad = true })
do
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)
  y = x:pow(2)
end
print(y.grad_fn._saved_self)
if pcall(function()
  print(y.grad_fn._saved_self)
  print("Double access succeeded!")
end) then else
  print("Double access failed!")
end

local SelfDeletingTempFile = {}
SelfDeletingTempFile.__index = SelfDeletingTempFile
SelfDeletingTempFile.__gc = function(self)
  os.remove(self.name)
end
setmetatable(SelfDeletingTempFile, { __call = function(cls)
  return setmetatable({ name = tmp_dir .. "/" .. uuid4() }, cls)
end })

pack_hook = function(tensor)
  local temp_file = SelfDeletingTempFile()
  torch.save(tensor, temp_file.name)
  return temp_file
end

unpack_hook = function(temp_file)
  return torch.load(temp_file.name)
end

local SAVE_ON_DISK_THRESHOLD = 1000

pack_hook = function(x)
  if x:numel() < SAVE_ON_DISK_THRESHOLD then
    return x
  end
  local temp_file = SelfDeletingTempFile()
  torch.save(x, temp_file.name)
  return temp_file
end

unpack_hook = function(tensor_or_sctf)
  if torch.is_tensor(tensor_or_sctf) then
    return tensor_or_sctf
  end
  return torch.load(tensor_or_sctf.name)
end

local SaveToDisk = nn.Module:extend("SaveToDisk")
function SaveToDisk:__init(module)
  self.module = module
end

function SaveToDisk:forward(...)
  local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)
  return self.module(...)
end

local net = nn.DataParallel(SaveToDisk(Model()))

-- not in the original: the disk hooks at work on a tensor above the threshold
local function files_in(dir)
  local n = 0
  for _ in io.popen("ls '" .. dir .. "'"):lines() do n = n + 1 end
  return n
end
local big = torch.randn(2000, { requires_grad = true })
local on_disk = SaveToDisk(nn.Tanh())
do
  local out = on_disk(big)
  print("files while the graph lives: " .. files_in(tmp_dir))
  out:sum():backward()
end
collectgarbage()
collectgarbage()
print("files after backward: " .. files_in(tmp_dir))
print("gradient is 1 - tanh(x)^2: " .. tostring(torch.allclose(big.grad, 1 - big:detach():tanh() ^ 2)))
print(net)
os.execute("rm -rf '" .. tmp_dir .. "'")
