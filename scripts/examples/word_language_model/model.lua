-- pytorch/examples word_language_model/model.py in Lua: RNNModel (an embedding, an RNN_TANH,
-- RNN_RELU, LSTM or GRU stack and a linear decoder, weights optionally tied), PositionalEncoding
-- and TransformerModel (nn.Transformer's encoder with a causal mask). main.lua, generate.lua and
-- tests/gpu/examples/word_language_model.lua require this file.
local M = {}

-- Container module with an encoder, a recurrent module, and a decoder.
local RNNModel = nn.Module:extend("RNNModel")
M.RNNModel = RNNModel

function RNNModel:__init(rnn_type, ntoken, ninp, nhid, nlayers, dropout, tie_weights)
  if dropout == nil then dropout = 0.5 end
  self.ntoken = ntoken
  self.drop = nn.Dropout(dropout)
  self.encoder = nn.Embedding(ntoken, ninp)
  if rnn_type == "LSTM" or rnn_type == "GRU" then
    self.rnn = nn[rnn_type](ninp, nhid, nlayers, { dropout = dropout })
  else
    local nonlinearity = ({ RNN_TANH = "tanh", RNN_RELU = "relu" })[rnn_type]
    if not nonlinearity then
      error("An invalid option for `--model` was supplied, options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']", 2)
    end
    self.rnn = nn.RNN(ninp, nhid, nlayers, { nonlinearity = nonlinearity, dropout = dropout })
  end
  self.decoder = nn.Linear(nhid, ntoken)

  -- Tying the decoder's weight to the embedding's (Press & Wolf 2016; Inan et al. 2016)
  if tie_weights then
    if nhid ~= ninp then error("When using the tied flag, nhid must be equal to emsize", 2) end
    self.decoder.weight = self.encoder.weight
  end

  self:init_weights()

  self.rnn_type = rnn_type
  self.nhid = nhid
  self.nlayers = nlayers
end

function RNNModel:init_weights()
  local initrange = 0.1
  nn.init.uniform_(self.encoder.weight, -initrange, initrange)
  nn.init.zeros_(self.decoder.bias)
  nn.init.uniform_(self.decoder.weight, -initrange, initrange)
end

function RNNModel:forward(input, hidden)
  local emb = self.drop(self.encoder(input))
  local output
  output, hidden = self.rnn(emb, hidden)
  output = self.drop(output)
  local decoded = self.decoder(output)
  decoded = decoded:view(-1, self.ntoken)
  return F.log_softmax(decoded, { dim = 1 }), hidden
end

function RNNModel:init_hidden(bsz)
  local weight = self:parameters()[1]
  if self.rnn_type == "LSTM" then
    return { weight:new_zeros(self.nlayers, bsz, self.nhid), weight:new_zeros(self.nlayers, bsz, self.nhid) }
  else
    return weight:new_zeros(self.nlayers, bsz, self.nhid)
  end
end

-- Adds sines and cosines of the position, of wavelengths from 2*pi to 10000*2*pi, to
-- embeddings of size d_model: x [sequence length, batch size, d_model], then dropout.
local PositionalEncoding = nn.Module:extend("PositionalEncoding")
M.PositionalEncoding = PositionalEncoding

function PositionalEncoding:__init(d_model, dropout, max_len)
  self.dropout = nn.Dropout({ p = dropout or 0.1 })
  max_len = max_len or 5000

  local pe = torch.zeros(max_len, d_model)
  local position = torch.arange(0, max_len, { dtype = torch.float }):unsqueeze(1)
  local div_term = torch.exp(torch.arange(0, d_model, 2):float() * (-math.log(10000.0) / d_model))
  pe[":, 0::2"] = torch.sin(position * div_term)
  pe[":, 1::2"] = torch.cos(position * div_term)
  pe = pe:unsqueeze(0):transpose(0, 1)
  self:register_buffer("pe", pe)
end

function PositionalEncoding:forward(x)
  x = x + self.pe[":" .. x:size(0) .. ", :"]
  return self.dropout(x)
end

-- Container module with an encoder, a recurrent or transformer module, and a decoder.
local TransformerModel = nn.Transformer:extend("TransformerModel")
M.TransformerModel = TransformerModel

function TransformerModel:__init(ntoken, ninp, nhead, nhid, nlayers, dropout)
  nn.Transformer.__init(self, { d_model = ninp, nhead = nhead, dim_feedforward = nhid, num_encoder_layers = nlayers })
  self.model_type = "Transformer"
  self.src_mask = nil
  self.pos_encoder = PositionalEncoding(ninp, dropout or 0.5)

  self.input_emb = nn.Embedding(ntoken, ninp)
  self.ninp = ninp
  self.decoder = nn.Linear(ninp, ntoken)

  self:init_weights()
end

function TransformerModel:_generate_square_subsequent_mask(sz)
  return torch.log(torch.tril(torch.ones(sz, sz)))
end

function TransformerModel:init_weights()
  local initrange = 0.1
  nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
  nn.init.zeros_(self.decoder.bias)
  nn.init.uniform_(self.decoder.weight, -initrange, initrange)
end

function TransformerModel:forward(src, has_mask)
  if has_mask == nil then has_mask = true end
  if has_mask then
    local device = src.device
    if self.src_mask == nil or self.src_mask:size(0) ~= src:size(0) then
      local mask = self:_generate_square_subsequent_mask(src:size(0)):to(device)
      self.src_mask = mask
    end
  else
    self.src_mask = nil
  end

  src = self.input_emb(src) * math.sqrt(self.ninp)
  src = self.pos_encoder(src)
  local output = self.encoder(src, { mask = self.src_mask })
  output = self.decoder(output)
  return F.log_softmax(output, { dim = -1 })
end

return M
