-- pytorch/examples distributed/FSDP2/model.py in Lua: a small nanoGPT-like Transformer (token and
-- position embeddings, pre-norm blocks of attention and a GELU MLP, a final LayerNorm and an
-- output projection) with its ModelArgs. Every module has reset_parameters(), which re-initialises
-- its own layers (what example.lua calls after fully_shard).
local M = {}

-- ModelArgs{n_layers =, vocab_size =, max_seq_len =, dim =, n_heads =, dropout_p =}: the
-- dataclass's fields and defaults; an unknown field is an error
local defaults = { n_layers = 2, vocab_size = 8, max_seq_len = 16, dim = 16, n_heads = 4, dropout_p = 0.1 }
function M.ModelArgs(fields)
  local args = {}
  for k, v in pairs(defaults) do args[k] = v end
  for k, v in pairs(fields or {}) do
    if defaults[k] == nil then error("ModelArgs: unexpected keyword argument '" .. tostring(k) .. "'", 2) end
    args[k] = v
  end
  return args
end

local Attention = nn.Module:extend("Attention")
function Attention:__init(args)
  assert(args.dim % args.n_heads == 0)
  self.head_dim = args.dim // args.n_heads
  self.n_heads = args.n_heads
  self.dropout_p = args.dropout_p
  self.resid_dropout = nn.Dropout(args.dropout_p)
  self.wq = nn.Linear(args.dim, args.dim, { bias = false })
  self.wk = nn.Linear(args.dim, args.dim, { bias = false })
  self.wv = nn.Linear(args.dim, args.dim, { bias = false })
  self.wo = nn.Linear(args.dim, args.dim, { bias = false })
end

function Attention:forward(x)
  local bsz, seq_len = x:size(0), x:size(1)
  local queries, keys, values = self.wq(x), self.wk(x), self.wv(x)
  queries = queries:view(bsz, seq_len, self.n_heads, self.head_dim)
  keys = keys:view(bsz, seq_len, self.n_heads, self.head_dim)
  values = values:view(bsz, seq_len, self.n_heads, self.head_dim)

  queries = queries:transpose(1, 2) -- (bsz, n_heads, seq_len, head_dim)
  keys = keys:transpose(1, 2)
  values = values:transpose(1, 2)

  local output = F.scaled_dot_product_attention(queries, keys, values, nil, self.training and self.dropout_p or 0)
  output = output:transpose(1, 2):contiguous():view(bsz, seq_len, -1)
  return self.resid_dropout(self.wo(output))
end

function Attention:reset_parameters()
  self.wq:reset_parameters()
  self.wk:reset_parameters()
  self.wv:reset_parameters()
  self.wo:reset_parameters()
end

local FeedForward = nn.Module:extend("FeedForward")
function FeedForward:__init(dim, hidden_dim, dropout_p)
  self.w1 = nn.Linear(dim, hidden_dim)
  self.gelu = nn.GELU()
  self.w2 = nn.Linear(hidden_dim, dim)
  self.resid_dropout = nn.Dropout(dropout_p)
end

function FeedForward:forward(x)
  return self.resid_dropout(self.w2(self.gelu(self.w1(x))))
end

function FeedForward:reset_parameters()
  self.w1:reset_parameters()
  self.w2:reset_parameters()
end

local TransformerBlock = nn.Module:extend("TransformerBlock")
function TransformerBlock:__init(args)
  self.attention_norm = nn.LayerNorm(args.dim)
  self.attention = Attention(args)
  self.ffn_norm = nn.LayerNorm(args.dim)
  self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.dropout_p)
end

function TransformerBlock:forward(x)
  local h = x + self.attention(self.attention_norm(x))
  return h + self.feed_forward(self.ffn_norm(h))
end

function TransformerBlock:reset_parameters()
  self.attention_norm:reset_parameters()
  self.attention:reset_parameters()
  self.ffn_norm:reset_parameters()
  self.feed_forward:reset_parameters()
end

-- a toy transformer, after nanoGPT
local Transformer = nn.Module:extend("Transformer")
function Transformer:__init(args)
  assert(args.vocab_size ~= nil)
  assert(args.max_seq_len ~= nil)
  self.model_args = args
  self.max_seq_len = args.max_seq_len
  self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
  self.pos_embeddings = nn.Embedding(args.max_seq_len, args.dim)
  self.dropout = nn.Dropout(args.dropout_p)
  self.layers = nn.ModuleList()
  for _ = 1, args.n_layers do self.layers:append(TransformerBlock(args)) end
  self.norm = nn.LayerNorm(args.dim)
  self.output = nn.Linear(args.dim, args.vocab_size, { bias = false })
end

function Transformer:forward(tokens)
  local seq_len = tokens:size(1)
  assert(seq_len <= self.max_seq_len)
  local h = self.tok_embeddings(tokens)
  local pos = torch.arange(0, seq_len, { device = tokens.device })
  local p = self.pos_embeddings(pos) -- (seq_len, dim)
  h = h + p
  h = self.dropout(h)
  for _, layer in pairs(self.layers) do h = layer(h) end
  h = self.norm(h)
  return self.output(h):float()
end

function Transformer:reset_parameters()
  self.tok_embeddings:reset_parameters()
  self.pos_embeddings:reset_parameters()
  self.norm:reset_parameters()
  self.output:reset_parameters()
end

M.Attention, M.FeedForward, M.TransformerBlock, M.Transformer = Attention, FeedForward, TransformerBlock, Transformer
return M
