-- The models of pytorch/tutorials intermediate_source/seq2seq_translation_tutorial.py: a GRU
-- EncoderRNN, the plain DecoderRNN, BahdanauAttention and the AttnDecoderRNN the tutorial trains
-- (teacher forcing when a target is given, its own guesses otherwise), with SOS_token, EOS_token
-- and MAX_LENGTH. Used by main.lua and tests/gpu/tutorials/seq2seq_translation.lua.
local M = { SOS_token = 0, EOS_token = 1, MAX_LENGTH = 10 }
local SOS_token, MAX_LENGTH = M.SOS_token, M.MAX_LENGTH

local EncoderRNN = nn.Module:extend("EncoderRNN")
M.EncoderRNN = EncoderRNN

function EncoderRNN:__init(input_size, hidden_size, dropout_p)
  self.hidden_size = hidden_size

  self.embedding = nn.Embedding(input_size, hidden_size)
  self.gru = nn.GRU(hidden_size, hidden_size, { batch_first = true })
  self.dropout = nn.Dropout(dropout_p or 0.1)
end

function EncoderRNN:forward(input)
  local embedded = self.dropout(self.embedding(input))
  local output, hidden = self.gru(embedded)
  return output, hidden
end

-- the first decoder input: SOS for each sentence, on the encoder's device
local function sos_input(encoder_outputs)
  local batch_size = encoder_outputs:size(0)
  return torch.empty(batch_size, 1, { dtype = torch.long, device = encoder_outputs.device }):fill_(SOS_token)
end

local DecoderRNN = nn.Module:extend("DecoderRNN")
M.DecoderRNN = DecoderRNN

function DecoderRNN:__init(hidden_size, output_size)
  self.embedding = nn.Embedding(output_size, hidden_size)
  self.gru = nn.GRU(hidden_size, hidden_size, { batch_first = true })
  self.out = nn.Linear(hidden_size, output_size)
end

function DecoderRNN:forward(encoder_outputs, encoder_hidden, target_tensor)
  local decoder_input = sos_input(encoder_outputs)
  local decoder_hidden = encoder_hidden
  local decoder_outputs = {}

  for i = 0, MAX_LENGTH - 1 do
    local decoder_output
    decoder_output, decoder_hidden = self:forward_step(decoder_input, decoder_hidden)
    decoder_outputs[#decoder_outputs + 1] = decoder_output

    if target_tensor ~= nil then
      decoder_input = target_tensor[":, " .. i]:unsqueeze(1) -- teacher forcing
    else
      local _, topi = decoder_output:topk(1)
      decoder_input = topi:squeeze(-1):detach()
    end
  end

  decoder_outputs = torch.cat(decoder_outputs, { dim = 1 })
  decoder_outputs = F.log_softmax(decoder_outputs, { dim = -1 })
  return decoder_outputs, decoder_hidden, nil
end

function DecoderRNN:forward_step(input, hidden)
  local output = self.embedding(input)
  output = F.relu(output)
  output, hidden = self.gru(output, hidden)
  output = self.out(output)
  return output, hidden
end

local BahdanauAttention = nn.Module:extend("BahdanauAttention")
M.BahdanauAttention = BahdanauAttention

function BahdanauAttention:__init(hidden_size)
  self.Wa = nn.Linear(hidden_size, hidden_size)
  self.Ua = nn.Linear(hidden_size, hidden_size)
  self.Va = nn.Linear(hidden_size, 1)
end

function BahdanauAttention:forward(query, keys)
  local scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
  scores = scores:squeeze(2):unsqueeze(1)

  local weights = F.softmax(scores, { dim = -1 })
  local context = torch.bmm(weights, keys)

  return context, weights
end

local AttnDecoderRNN = nn.Module:extend("AttnDecoderRNN")
M.AttnDecoderRNN = AttnDecoderRNN

function AttnDecoderRNN:__init(hidden_size, output_size, dropout_p)
  self.embedding = nn.Embedding(output_size, hidden_size)
  self.attention = BahdanauAttention(hidden_size)
  self.gru = nn.GRU(2 * hidden_size, hidden_size, { batch_first = true })
  self.out = nn.Linear(hidden_size, output_size)
  self.dropout = nn.Dropout(dropout_p or 0.1)
end

function AttnDecoderRNN:forward(encoder_outputs, encoder_hidden, target_tensor)
  local decoder_input = sos_input(encoder_outputs)
  local decoder_hidden = encoder_hidden
  local decoder_outputs = {}
  local attentions = {}

  for i = 0, MAX_LENGTH - 1 do
    local decoder_output, attn_weights
    decoder_output, decoder_hidden, attn_weights = self:forward_step(decoder_input, decoder_hidden, encoder_outputs)
    decoder_outputs[#decoder_outputs + 1] = decoder_output
    attentions[#attentions + 1] = attn_weights

    if target_tensor ~= nil then
      decoder_input = target_tensor[":, " .. i]:unsqueeze(1) -- teacher forcing
    else
      local _, topi = decoder_output:topk(1)
      decoder_input = topi:squeeze(-1):detach()
    end
  end

  decoder_outputs = torch.cat(decoder_outputs, { dim = 1 })
  decoder_outputs = F.log_softmax(decoder_outputs, { dim = -1 })
  attentions = torch.cat(attentions, { dim = 1 })

  return decoder_outputs, decoder_hidden, attentions
end

function AttnDecoderRNN:forward_step(input, hidden, encoder_outputs)
  local embedded = self.dropout(self.embedding(input))

  local query = hidden:permute(1, 0, 2)
  local context, attn_weights = self.attention(query, encoder_outputs)
  local input_gru = torch.cat({ embedded, context }, { dim = 2 })

  local output
  output, hidden = self.gru(input_gru, hidden)
  output = self.out(output)

  return output, hidden, attn_weights
end

return M
