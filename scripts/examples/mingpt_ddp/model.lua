-- pytorch/examples distributed/minGPT-ddp/mingpt/model.py in Lua: the GPT language model
-- (token and position embeddings, transformer blocks of nn.MultiheadAttention and an MLP, a
-- linear head), its config "dataclasses" and create_optimizer (AdamW with weight decay on the
-- Linear and attention projection weights only).
--   local model = require "model"   -- model.GPT, GPTConfig, OptimizerConfig, create_optimizer
-- As in the original, the attention mask is the float tensor tril(ones): it is ADDED to the
-- attention scores (1 on and below the diagonal, 0 above), so attention is not causal; ported
-- as it is, so the numbers match PyTorch's.
local F = torch.nn.functional
local dataclass = require("dataclass").dataclass

local M = {}

M.GPTConfig = dataclass("GPTConfig", {
  { "model_type", "gpt2" },
  -- the model's sizes
  { "n_layer" }, { "n_head" }, { "n_embd" },
  -- OpenAI's GPT-2 values
  { "vocab_size", 50257 }, { "block_size", 1024 },
  -- dropout probabilities
  { "embd_pdrop", 0.1 }, { "resid_pdrop", 0.1 }, { "attn_pdrop", 0.1 },
})

M.OptimizerConfig = dataclass("OptimizerConfig", {
  { "learning_rate", 3e-4 },
  { "weight_decay", 0.1 },
})

-- masked multi-head self-attention followed by a projection
local MultiheadAttentionLayer = nn.Module:extend("MultiheadAttentionLayer")
M.MultiheadAttentionLayer = MultiheadAttentionLayer

function MultiheadAttentionLayer:__init(config, device, dtype)
  device, dtype = device or "cpu", dtype or torch.float32
  assert(config.n_embd % config.n_head == 0)
  self.resid_drop = nn.Dropout(config.resid_pdrop)
  self.c_proj = nn.Linear(config.n_embd, config.n_embd, { device = device, dtype = dtype })
  self:register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
    :view(1, 1, config.block_size, config.block_size))
  self.attn = nn.MultiheadAttention(config.n_embd, config.n_head, {
    dropout = config.attn_pdrop,
    batch_first = true,
    device = device,
    dtype = dtype,
  })
end

function MultiheadAttentionLayer:forward(x)
  local seq_size = x:size(1)
  local y = (self.attn(x, x, x, { attn_mask = self.mask[string.format("0, 0, :%d, :%d", seq_size, seq_size)] }))
  y = self.resid_drop(self.c_proj(y))
  return y
end

-- a plain transformer block
local Block = nn.Module:extend("Block")
M.Block = Block

function Block:__init(config)
  self.ln1 = nn.LayerNorm(config.n_embd)
  self.ln2 = nn.LayerNorm(config.n_embd)
  self.attn = MultiheadAttentionLayer(config)
  self.mlp = nn.Sequential(
    nn.Linear(config.n_embd, 4 * config.n_embd),
    nn.GELU(),
    nn.Linear(4 * config.n_embd, config.n_embd),
    nn.Dropout(config.resid_pdrop)
  )
end

function Block:forward(x)
  x = x + self.attn(self.ln1(x))
  x = x + self.mlp(self.ln2(x))
  return x
end

local EmbeddingStem = nn.Module:extend("EmbeddingStem")
M.EmbeddingStem = EmbeddingStem

function EmbeddingStem:__init(config, device, dtype)
  device, dtype = device or "cpu", dtype or torch.float32
  self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd, { device = device, dtype = dtype })
  self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd, { device = device, dtype = dtype }))
  self.drop = nn.Dropout(config.embd_pdrop)
  self.block_size = config.block_size
end

function EmbeddingStem:reset_parameters()
  self.tok_emb:reset_parameters()
end

function EmbeddingStem:forward(idx)
  local t = idx:size(1)
  assert(t <= self.block_size,
    string.format("Cannot forward sequence of length %d, block size is only %d", t, self.block_size))
  local token_embeddings = self.tok_emb(idx)                          -- a learned vector per token
  local position_embeddings = self.pos_emb[string.format(":, :%d, :", t)] -- and per position
  return self.drop(token_embeddings + position_embeddings)
end

-- the GPT language model
local GPT = nn.Module:extend("GPT")
M.GPT = GPT

local model_types = {
  -- Hugging Face's names; GPT-1
  ["openai-gpt"] = { n_layer = 12, n_head = 12, n_embd = 768 },   -- 117M parameters
  -- GPT-2
  ["gpt2"] = { n_layer = 12, n_head = 12, n_embd = 768 },         -- 124M
  ["gpt2-medium"] = { n_layer = 24, n_head = 16, n_embd = 1024 }, -- 350M
  ["gpt2-large"] = { n_layer = 36, n_head = 20, n_embd = 1280 },  -- 774M
  ["gpt2-xl"] = { n_layer = 48, n_head = 25, n_embd = 1600 },     -- 1558M
  -- Gopher
  ["gopher-44m"] = { n_layer = 8, n_head = 16, n_embd = 512 },
  -- small ones made up by minGPT
  ["gpt-mini"] = { n_layer = 6, n_head = 6, n_embd = 192 },
  ["gpt-micro"] = { n_layer = 4, n_head = 4, n_embd = 128 },
  ["gpt-nano"] = { n_layer = 3, n_head = 3, n_embd = 48 },
}

