-- Port of pytorch/tutorials intermediate_source/memory_format_tutorial.py (channels-last memory
-- format: strides, conversions, format checks, what keeps the format, converting a model).
-- Run: nnrepl scripts/tutorials/intermediate2/memory_format_tutorial.lua
-- Differences:
--   * Python prints a stride tuple as (3072, 1024, 32, 1); x:stride() is a Lua list, printed
--     here in the same form by strides().
--   * The convolution cell runs on CUDA in float16 when there is a GPU (as the tutorial, which
--     needs cuDNN), else on the CPU in float32, so the "Converting existing models" cell below
--     (which reuses its model and input) runs everywhere.
--   * The operator checker wraps every function of torch.nn.functional (the tutorial also wraps
--     torch and torch.Tensor), runs the converted model once under it, then restores them.
--   * The apex ResNet-50 logs the tutorial quotes are not code and are left out.
local torch = require "torch"

local function strides(t) return "(" .. table.concat(t:stride(), ", ") .. ")" end

local N, C, H, W = 10, 3, 32, 32
local x = torch.empty(N, C, H, W)
print(strides(x))

x = x:to({ memory_format = torch.channels_last })
print(x.shape)
print(strides(x))

x = x:to({ memory_format = torch.contiguous_format })
print(strides(x))

x = x:contiguous({ memory_format = torch.channels_last })
print(strides(x))

print(x:is_contiguous({ memory_format = torch.channels_last }))

local special_x = torch.empty(4, 1, 4, 4)
print(special_x:is_contiguous({ memory_format = torch.channels_last }))
print(special_x:is_contiguous({ memory_format = torch.contiguous_format }))

x = torch.empty(N, C, H, W, { memory_format = torch.channels_last })
print(strides(x))

local y = x:clone()
print(strides(y))

if torch.cuda.is_available() then
  y = x:cuda()
  print(strides(y))
end

y = torch.empty_like(x)
print(strides(y))

local z = x + y
print(strides(z))

local model, input
if torch.cuda.is_available() then
  model = torch.nn.Conv2d(8, 4, 3):cuda():half()
else
  model = torch.nn.Conv2d(8, 4, 3) -- no GPU: float32 on the CPU
end
model = model:to({ memory_format = torch.channels_last })

input = torch.randint(1, 10, { 2, 8, 4, 4 }, { dtype = torch.float32, requires_grad = true })
if torch.cuda.is_available() then
  input = input:to({ device = "cuda", memory_format = torch.channels_last, dtype = torch.float16 })
else
  input = input:to({ memory_format = torch.channels_last })
end

local out = model(input)
print(out:is_contiguous({ memory_format = torch.channels_last }))

model = model:to({ memory_format = torch.channels_last })

input = input:to({ memory_format = torch.channels_last })
local output = model(input)

local function contains_cl(args)
  for _, t in ipairs(args) do
    if torch.is_tensor(t) then
      if t:is_contiguous({ memory_format = torch.channels_last }) and not t:is_contiguous() then return true end
    elseif type(t) == "table" and getmetatable(t) == nil then
      if contains_cl(t) then return true end
    end
  end
  return false
end

local function print_inputs(args, indent)
  indent = indent or ""
  for _, t in ipairs(args) do
    if torch.is_tensor(t) then
      print(indent, strides(t), t.shape, t.device, t.dtype)
    elseif type(t) == "table" and getmetatable(t) == nil then
      print(indent, "table")
      print_inputs(t, indent .. "    ")
    else
      print(indent, t)
    end
  end
end

local function check_wrapper(fn, name)
  return function(...)
    local args = table.pack(...)
    local was_cl = contains_cl(args)
    local ok, result = pcall(fn, ...)
    if not ok then
      print(string.format("`%s` inputs are:", name))
      print_inputs(args)
      print("-------------------")
      error(result, 0)
    end
    local failed = false
    if was_cl and torch.is_tensor(result) and result:dim() == 4
        and not result:is_contiguous({ memory_format = torch.channels_last }) then
      print(string.format("`%s` got channels_last input, but output is not channels_last:", name),
        result.shape, strides(result), result.device, result.dtype)
      failed = true
    end
    if failed then
      print(string.format("`%s` inputs are:", name))
      print_inputs(args)
      error(string.format("Operator `%s` lost channels_last property", name), 0)
    end
    return result
  end
end

local old_attrs = {}

local function attribute(m)
  old_attrs[m] = {}
  for i, e in pairs(m) do
    if type(e) == "function" and type(i) == "string" and not i:match("^_") then
      old_attrs[m][i] = e
      m[i] = check_wrapper(e, i)
    end
  end
end

attribute(torch.nn.functional)

-- run the converted model under the checker (the tutorial stops at wrapping)
local checked = model(input)
print(string.format("checked model output is channels_last: %s", tostring(checked:is_contiguous({ memory_format = torch.channels_last }))))

for m, attrs in pairs(old_attrs) do
  for k, v in pairs(attrs) do m[k] = v end
end
