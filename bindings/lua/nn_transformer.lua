-- Transformer layers, as PyTorch builds them from MultiheadAttention, Linear, LayerNorm and
-- Dropout (same submodules, so the same state_dict keys):
--
--   local layer = nn.TransformerEncoderLayer(d_model, nhead, {dim_feedforward=2048, dropout=0.1,
--                   activation="relu" | "gelu" | a function or module, layer_norm_eps=1e-5,
--                   batch_first=false, norm_first=false, bias=true})
--   local enc = nn.TransformerEncoder(layer, num_layers, {norm=})    -- num_layers deep copies
--   enc(src, {mask=, src_key_padding_mask=, is_causal=})
--   nn.TransformerDecoderLayer / nn.TransformerDecoder (tgt, memory, {tgt_mask=, memory_mask=, ...})
--   nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers, ...)(src, tgt, {...})
--   nn.Transformer.generate_square_subsequent_mask(sz)
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local copy = require "copy"
local init = require "nn_init"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local function activation_of(name, a)
  if a == "relu" then return F.relu end
  if a == "gelu" then return F.gelu end
  if type(a) == "function" or Module.is_module(a) then return a end
  U.errorf("%s: activation should be relu/gelu, not %s", name, tostring(a))
end

local layer_spec = { { "d_model", REQ }, { "nhead", REQ }, { "dim_feedforward", 2048 }, { "dropout", 0.1 },
  { "activation", "relu" }, { "layer_norm_eps", 1e-5 }, { "batch_first", false }, { "norm_first", false },
  { "bias", true }, { "device" }, { "dtype" } }

-- the parts every layer has: its feed-forward block and its norms (n of them)
local function build(self, o, n)
  local fk = { device = o.device, dtype = o.dtype }
  local function linear(i, out) return torch.nn.Linear(i, out, { bias = o.bias, device = o.device, dtype = o.dtype }) end
  self.linear1 = linear(o.d_model, o.dim_feedforward)
  self.dropout = torch.nn.Dropout(o.dropout)
  self.linear2 = linear(o.dim_feedforward, o.d_model)
  self.norm_first = o.norm_first
  for i = 1, n do
    self["norm" .. i] = torch.nn.LayerNorm(o.d_model, { eps = o.layer_norm_eps, bias = o.bias, device = fk.device, dtype = fk.dtype })
  end
  for i = 1, n do self["dropout" .. i] = torch.nn.Dropout(o.dropout) end
  self.activation = activation_of(self:_get_name(), o.activation)
end

local function mha(o)
  return torch.nn.MultiheadAttention(o.d_model, o.nhead, { dropout = o.dropout, bias = o.bias, batch_first = o.batch_first,
    device = o.device, dtype = o.dtype })
end

-- torch's own relu and gelu are kept as themselves (torch.save stores them by name) and looked up
-- in F again when called: vmap and forward-mode jvp replace F's functions while they run
local own = { [F.relu] = "relu", [F.gelu] = "gelu" }
local function activate(self, x)
  local name = own[self.activation]
  if name then return F[name](x) end
  return self.activation(x)
end

local function ff_block(self, x, drop)
  return drop(self.linear2(self.dropout(activate(self, self.linear1(x)))))
end

-- ---- encoder ----

local EncoderLayer = Module:extend("TransformerEncoderLayer")
M.TransformerEncoderLayer = EncoderLayer

function EncoderLayer:__init(...)
  local o = U.parse("TransformerEncoderLayer", layer_spec, ...)
  self.self_attn = mha(o)
  build(self, o, 2)
end

local enc_layer_fwd = { { "src", REQ }, { "src_mask" }, { "src_key_padding_mask" }, { "is_causal", false } }

function EncoderLayer:forward(...)
  local o = U.parse("TransformerEncoderLayer.forward", enc_layer_fwd, ...)
  local function sa(x)
    local out = self.self_attn(x, x, x, { attn_mask = o.src_mask, key_padding_mask = o.src_key_padding_mask,
      need_weights = false, is_causal = o.is_causal })
    return self.dropout1(out)
  end
  local x = o.src
  if self.norm_first then
    x = x + sa(self.norm1(x))
    return x + ff_block(self, self.norm2(x), self.dropout2)
  end
  x = self.norm1(x + sa(x))
  return self.norm2(x + ff_block(self, x, self.dropout2))
end

-- num_layers deep copies of layer in a ModuleList, and an optional final norm
local function stack(self, name, layer, num_layers, norm)
  if not Module.is_module(layer) then U.errorf("%s: the layer must be a module, got %s", name, U.typename(layer)) end
  num_layers = U.check_int(name, "num_layers", num_layers, 0)
  local layers = {}
  for i = 1, num_layers do layers[i] = copy.deepcopy(layer) end
  self.layers = torch.nn.ModuleList(layers)
  self.num_layers = num_layers
  self.norm = norm
end

local Encoder = Module:extend("TransformerEncoder")
M.TransformerEncoder = Encoder

function Encoder:__init(...)
  local o = U.parse("TransformerEncoder", { { "encoder_layer", REQ }, { "num_layers", REQ }, { "norm" },
    { "enable_nested_tensor", true }, { "mask_check", true } }, ...)
  stack(self, "TransformerEncoder", o.encoder_layer, o.num_layers, o.norm)
end

function Encoder:forward(...)
  local o = U.parse("TransformerEncoder.forward", { { "src", REQ }, { "mask" }, { "src_key_padding_mask" },
    { "is_causal", false } }, ...)
  local x = o.src
  for _, layer in pairs(self.layers) do
    x = layer(x, { src_mask = o.mask, src_key_padding_mask = o.src_key_padding_mask, is_causal = o.is_causal })
  end
  if self.norm ~= nil then x = self.norm(x) end
  return x
