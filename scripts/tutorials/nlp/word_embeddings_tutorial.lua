-- Port of pytorch/tutorials beginner_source/nlp/word_embeddings_tutorial.py ("Word Embeddings:
-- Encoding Lexical Semantics", Deep Learning for NLP): an nn.Embedding lookup, then an N-gram
-- language model (NGramLanguageModeler) trained on Shakespeare's Sonnet 2, then the data of the
-- CBOW exercise.
--   nnrepl scripts/tutorials/nlp/word_embeddings_tutorial.lua [--epochs N]   (default 10)
-- Differences: the vocabulary is numbered in order of first appearance (Python numbers a set,
-- whose order changes from run to run); --epochs for a short run. `require` of this file
-- (tests/gpu/tutorials/word_embeddings.lua) returns {NGramLanguageModeler = ...} and runs nothing.
local R = require "pyrepr"

local NGramLanguageModeler = nn.Module:extend("NGramLanguageModeler")

function NGramLanguageModeler:__init(vocab_size, embedding_dim, context_size)
  self.embeddings = nn.Embedding(vocab_size, embedding_dim)
  self.linear1 = nn.Linear(context_size * embedding_dim, 128)
  self.linear2 = nn.Linear(128, vocab_size)
end

function NGramLanguageModeler:forward(inputs)
  local embeds = self.embeddings(inputs):view({ 1, -1 })
  local out = F.relu(self.linear1(embeds))
  out = self.linear2(out)
  local log_probs = F.log_softmax(out, { dim = 1 })
  return log_probs
end

if select(2, ...) == debug.getinfo(1, "S").source:sub(2) then -- loaded by require
  return { NGramLanguageModeler = NGramLanguageModeler }
end

local argparse = require "argparse"
local parser = argparse.ArgumentParser({ description = "Word Embeddings (NLP tutorial)" })
parser:add_argument("--epochs", { type = "int", default = 10, help = "passes over the trigrams" })
local args = parser:parse_args(arg)

torch.manual_seed(1)

local word_to_ix = { hello = 0, world = 1 }
local embeds = nn.Embedding(2, 5)
local lookup_tensor = torch.tensor({ word_to_ix["hello"] }, { dtype = torch.long })
local hello_embed = embeds(lookup_tensor)
print(hello_embed)

-- An example: N-gram language modeling
-- the vocabulary of a list of words, numbered by first appearance: the words, word -> index
local function make_vocab(text)
  local vocab, to_ix = {}, {}
  for _, w in ipairs(text) do
    if to_ix[w] == nil then
      vocab[#vocab + 1] = w
      to_ix[w] = #vocab - 1
    end
  end
  return vocab, to_ix
end

local CONTEXT_SIZE = 2
local EMBEDDING_DIM = 10
local test_sentence = ([[When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now,
Will be a totter'd weed of small worth held:
Then being asked, where all thy beauty lies,
Where all the treasure of thy lusty days;
To say, within thine own deep sunken eyes,
Were an all-eating shame, and thriftless praise.
How much more praise deserv'd thy beauty's use,
If thou couldst answer 'This fair child of mine
Shall sum my count, and make my old excuse,'
Proving his beauty by succession thine!
This were to be new made when thou art old,
And see thy blood warm when thou feel'st it cold.]]):split()
local trigrams = {}
for i = 1, #test_sentence - 2 do
  trigrams[#trigrams + 1] = R.T({ test_sentence[i], test_sentence[i + 1] }, test_sentence[i + 2])
end
print(R.list({ trigrams[1], trigrams[2], trigrams[3] }))

local vocab
vocab, word_to_ix = make_vocab(test_sentence)

local losses = {}
local loss_function = nn.NLLLoss()
local model = NGramLanguageModeler(#vocab, EMBEDDING_DIM, CONTEXT_SIZE)
local optimizer = optim.SGD(model:parameters(), { lr = 0.001 })

for epoch = 0, args.epochs - 1 do
  local total_loss = 0
  for _, trigram in ipairs(trigrams) do
    local context, target = trigram[1], trigram[2]
    local context_idxs = torch.tensor({ word_to_ix[context[1]], word_to_ix[context[2]] }, { dtype = torch.long })
    model:zero_grad()
    local log_probs = model(context_idxs)
    local loss = loss_function(log_probs, torch.tensor({ word_to_ix[target] }, { dtype = torch.long }))
    loss:backward()
    optimizer:step()
    total_loss = total_loss + loss:item()
  end
  losses[#losses + 1] = total_loss
end
print(R.list(losses))

-- Exercise: computing word embeddings with a continuous bag-of-words model
CONTEXT_SIZE = 2
local raw_text = ([[We are about to study the idea of a computational process.
Computational processes are abstract beings that inhabit computers.
As they evolve, processes manipulate other abstract things called data.
The evolution of a process is directed by a pattern of rules
called a program. People create programs to direct processes. In effect,
we conjure the spirits of the computer with our spells.]]):split()

vocab, word_to_ix = make_vocab(raw_text)
local vocab_size = #vocab

local data = {}
for i = 3, #raw_text - 2 do
  local context = { raw_text[i - 2], raw_text[i - 1], raw_text[i + 1], raw_text[i + 2] }
  local target = raw_text[i]
  data[#data + 1] = R.T(context, target)
end
print(R.list({ data[1], data[2], data[3], data[4], data[5] }))

local CBOW = nn.Module:extend("CBOW") -- the exercise: fill it in
function CBOW:__init() end
function CBOW:forward(inputs) end

local function make_context_vector(context, word_to_ix)
  local idxs = {}
  for i, w in ipairs(context) do idxs[i] = word_to_ix[w] end
  return torch.tensor(idxs, { dtype = torch.long })
end

make_context_vector(data[1][1], word_to_ix)
