-- pytorch/examples distributed/tensor_parallelism/llama2_model.py in Lua: a Llama 2 style
-- Transformer (RMSNorm, rotary position embeddings in complex numbers, grouped-query attention,
-- a SwiGLU feed-forward) with its ModelArgs, as fsdp_tp_example.lua parallelizes it.
-- One difference: Attention:forward counts the heads from its tensors (view(..., -1, head_dim))
-- instead of the stored totals, because under tensor parallelism nnrepl gives each rank its
-- local heads as a plain tensor (PyTorch keeps a DTensor of the global shape there, by
-- use_local_output=False); without tensor parallelism the two are the same.
local M = {}

-- ModelArgs{...}: the dataclass's fields and defaults (n_kv_heads and ffn_dim_multiplier nil:
-- Python's None); an unknown field is an error
local defaults = { dim = 4096, n_layers = 32, n_heads = 32, vocab_size = -1, multiple_of = 256,
  norm_eps = 1e-5, max_batch_size = 32, max_seq_len = 32768, depth_init = true }
local optional = { n_kv_heads = true, ffn_dim_multiplier = true }
function M.ModelArgs(fields)
  local args = {}
  for k, v in pairs(defaults) do args[k] = v end
  for k, v in pairs(fields or {}) do
    if defaults[k] == nil and not optional[k] then error("ModelArgs: unexpected keyword argument '" .. tostring(k) .. "'", 2) end
    args[k] = v
  end
  return args
end

