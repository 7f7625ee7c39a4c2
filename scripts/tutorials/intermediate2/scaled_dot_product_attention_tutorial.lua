-- Port of pytorch/tutorials intermediate_source/scaled_dot_product_attention_tutorial.py
-- (F.scaled_dot_product_attention, sdpa_kernel, a causal self-attention module, the profiler,
-- and the causal attention biases of torch.nn.attention.bias).
-- Run: nnrepl scripts/tutorials/intermediate2/scaled_dot_product_attention_tutorial.lua
-- Differences:
--   * nnrepl has one attention kernel (the math one): every sdpa_kernel choice runs it (with a
--     warning when MATH is not among those chosen), so all timings are alike.
--   * The NestedTensor cell is left out: nnrepl has no torch.nested. The dense batch is timed.
--   * torch.compile returns the model (or function) as it is.
--   * type(bias) prints the class name; a CausalBias is not a torch.Tensor subclass here, so the
--     issubclass assertion is left out.
--   * SDPA_BATCH, SDPA_SEQ set the benchmark's batch size and sequence lengths (defaults 32 and
--     1024 / 512 / 256, as the tutorial; the CI test runs tiny ones); the model runs on CUDA
--     when there is one, else on the CPU, in float16 as the tutorial.
local torch = require "torch"
local nn = torch.nn
local F = nn.functional
local device = torch.cuda.is_available() and "cuda" or "cpu"

local query, key, value = torch.randn(2, 3, 8, { device = device }), torch.randn(2, 3, 8, { device = device }), torch.randn(2, 3, 8, { device = device })
F.scaled_dot_product_attention(query, key, value)

local benchmark = torch.utils.benchmark
local function benchmark_torch_function_in_microseconds(f, ...)
  local t0 = benchmark.Timer("f(table.unpack(args, 1, args.n))", { globals = { args = table.pack(...), f = f } })
  return t0:blocked_autorange().mean * 1e6
end

local batch_size = tonumber(os.getenv("SDPA_BATCH")) or 32
local seq_scale = tonumber(os.getenv("SDPA_SEQ")) -- when set, every sequence length below is this
local max_sequence_len = seq_scale or 1024
local num_heads = 32
local embed_dimension = 32

local dtype = torch.float16

query = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, { device = device, dtype = dtype })
key = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, { device = device, dtype = dtype })
value = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, { device = device, dtype = dtype })

print(string.format("The default implementation runs in %.3f microseconds",
  benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)))

local SDPBackend, sdpa_kernel = nn.attention.SDPBackend, nn.attention.sdpa_kernel

do
  local _ <close> = sdpa_kernel(SDPBackend.MATH)
  local math_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
  print(string.format("The math implementation runs in %.3f microseconds", math_time))
end

do
  local _ <close> = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
  local ok, flash_time = pcall(benchmark_torch_function_in_microseconds, F.scaled_dot_product_attention, query, key, value)
  if ok then
    print(string.format("The flash attention implementation runs in %.3f microseconds", flash_time))
  else
    print("FlashAttention is not supported. See warnings for reasons.")
  end
end

do
  local _ <close> = sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
  local ok, efficient_time = pcall(benchmark_torch_function_in_microseconds, F.scaled_dot_product_attention, query, key, value)
  if ok then
    print(string.format("The memory efficient implementation runs in %.3f microseconds", efficient_time))
  else
    print("EfficientAttention is not supported. See warnings for reasons.")
  end
end

local CausalSelfAttention = nn.Module:extend("CausalSelfAttention")
function CausalSelfAttention:__init(num_heads, embed_dimension, bias, is_causal, dropout)
  if bias == nil then bias = false end
  assert(embed_dimension % num_heads == 0)
  self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, { bias = bias })
  self.c_proj = nn.Linear(embed_dimension, embed_dimension, { bias = bias })
  self.dropout = dropout or 0.0
  self.resid_dropout = nn.Dropout(self.dropout)
  self.num_heads = num_heads
  self.embed_dimension = embed_dimension
  self.is_causal = is_causal or false
end

function CausalSelfAttention:forward(x)
  local query_projected = self.c_attn(x)

  local batch_size = query_projected:size(0)
  local embed_dim = query_projected:size(2)
  local head_dim = embed_dim // (self.num_heads * 3)

  local query, key, value = table.unpack(query_projected:chunk(3, -1))
  query = query:view(batch_size, -1, self.num_heads, head_dim):transpose(1, 2)
  key = key:view(batch_size, -1, self.num_heads, head_dim):transpose(1, 2)
  value = value:view(batch_size, -1, self.num_heads, head_dim):transpose(1, 2)

  local dropout, is_causal
  if self.training then
    dropout = self.dropout
    is_causal = self.is_causal
  else
    dropout = 0.0
    is_causal = false
  end

  local y = F.scaled_dot_product_attention(query, key, value, { dropout_p = dropout, is_causal = is_causal })
  y = y:transpose(1, 2):reshape(batch_size, -1, self.num_heads * head_dim) -- view in the tutorial: PyTorch's fused kernels return a layout that allows it

  y = self.resid_dropout(self.c_proj(y))
  return y
