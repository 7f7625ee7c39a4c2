-- The models of pytorch/tutorials beginner_source/chatbot_tutorial.py: the bidirectional GRU
-- EncoderRNN, Luong's Attn (dot, general, concat), LuongAttnDecoderRNN, maskNLLLoss and the
-- GreedySearchDecoder, with the word tokens. Used by main.lua and tests/gpu/tutorials/chatbot.lua.
local M = { PAD_token = 0, SOS_token = 1, EOS_token = 2 }

local EncoderRNN = nn.Module:extend("EncoderRNN")
M.EncoderRNN = EncoderRNN

function EncoderRNN:__init(hidden_size, embedding, n_layers, dropout)
  n_layers, dropout = n_layers or 1, dropout or 0
  self.n_layers = n_layers
  self.hidden_size = hidden_size
  self.embedding = embedding

  -- input and hidden size are both hidden_size: the input is a word embedding of that size
  self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
    { dropout = (n_layers == 1 and 0 or dropout), bidirectional = true })
end

function EncoderRNN:forward(input_seq, input_lengths, hidden)
  local embedded = self.embedding(input_seq)
  local packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
  local outputs
  outputs, hidden = self.gru(packed, hidden)
  outputs = nn.utils.rnn.pad_packed_sequence(outputs)
  -- the two directions' outputs summed
  local h = self.hidden_size
  outputs = outputs[":, :, :" .. h] + outputs[":, :, " .. h .. ":"]
  return outputs, hidden
end

-- Luong attention
local Attn = nn.Module:extend("Attn")
M.Attn = Attn

function Attn:__init(method, hidden_size)
  self.method = method
  if method ~= "dot" and method ~= "general" and method ~= "concat" then
    error(string.format("ValueError: ('%s', 'is not an appropriate attention method.')", tostring(method)), 2)
  end
  self.hidden_size = hidden_size
  if method == "general" then
    self.attn = nn.Linear(self.hidden_size, hidden_size)
  elseif method == "concat" then
    self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
    self.v = nn.Parameter(torch.FloatTensor(hidden_size))
  end
end

function Attn:dot_score(hidden, encoder_output)
  return torch.sum(hidden * encoder_output, { dim = 2 })
end

function Attn:general_score(hidden, encoder_output)
  local energy = self.attn(encoder_output)
  return torch.sum(hidden * energy, { dim = 2 })
end

function Attn:concat_score(hidden, encoder_output)
  local energy = self.attn(torch.cat({ hidden:expand(encoder_output:size(0), -1, -1), encoder_output }, 2)):tanh()
  return torch.sum(self.v * energy, { dim = 2 })
end

function Attn:forward(hidden, encoder_outputs)
  local attn_energies
  if self.method == "general" then
    attn_energies = self:general_score(hidden, encoder_outputs)
  elseif self.method == "concat" then
    attn_energies = self:concat_score(hidden, encoder_outputs)
  elseif self.method == "dot" then
    attn_energies = self:dot_score(hidden, encoder_outputs)
  end

  -- (max_length, batch) -> (batch, max_length)
  attn_energies = attn_energies:t()

  return F.softmax(attn_energies, { dim = 1 }):unsqueeze(1)
end

local LuongAttnDecoderRNN = nn.Module:extend("LuongAttnDecoderRNN")
M.LuongAttnDecoderRNN = LuongAttnDecoderRNN

function LuongAttnDecoderRNN:__init(attn_model, embedding, hidden_size, output_size, n_layers, dropout)
  n_layers, dropout = n_layers or 1, dropout or 0.1

  self.attn_model = attn_model
  self.hidden_size = hidden_size
  self.output_size = output_size
  self.n_layers = n_layers
  self.dropout = dropout

  self.embedding = embedding
  self.embedding_dropout = nn.Dropout(dropout)
  self.gru = nn.GRU(hidden_size, hidden_size, n_layers, { dropout = (n_layers == 1 and 0 or dropout) })
  self.concat = nn.Linear(hidden_size * 2, hidden_size)
  self.out = nn.Linear(hidden_size, output_size)

  self.attn = Attn(attn_model, hidden_size)
end

-- one time step (one word) at a time
function LuongAttnDecoderRNN:forward(input_step, last_hidden, encoder_outputs)
  local embedded = self.embedding(input_step)
  embedded = self.embedding_dropout(embedded)
  local rnn_output, hidden = self.gru(embedded, last_hidden)
  local attn_weights = self.attn(rnn_output, encoder_outputs)
  local context = attn_weights:bmm(encoder_outputs:transpose(0, 1))
  -- Luong eq. 5
  rnn_output = rnn_output:squeeze(0)
  context = context:squeeze(1)
  local concat_input = torch.cat({ rnn_output, context }, 1)
  local concat_output = torch.tanh(self.concat(concat_input))
  -- Luong eq. 6
  local output = self.out(concat_output)
  output = F.softmax(output, { dim = 1 })
  return output, hidden
end

-- the mean negative log likelihood over the mask's true elements, and their count
function M.maskNLLLoss(inp, target, mask)
  local nTotal = mask:sum()
  local crossEntropy = -torch.log(torch.gather(inp, 1, target:view(-1, 1)):squeeze(1))
  local loss = crossEntropy:masked_select(mask):mean()
  return loss, nTotal:item()
end

local GreedySearchDecoder = nn.Module:extend("GreedySearchDecoder")
M.GreedySearchDecoder = GreedySearchDecoder

function GreedySearchDecoder:__init(encoder, decoder)
  self.encoder = encoder
  self.decoder = decoder
end

function GreedySearchDecoder:forward(input_seq, input_length, max_length)
  local device = input_seq.device
  local encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
  local decoder_hidden = encoder_hidden[":" .. self.decoder.n_layers]
  local decoder_input = torch.ones(1, 1, { device = device, dtype = torch.long }) * M.SOS_token
  local all_tokens = torch.zeros({ 0 }, { device = device, dtype = torch.long })
  local all_scores = torch.zeros({ 0 }, { device = device })
  for _ = 1, max_length do
    local decoder_output
    decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
    -- the most likely word and its softmax score
    local decoder_scores
    decoder_scores, decoder_input = torch.max(decoder_output, { dim = 1 })
    all_tokens = torch.cat({ all_tokens, decoder_input }, { dim = 0 })
    all_scores = torch.cat({ all_scores, decoder_scores }, { dim = 0 })
    decoder_input = torch.unsqueeze(decoder_input, 0)
  end
  return all_tokens, all_scores
end

return M
