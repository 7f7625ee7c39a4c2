-- Parity of scripts/tutorials/chatbot_tutorial with PyTorch, nnrepl's side of chatbot.py (its
-- header describes the steps and files): the port's own EncoderRNN, LuongAttnDecoderRNN and
-- maskNLLLoss (scripts/tutorials/chatbot_tutorial/model.lua), the tutorial's train() step.
--   nnrepl tests/gpu/tutorials/chatbot.lua DIR [cuda|cpu] [--generate]
-- --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
package.path = here .. "/../../../scripts/tutorials/chatbot_tutorial/?.lua;" .. package.path
local model = require "model"
local EncoderRNN, LuongAttnDecoderRNN, maskNLLLoss = model.EncoderRNN, model.LuongAttnDecoderRNN, model.maskNLLLoss

local PAD_token, SOS_token, EOS_token, MAX_LENGTH = model.PAD_token, model.SOS_token, model.EOS_token, 10
local N_WORDS, hidden_size, K, batch_size = 40, 32, 12, 8
local attn_model, encoder_n_layers, decoder_n_layers, dropout = "dot", 2, 2, 0
local clip, learning_rate, decoder_learning_ratio = 50.0, 0.0001, 5.0
local run = P.start("chatbot", ...)
local device = run.device

local function models()
  local embedding = nn.Embedding(N_WORDS, hidden_size)
  local encoder = EncoderRNN(hidden_size, embedding, encoder_n_layers, dropout)
  local decoder = LuongAttnDecoderRNN(attn_model, embedding, hidden_size, N_WORDS, decoder_n_layers, dropout)
  return embedding, nn.ModuleDict({ encoder = encoder, decoder = decoder })
end

local function sentences(g) -- batch_size index lists: 1 to 9 words, EOS
  local lens = torch.randint(1, MAX_LENGTH, { batch_size }, { generator = g })
  local words = torch.randint(3, N_WORDS, { batch_size, MAX_LENGTH }, { generator = g })
  local out = {}
  for b = 0, batch_size - 1 do
    local s = words[string.format("%d, :%d", b, lens[b]:item())]:tolist()
    s[#s + 1] = EOS_token
    out[#out + 1] = s
  end
  return out
end

local function padded(l) -- zeroPadding + torch.LongTensor
  local T = 0
  for _, s in ipairs(l) do T = math.max(T, #s) end
  local out = torch.zeros(T, #l, { dtype = torch.long })
  for b, s in ipairs(l) do out[string.format(":%d, %d", #s, b - 1)] = torch.tensor(s) end
  return out
end

if run.generate then
  torch.manual_seed(0)
  local _, init = models()
  torch.save(init:state_dict(), run.path("init.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for k = 0, K - 1 do
    local inputs, targets = sentences(g), sentences(g)
    local order = {}
    for b = 1, batch_size do order[b] = b end
    table.sort(order, function(a, b) -- longest input first, stable
      if #inputs[a] ~= #inputs[b] then return #inputs[a] > #inputs[b] end
      return a < b
    end)
    local ins, tgs, lens = {}, {}, {}
    for i, b in ipairs(order) do ins[i], tgs[i], lens[i] = inputs[b], targets[b], #inputs[b] end
    data["input." .. k] = padded(ins)
    data["lengths." .. k] = torch.tensor(lens)
    data["target." .. k] = padded(tgs)
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local embedding, both = models()
both:load_state_dict(torch.load(run.path("init.safetensors")))
both:to(device):double() -- as the .py says why
local encoder, decoder = both.encoder, both.decoder
encoder:train()
decoder:train()
local data = torch.load(run.path("data.safetensors"))
local encoder_optimizer = optim.Adam(encoder:parameters(), { lr = learning_rate })
local decoder_optimizer = optim.Adam(decoder:parameters(), { lr = learning_rate * decoder_learning_ratio })
local losses = {}
for k = 0, K - 1 do -- trainIters' loop body with the tutorial's train(), teacher forcing
  local input_variable, lengths, target_variable = data["input." .. k], data["lengths." .. k], data["target." .. k]
  local mask = target_variable:ne(PAD_token) -- binaryMatrix
  local max_target_len = target_variable:size(0)

  encoder_optimizer:zero_grad()
  decoder_optimizer:zero_grad()
  input_variable = input_variable:to(device)
  target_variable = target_variable:to(device)
  mask = mask:to(device)
  lengths = lengths:to("cpu")
  local loss = 0
  local print_losses, n_totals = 0, 0
  local encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
  local sos = {}
  for i = 1, batch_size do sos[i] = SOS_token end
  local decoder_input = torch.LongTensor({ sos }):to(device)
  local decoder_hidden = encoder_hidden[":" .. decoder.n_layers]
  for t = 0, max_target_len - 1 do
    local decoder_output
    decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
    decoder_input = target_variable[t]:view(1, -1)
    local mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
    loss = loss + mask_loss
    print_losses = print_losses + mask_loss:item() * nTotal
    n_totals = n_totals + nTotal
  end
  loss:backward()
  nn.utils.clip_grad_norm_(encoder:parameters(), clip)
  nn.utils.clip_grad_norm_(decoder:parameters(), clip)
  encoder_optimizer:step()
  decoder_optimizer:step()
  losses[#losses + 1] = print_losses / n_totals
end
P.finish(run, losses, both)