end

num_heads = 8
local heads_per_dim = 64
embed_dimension = num_heads * heads_per_dim
dtype = torch.float16
local model = CausalSelfAttention(num_heads, embed_dimension, false, true, 0.1):to(device):to(dtype):eval()
print(model)

local function generate_rand_batch(batch_size, max_sequence_len, embed_dimension, pad_percentage, dtype, device)
  if not pad_percentage then
    return torch.randn(batch_size, max_sequence_len, embed_dimension, { dtype = dtype, device = device }), nil
  end
  error("generate_rand_batch: NestedTensors (pad_percentage) are not supported by nnrepl")
end

local random_dense = generate_rand_batch(tonumber(os.getenv("SDPA_BATCH")) or 32, seq_scale or 512, embed_dimension, nil, dtype, device)

model:eval()

do
  local _ <close> = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
  -- (the NestedTensor line is left out: see the header)
  print(string.format("Random Dense runs in %.3f microseconds", benchmark_torch_function_in_microseconds(model, random_dense)))
end

batch_size = tonumber(os.getenv("SDPA_BATCH")) or 32
max_sequence_len = seq_scale or 256
local x = torch.rand(batch_size, max_sequence_len, embed_dimension, { device = device, dtype = dtype })
print(string.format("The non compiled module runs in  %.3f microseconds", benchmark_torch_function_in_microseconds(model, x)))

local compiled_model = torch.compile(model)
compiled_model(x)
print(string.format("The compiled module runs in  %.3f microseconds", benchmark_torch_function_in_microseconds(compiled_model, x)))

local profile, record_function, ProfilerActivity = torch.profiler.profile, torch.profiler.record_function, torch.profiler.ProfilerActivity
local activities = { ProfilerActivity.CPU }
if device == "cuda" then activities[#activities + 1] = ProfilerActivity.CUDA end

do
  local prof <close> = profile({ activities = activities, record_shapes = false })
  do
    local _ <close> = record_function(" Non-Compilied Causal Attention")
    for _ = 1, 25 do model(x) end
  end
  prof:stop()
  print(prof:key_averages():table({ sort_by = "cuda_time_total", row_limit = 10 }))
end

do
  local prof <close> = profile({ activities = activities, record_shapes = false })
  do
    local _ <close> = record_function("Compiled Causal Attention")
    for _ = 1, 25 do compiled_model(x) end
  end
  prof:stop()
  print(prof:key_averages():table({ sort_by = "cuda_time_total", row_limit = 10 }))
end

local causal_lower_right, causal_upper_left = nn.attention.bias.causal_lower_right, nn.attention.bias.causal_upper_left

batch_size = 32
local sequence_length_q = 2
local sequence_length_kv = 10
num_heads = 16
embed_dimension = 32

dtype = torch.float16

query = torch.rand(batch_size, num_heads, sequence_length_q, embed_dimension, { device = device, dtype = dtype })
key = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension, { device = device, dtype = dtype })
value = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension, { device = device, dtype = dtype })

local upper_left_bias = causal_upper_left(sequence_length_q, sequence_length_kv)
local lower_right_bias = causal_lower_right(sequence_length_q, sequence_length_kv)

local function class_of(v) return string.format("<class '%s'>", getmetatable(v).__name) end
print(class_of(upper_left_bias))
print(class_of(lower_right_bias))

assert(getmetatable(upper_left_bias) == getmetatable(lower_right_bias))

print(upper_left_bias)
print(lower_right_bias)

local out_upper_left = F.scaled_dot_product_attention(query, key, value, upper_left_bias)
local out_lower_right = F.scaled_dot_product_attention(query, key, value, lower_right_bias)
local out_is_causal = F.scaled_dot_product_attention(query, key, value, { is_causal = true })

assert(torch.allclose(out_upper_left, out_is_causal))
assert(not torch.allclose(out_upper_left, out_lower_right))

local compiled_sdpa = torch.compile(F.scaled_dot_product_attention, { fullgraph = true })
out_upper_left = compiled_sdpa(query, key, value, upper_left_bias)
print(string.format("upper-left bias equals is_causal: %s", tostring(torch.allclose(out_upper_left, out_is_causal))))
