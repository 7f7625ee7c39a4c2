-- Port of pytorch/tutorials beginner_source/nlp/sequence_models_tutorial.py ("Sequence Models
-- and Long Short-Term Memory Networks", Deep Learning for NLP): an nn.LSTM stepped and run
-- whole, then an LSTM part-of-speech tagger (LSTMTagger) trained on two sentences.
--   nnrepl scripts/tutorials/nlp/sequence_models_tutorial.lua [--epochs N]   (default 300)
-- Differences: the LSTM's hidden state (h, c) is a Lua list {h, c}, printed as Python prints
-- the tuple; --epochs for a short run. `require` of this file (tests/gpu/tutorials/
-- sequence_models.lua) returns {LSTMTagger = ..., prepare_sequence = ...} and runs nothing.
local R = require "pyrepr"

local function prepare_sequence(seq, to_ix)
  local idxs = {}
  for i, w in ipairs(seq) do idxs[i] = to_ix[w] end
  return torch.tensor(idxs, { dtype = torch.long })
end

local LSTMTagger = nn.Module:extend("LSTMTagger")

function LSTMTagger:__init(embedding_dim, hidden_dim, vocab_size, tagset_size)
  self.hidden_dim = hidden_dim
  self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
  self.lstm = nn.LSTM(embedding_dim, hidden_dim)
  self.hidden2tag = nn.Linear(hidden_dim, tagset_size)
end

function LSTMTagger:forward(sentence)
  local embeds = self.word_embeddings(sentence)
  local lstm_out = self.lstm(embeds:view(#sentence, 1, -1))
  local tag_space = self.hidden2tag(lstm_out:view(#sentence, -1))
  local tag_scores = F.log_softmax(tag_space, { dim = 1 })
  return tag_scores
end

if select(2, ...) == debug.getinfo(1, "S").source:sub(2) then -- loaded by require
  return { LSTMTagger = LSTMTagger, prepare_sequence = prepare_sequence }
end

local argparse = require "argparse"
local parser = argparse.ArgumentParser({ description = "Sequence Models and LSTMs (NLP tutorial)" })
parser:add_argument("--epochs", { type = "int", default = 300, help = "passes over the training data" })
local args = parser:parse_args(arg)

torch.manual_seed(1)

local lstm = nn.LSTM(3, 3)
local inputs = {}
for i = 1, 5 do inputs[i] = torch.randn(1, 3) end

local hidden = { torch.randn(1, 1, 3), torch.randn(1, 1, 3) }
local out
for _, i in ipairs(inputs) do
  out, hidden = lstm(i:view(1, 1, -1), hidden)
end

inputs = torch.cat(inputs):view(#inputs, 1, -1)
hidden = { torch.randn(1, 1, 3), torch.randn(1, 1, 3) }
out, hidden = lstm(inputs, hidden)
print(out)
print(R.tuple(hidden[1], hidden[2]))

-- Example: an LSTM for part-of-speech tagging
local training_data = {
  -- tags: DET determiner, NN noun, V verb
  { ("The dog ate the apple"):split(), { "DET", "NN", "V", "DET", "NN" } },
  { ("Everybody read that book"):split(), { "NN", "V", "DET", "NN" } },
}
local word_to_ix, words = {}, {}
for _, pair in ipairs(training_data) do
  for _, word in ipairs(pair[1]) do
    if word_to_ix[word] == nil then
      words[#words + 1] = word
      word_to_ix[word] = #words - 1
    end
  end
end
print(R.dict(words, word_to_ix))
local tag_to_ix = { DET = 0, NN = 1, V = 2 }

local EMBEDDING_DIM = 6
local HIDDEN_DIM = 6

local model = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, #words, 3)
local loss_function = nn.NLLLoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.1 })

do
  local _ <close> = torch.no_grad()
  inputs = prepare_sequence(training_data[1][1], word_to_ix)
  local tag_scores = model(inputs)
  print(tag_scores)
end

for epoch = 0, args.epochs - 1 do
  for _, pair in ipairs(training_data) do
    local sentence, tags = pair[1], pair[2]
    model:zero_grad()
    local sentence_in = prepare_sequence(sentence, word_to_ix)
    local targets = prepare_sequence(tags, tag_to_ix)
    local tag_scores = model(sentence_in)
    local loss = loss_function(tag_scores, targets)
    loss:backward()
    optimizer:step()
  end
end

do
  local _ <close> = torch.no_grad()
  inputs = prepare_sequence(training_data[1][1], word_to_ix)
  local tag_scores = model(inputs)
  print(tag_scores)
end