end

-- ---- decoder ----

local DecoderLayer = Module:extend("TransformerDecoderLayer")
M.TransformerDecoderLayer = DecoderLayer

function DecoderLayer:__init(...)
  local o = U.parse("TransformerDecoderLayer", layer_spec, ...)
  self.self_attn = mha(o)
  self.multihead_attn = mha(o)
  build(self, o, 3)
end

local dec_fwd = { { "tgt", REQ }, { "memory", REQ }, { "tgt_mask" }, { "memory_mask" }, { "tgt_key_padding_mask" },
  { "memory_key_padding_mask" }, { "tgt_is_causal", false }, { "memory_is_causal", false } }

function DecoderLayer:forward(...)
  local o = U.parse("TransformerDecoderLayer.forward", dec_fwd, ...)
  local mem = o.memory
  local function sa(x)
    return self.dropout1(self.self_attn(x, x, x, { attn_mask = o.tgt_mask, key_padding_mask = o.tgt_key_padding_mask,
      need_weights = false, is_causal = o.tgt_is_causal }))
  end
  local function ca(x)
    return self.dropout2(self.multihead_attn(x, mem, mem, { attn_mask = o.memory_mask,
      key_padding_mask = o.memory_key_padding_mask, need_weights = false, is_causal = o.memory_is_causal }))
  end
  local x = o.tgt
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + ca(self.norm2(x))
    return x + ff_block(self, self.norm3(x), self.dropout3)
  end
  x = self.norm1(x + sa(x))
  x = self.norm2(x + ca(x))
  return self.norm3(x + ff_block(self, x, self.dropout3))
end

local Decoder = Module:extend("TransformerDecoder")
M.TransformerDecoder = Decoder

function Decoder:__init(...)
  local o = U.parse("TransformerDecoder", { { "decoder_layer", REQ }, { "num_layers", REQ }, { "norm" } }, ...)
  stack(self, "TransformerDecoder", o.decoder_layer, o.num_layers, o.norm)
end

function Decoder:forward(...)
  local o = U.parse("TransformerDecoder.forward", dec_fwd, ...)
  local x = o.tgt
  for _, layer in pairs(self.layers) do
    x = layer(x, o.memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask, tgt_key_padding_mask = o.tgt_key_padding_mask,
      memory_key_padding_mask = o.memory_key_padding_mask, tgt_is_causal = o.tgt_is_causal,
      memory_is_causal = o.memory_is_causal })
  end
  if self.norm ~= nil then x = self.norm(x) end
  return x
end

-- ---- the whole model ----

local Transformer = Module:extend("Transformer")
M.Transformer = Transformer

function Transformer:__init(...)
  local o = U.parse("Transformer", { { "d_model", 512 }, { "nhead", 8 }, { "num_encoder_layers", 6 },
    { "num_decoder_layers", 6 }, { "dim_feedforward", 2048 }, { "dropout", 0.1 }, { "activation", "relu" },
    { "custom_encoder" }, { "custom_decoder" }, { "layer_norm_eps", 1e-5 }, { "batch_first", false },
    { "norm_first", false }, { "bias", true }, { "device" }, { "dtype" } }, ...)
  local lo = { dim_feedforward = o.dim_feedforward, dropout = o.dropout, activation = o.activation,
    layer_norm_eps = o.layer_norm_eps, batch_first = o.batch_first, norm_first = o.norm_first, bias = o.bias,
    device = o.device, dtype = o.dtype }
  local function norm()
    return torch.nn.LayerNorm(o.d_model, { eps = o.layer_norm_eps, bias = o.bias, device = o.device, dtype = o.dtype })
  end
  self.encoder = o.custom_encoder or Encoder(EncoderLayer(o.d_model, o.nhead, lo), o.num_encoder_layers, norm())
  self.decoder = o.custom_decoder or Decoder(DecoderLayer(o.d_model, o.nhead, lo), o.num_decoder_layers, norm())
  self.d_model, self.nhead, self.batch_first = o.d_model, o.nhead, o.batch_first
  for _, p in ipairs(self:parameters()) do
    if p:dim() > 1 then init.xavier_uniform_(p) end
  end
end

function Transformer:forward(...)
  local o = U.parse("Transformer.forward", { { "src", REQ }, { "tgt", REQ }, { "src_mask" }, { "tgt_mask" },
    { "memory_mask" }, { "src_key_padding_mask" }, { "tgt_key_padding_mask" }, { "memory_key_padding_mask" },
    { "src_is_causal", false }, { "tgt_is_causal", false }, { "memory_is_causal", false } }, ...)
  local batch_dim = self.batch_first and 0 or 1
  if o.src:dim() == 3 and o.tgt:dim() == 3 and o.src:size(batch_dim) ~= o.tgt:size(batch_dim) then
    U.error("the batch number of src and tgt must be equal")
  end
  if o.src:size(-1) ~= self.d_model or o.tgt:size(-1) ~= self.d_model then
    U.error("the feature number of src and tgt must be equal to d_model")
  end
  local memory = self.encoder(o.src, { mask = o.src_mask, src_key_padding_mask = o.src_key_padding_mask,
    is_causal = o.src_is_causal })
  return self.decoder(o.tgt, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
    tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask = o.memory_key_padding_mask,
    tgt_is_causal = o.tgt_is_causal, memory_is_causal = o.memory_is_causal })
end

-- A float mask with -inf above the diagonal and 0 elsewhere (position i sees 0..i).
function Transformer.generate_square_subsequent_mask(sz, device, dtype)
  if U.is_opts(device) then device, dtype = device.device, device.dtype end
  return torch.full({ sz, sz }, -math.huge, { device = device, dtype = dtype }):triu(1)
end

return M