function GPT:__init(config)
  self.block_size = config.block_size
  config = self:_set_model_config(config)

  -- input embedding stem
  self.emb_stem = EmbeddingStem(config)
  -- transformer
  local blocks = {}
  for i = 1, config.n_layer do blocks[i] = Block(config) end
  self.blocks = nn.Sequential(table.unpack(blocks))
  -- decoder head
  self.ln_f = nn.LayerNorm(config.n_embd)
  self.head = nn.Linear(config.n_embd, config.vocab_size, { bias = false })

  -- GPT-2's init, with the residual projections scaled down by the depth
  self:apply(function(m) self:_init_weights(m) end)
  for pn, p in self:named_parameters() do
    if pn:sub(-#"c_proj.weight") == "c_proj.weight" then
      p.data:normal_(0.0, 0.02 / math.sqrt(2 * config.n_layer))
    end
  end

  -- the number of parameters, the head's not counted
  local n_params = 0
  for _, p in ipairs(self.blocks:parameters()) do n_params = n_params + p:numel() end
  print(string.format("number of parameters: %.2fM", n_params / 1e6))
end

function GPT:_set_model_config(config)
  local type_given = config.model_type ~= nil
  local params_given = config.n_layer ~= nil and config.n_head ~= nil and config.n_embd ~= nil
  if type_given and not params_given then
    local sizes = model_types[config.model_type]
    if not sizes then error(string.format("KeyError: '%s'", config.model_type), 2) end
    for k, v in pairs(sizes) do config[k] = v end
  end
  return config
end

function GPT:_init_weights(module)
  if nn.isinstance(module, nn.Linear) or nn.isinstance(module, nn.Embedding) then
    module.weight.data:normal_(0.0, 0.02)
    if nn.isinstance(module, nn.Linear) and module.bias ~= nil then
      module.bias.data:zero_()
    end
  elseif nn.isinstance(module, nn.LayerNorm) then
    module.bias.data:zero_()
    module.weight.data:fill_(1.0)
  end
end

function GPT:forward(idx, targets)
  local x = self.emb_stem(idx)
  x = self.blocks(x)
  x = self.ln_f(x)
  local logits = self.head(x)

  -- the loss, when targets are given
  local loss = nil
  if targets ~= nil then
    loss = F.cross_entropy(logits:view(-1, logits:size(-1)), targets:view(-1), { ignore_index = -1 })
  end
  return logits, loss
end

-- Completes the sequences idx ([b, t] token ids) by max_new_tokens tokens, each predicted from
-- the (block_size last) tokens before it. Call model:eval() first.
function GPT:generate(idx, max_new_tokens, opts)
  opts = opts or {}
  local temperature, do_sample, top_k = opts.temperature or 1.0, opts.do_sample or false, opts.top_k
  local _ <close> = torch.no_grad()
  for _ = 1, max_new_tokens do
    -- crop the context to block_size
    local idx_cond = idx:size(1) <= self.block_size and idx or idx[string.format(":, -%d:", self.block_size)]
    local logits = (self(idx_cond))
    -- the last position's logits, scaled by the temperature
    logits = logits[":, -1, :"] / temperature
    -- keep only the top k
    if top_k ~= nil then
      local v = torch.topk(logits, top_k)
      logits[logits:lt(v[":, -1:"])] = -math.huge
    end
    local probs = F.softmax(logits, { dim = -1 })
    local idx_next
    if do_sample then
      idx_next = torch.multinomial(probs, 1)
    else
      local _
      _, idx_next = torch.topk(probs, 1, { dim = -1 })
    end
    idx = torch.cat({ idx, idx_next }, 1)
  end
  return idx
end

-- AdamW over two groups: weight decay on the Linear weights and the attention's in_proj_weight,
-- none on biases, LayerNorm and Embedding weights and the position embedding. Raises when a
-- parameter falls in both groups or in none.
function M.create_optimizer(model, opt_config)
  local decay, no_decay = {}, {}
  for mn, m in model:named_modules() do
    for pn, _ in m:named_parameters() do
      local fpn = mn ~= "" and (mn .. "." .. pn) or pn -- the full name
      -- named_modules and named_parameters both recurse: a parameter is met once per module
      -- above it, and classified by the one that holds it
      local function ends(s) return pn:sub(-#s) == s end
      if ends("bias") then
        no_decay[fpn] = true
      elseif ends("weight") and nn.isinstance(m, nn.Linear) then
        decay[fpn] = true
      elseif ends("in_proj_weight") then
        decay[fpn] = true -- the attention's input projection
      elseif ends("weight") and (nn.isinstance(m, nn.LayerNorm) or nn.isinstance(m, nn.Embedding)) then
        no_decay[fpn] = true
      elseif ends("pos_emb") then
        no_decay[fpn] = true
      end
    end
  end

  -- every parameter in exactly one group
  local param_dict = {}
  for pn, p in model:named_parameters() do param_dict[pn] = p end
  local both, neither = {}, {}
  for pn in pairs(decay) do if no_decay[pn] then both[#both + 1] = pn end end
  for pn in pairs(param_dict) do if not decay[pn] and not no_decay[pn] then neither[#neither + 1] = pn end end
  table.sort(both)
  table.sort(neither)
  assert(#both == 0, string.format("parameters {%s} made it into both decay/no_decay sets!", table.concat(both, ", ")))
  assert(#neither == 0, string.format("parameters {%s} were not separated into either decay/no_decay set!",
    table.concat(neither, ", ")))

  local function sorted_params(set)
    local names = {}
    for pn in pairs(set) do names[#names + 1] = pn end
    table.sort(names)
    local ps = {}
    for i, pn in ipairs(names) do ps[i] = param_dict[pn] end
    return ps
  end
  local optim_groups = {
    { params = sorted_params(decay), weight_decay = opt_config.weight_decay },
    { params = sorted_params(no_decay), weight_decay = 0.0 },
  }
  return optim.AdamW(optim_groups, { lr = opt_config.learning_rate, betas = { 0.9, 0.95 } })
end

return M
