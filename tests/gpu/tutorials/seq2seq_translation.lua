-- Parity of scripts/tutorials/seq2seq_translation with PyTorch, nnrepl's side of
-- seq2seq_translation.py (its header describes the steps and files): the port's own
-- EncoderRNN and AttnDecoderRNN (scripts/tutorials/seq2seq_translation/model.lua), train_epoch's
-- step with teacher forcing.
--   nnrepl tests/gpu/tutorials/seq2seq_translation.lua DIR [cuda|cpu] [--generate]
-- --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
package.path = here .. "/../../../scripts/tutorials/seq2seq_translation/?.lua;" .. package.path
local model = require "model"
local EncoderRNN, AttnDecoderRNN = model.EncoderRNN, model.AttnDecoderRNN

local IN_WORDS, OUT_WORDS, hidden_size, K, B = 30, 25, 128, 12, 8
local MAX_LENGTH, EOS_token = model.MAX_LENGTH, model.EOS_token
local run = P.start("seq2seq_translation", ...)
local device = run.device

-- both models' weights in one dict, "encoder.*" and "decoder.*" (the .py's ModuleDict)
local both = nn.ModuleDict({ encoder = EncoderRNN(IN_WORDS, hidden_size), decoder = AttnDecoderRNN(hidden_size, OUT_WORDS) })

local function sentences(g, n_words) -- (B, MAX_LENGTH): 1 to 9 word ids, EOS, zeros
  local ids = torch.zeros(B, MAX_LENGTH, { dtype = torch.long })
  local lens = torch.randint(1, MAX_LENGTH, { B }, { generator = g })
  local words = torch.randint(2, n_words, { B, MAX_LENGTH }, { generator = g })
  for b = 0, B - 1 do
    local n = lens[b]:item()
    ids[string.format("%d, :%d", b, n)] = words[string.format("%d, :%d", b, n)]
    ids[b][n] = EOS_token
  end
  return ids
end

if run.generate then
  torch.manual_seed(0)
  local init = nn.ModuleDict({ encoder = EncoderRNN(IN_WORDS, hidden_size), decoder = AttnDecoderRNN(hidden_size, OUT_WORDS) })
  torch.save(init:state_dict(), run.path("init.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for k = 0, K - 1 do
    data["input." .. k] = sentences(g, IN_WORDS)
    data["target." .. k] = sentences(g, OUT_WORDS)
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

both:load_state_dict(torch.load(run.path("init.safetensors")))
both:to(device):double() -- as the .py says why
local encoder, decoder = both.encoder, both.decoder
encoder.dropout.p = 0.0
decoder.dropout.p = 0.0
local data = torch.load(run.path("data.safetensors"))
local encoder_optimizer = optim.Adam(encoder:parameters(), { lr = 0.001 })
local decoder_optimizer = optim.Adam(decoder:parameters(), { lr = 0.001 })
local criterion = nn.NLLLoss()
local losses = {}
for k = 0, K - 1 do -- train_epoch's loop body
  local input_tensor, target_tensor = data["input." .. k]:to(device), data["target." .. k]:to(device)

  encoder_optimizer:zero_grad()
  decoder_optimizer:zero_grad()

  local encoder_outputs, encoder_hidden = encoder(input_tensor)
  local decoder_outputs = decoder(encoder_outputs, encoder_hidden, target_tensor)

  local loss = criterion(decoder_outputs:view(-1, decoder_outputs:size(-1)), target_tensor:view(-1))
  loss:backward()

  encoder_optimizer:step()
  decoder_optimizer:step()

  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, both)