-- the complex exponentials cis(t * theta ** (-2i / dim)) for positions t < end_, (end_, dim / 2)
function M.precompute_freqs_cis(dim, end_, theta)
  theta = theta or 10000.0
  local freqs = 1.0 / torch.pow(theta, torch.arange(0, dim, 2):narrow(0, 0, dim // 2):float() / dim)
  local t = torch.arange(end_, { device = freqs.device })
  freqs = torch.outer(t, freqs):float()
  return torch.polar(torch.ones_like(freqs), freqs) -- complex64
end

-- freqs_cis (seq, d) viewed as (1, seq, 1, ..., d) to broadcast against x (b, seq, ..., d)
function M.reshape_for_broadcast(freqs_cis, x)
  local ndim = x:dim()
  assert(1 < ndim)
  assert(freqs_cis:size(0) == x:size(1) and freqs_cis:size(1) == x:size(-1))
  local shape = {}
  for i = 0, ndim - 1 do shape[i + 1] = (i == 1 or i == ndim - 1) and x:size(i) or 1 end
  return freqs_cis:view(shape)
end

-- the rotary embeddings: pairs of features as complex numbers, turned by freqs_cis
function M.apply_rotary_emb(xq, xk, freqs_cis)
  local function pairs_of(x)
    local shape = x:size():totable()
    shape[#shape] = -1
    shape[#shape + 1] = 2
    return torch.view_as_complex(x:float():reshape(shape))
  end
  local xq_, xk_ = pairs_of(xq), pairs_of(xk)
  freqs_cis = M.reshape_for_broadcast(freqs_cis, xq_)
  local xq_out = torch.view_as_real(xq_ * freqs_cis):flatten(3)
  local xk_out = torch.view_as_real(xk_ * freqs_cis):flatten(3)
  return xq_out:type_as(xq), xk_out:type_as(xk)
end

-- torch.repeat_interleave(x, n_rep, dim=2)
function M.repeat_kv(x, n_rep)
  local bs, slen, n_kv_heads, head_dim = x:size(0), x:size(1), x:size(2), x:size(3)
  if n_rep == 1 then return x end
  return x:unsqueeze(3):expand(bs, slen, n_kv_heads, n_rep, head_dim):reshape(bs, slen, n_kv_heads * n_rep, head_dim)
end

local RMSNorm = nn.Module:extend("RMSNorm")
function RMSNorm:__init(dim, eps)
  self.eps = eps or 1e-6
  self.weight = nn.Parameter(torch.ones(dim))
end
function RMSNorm:_norm(x)
  return x * torch.rsqrt(x:pow(2):mean(-1, true) + self.eps)
end
function RMSNorm:forward(x)
  local output = self:_norm(x:float()):type_as(x)
  return output * self.weight
end
function RMSNorm:reset_parameters()
  nn.init.ones_(self.weight)
end

local Attention = nn.Module:extend("Attention")
function Attention:__init(model_args)
  self.n_heads = model_args.n_heads
  self.n_kv_heads = model_args.n_kv_heads or model_args.n_heads
  self.n_rep = self.n_heads // self.n_kv_heads
  self.head_dim = model_args.dim // model_args.n_heads
  self.wq = nn.Linear(model_args.dim, model_args.n_heads * self.head_dim, { bias = false })
  self.wk = nn.Linear(model_args.dim, self.n_kv_heads * self.head_dim, { bias = false })
  self.wv = nn.Linear(model_args.dim, self.n_kv_heads * self.head_dim, { bias = false })
  self.wo = nn.Linear(model_args.n_heads * self.head_dim, model_args.dim, { bias = false })
end

function Attention:init_weights(init_std)
  for _, linear in ipairs({ self.wq, self.wk, self.wv }) do
    nn.init.trunc_normal_(linear.weight, { mean = 0.0, std = 0.02 })
  end
  nn.init.trunc_normal_(self.wo.weight, { mean = 0.0, std = init_std })
end

function Attention:forward(x, freqs_cis)
  local bsz, seqlen = x:size(0), x:size(1)
  local xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
  xq = xq:view(bsz, seqlen, -1, self.head_dim) -- this rank's heads (all of them without TP)
  xk = xk:view(bsz, seqlen, -1, self.head_dim)
  xv = xv:view(bsz, seqlen, -1, self.head_dim)

  xq, xk = M.apply_rotary_emb(xq, xk, freqs_cis)

  local keys = M.repeat_kv(xk, self.n_rep) -- (bs, seqlen, n_local_heads, head_dim)
  local values = M.repeat_kv(xv, self.n_rep)

  xq = xq:transpose(1, 2) -- (bs, n_local_heads, seqlen, head_dim)
  xk = keys:transpose(1, 2)
  xv = values:transpose(1, 2)

  local output = F.scaled_dot_product_attention(xq, xk, xv, { is_causal = true })
  output = output:transpose(1, 2):contiguous() -- (bs, seqlen, n_local_heads, head_dim)
  output = output:view(bsz, seqlen, -1)
  return self.wo(output)
end

local FeedForward = nn.Module:extend("FeedForward")
function FeedForward:__init(dim, hidden_dim, multiple_of, ffn_dim_multiplier)
  hidden_dim = math.floor(2 * hidden_dim / 3)
  if ffn_dim_multiplier ~= nil then hidden_dim = math.floor(ffn_dim_multiplier * hidden_dim) end
  hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
  self.w1 = nn.Linear(dim, hidden_dim, { bias = false })
  self.w2 = nn.Linear(hidden_dim, dim, { bias = false })
  self.w3 = nn.Linear(dim, hidden_dim, { bias = false })
end

function FeedForward:forward(x)
  return self.w2(F.silu(self.w1(x)) * self.w3(x))
end

function FeedForward:init_weights(init_std)
  nn.init.trunc_normal_(self.w1.weight, { mean = 0.0, std = 0.02 })
  for _, linear in ipairs({ self.w2, self.w3 }) do
    nn.init.trunc_normal_(linear.weight, { mean = 0.0, std = init_std })
  end
end

local TransformerBlock = nn.Module:extend("TransformerBlock")
function TransformerBlock:__init(layer_id, model_args)
  self.n_heads = model_args.n_heads
  self.dim = model_args.dim
  self.attention = Attention(model_args)
  self.feed_forward = FeedForward(model_args.dim, 4 * model_args.dim, model_args.multiple_of, model_args.ffn_dim_multiplier)
  self.layer_id = layer_id
  self.num_layers = model_args.n_layers
  self.attention_norm = RMSNorm(model_args.dim, model_args.norm_eps)
  self.ffn_norm = RMSNorm(model_args.dim, model_args.norm_eps)
  if model_args.depth_init then
    self.weight_init_std = 0.02 / (2 * (self.layer_id + 1)) ^ 0.5
  else
    self.weight_init_std = 0.02 / (2 * self.num_layers) ^ 0.5
  end
end

function TransformerBlock:forward(x, freqs_cis)
  local h = x + self.attention(self.attention_norm(x), freqs_cis)
  return h + self.feed_forward(self.ffn_norm(h))
end

function TransformerBlock:init_weights()
  for _, norm in ipairs({ self.attention_norm, self.ffn_norm }) do norm:reset_parameters() end
  self.attention:init_weights(self.weight_init_std)
  self.feed_forward:init_weights(self.weight_init_std)
end

local Transformer = nn.Module:extend("Transformer")
function Transformer:__init(model_args)
  self.model_args = model_args
  self.vocab_size = model_args.vocab_size
  self.n_layers = model_args.n_layers
  self.model_dim = model_args.dim
  self.tok_embeddings = nn.Embedding(model_args.vocab_size, model_args.dim)
  self:register_buffer("freqs_cis", M.precompute_freqs_cis(model_args.dim // model_args.n_heads, model_args.max_seq_len * 2))
  self.layers = nn.ModuleList()
  for layer_id = 0, model_args.n_layers - 1 do self.layers:append(TransformerBlock(layer_id, model_args)) end
  self.norm = RMSNorm(model_args.dim, model_args.norm_eps)
  self.output = nn.Linear(model_args.dim, model_args.vocab_size, { bias = false })
  self:init_weights()
end

-- the initial values: the constructor calls it (reset_parameters would re-initialise only a
-- module's own tensors; this sets the whole model's)
function Transformer:init_weights()
  self.freqs_cis = M.precompute_freqs_cis(self.model_args.dim // self.model_args.n_heads, self.model_args.max_seq_len * 2)
    :to(self.freqs_cis.device)
  nn.init.normal_(self.tok_embeddings.weight)
  for _, layer in pairs(self.layers) do layer:init_weights() end
  self.norm:reset_parameters()
  local final_out_std = self.model_args.dim ^ -0.5
  local cutoff_factor = 3
  nn.init.trunc_normal_(self.output.weight, { mean = 0.0, std = final_out_std,
    a = -cutoff_factor * final_out_std, b = cutoff_factor * final_out_std })
end

function Transformer:forward(tokens)
  local seqlen = tokens:size(1)
  local h = self.tok_embeddings(tokens)
  self.freqs_cis = self.freqs_cis:to(h.device)
  local freqs_cis = self.freqs_cis:narrow(0, 0, seqlen)
  for _, layer in pairs(self.layers) do h = layer(h, freqs_cis) end
  h = self.norm(h)
  return self.output(h):float()
end

function Transformer.from_model_args(model_args) return Transformer(model_args) end

M.RMSNorm, M.Attention, M.FeedForward, M.TransformerBlock, M.Transformer = RMSNorm, Attention, FeedForward, TransformerBlock, Transformer
return M
