-- Port of pytorch/tutorials beginner_source/nlp/advanced_tutorial.py ("Advanced: Making Dynamic
-- Decisions and the Bi-LSTM CRF", Deep Learning for NLP): a BiLSTM_CRF tagger (forward
-- algorithm for the partition function, Viterbi decoding) trained on two sentences with SGD.
--   nnrepl scripts/tutorials/nlp/advanced_tutorial.lua [--epochs N]   (default 300)
-- Differences: START_TAG and STOP_TAG are defined before the class (Python reads them as
-- globals later); model(sentence) returns score, tag_seq as two values, printed as Python prints
-- the tuple; --epochs for a short run. `require` of this file (tests/gpu/tutorials/
-- advanced_tutorial.lua) returns {BiLSTM_CRF = ..., prepare_sequence = ..., START_TAG = ...,
-- STOP_TAG = ...} and runs nothing.
local R = require "pyrepr"

local function argmax(vec)
  local _, idx = torch.max(vec, 1)
  return idx:item()
end

local function prepare_sequence(seq, to_ix)
  local idxs = {}
  for i, w in ipairs(seq) do idxs[i] = to_ix[w] end
  return torch.tensor(idxs, { dtype = torch.long })
end

-- log sum exp, stable for the forward algorithm
local function log_sum_exp(vec)
  local max_score = vec[0][argmax(vec)]
  local max_score_broadcast = max_score:view(1, -1):expand(1, vec:size()[1])
  return max_score + torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))
end

local START_TAG = "<START>"
local STOP_TAG = "<STOP>"

local BiLSTM_CRF = nn.Module:extend("BiLSTM_CRF")

function BiLSTM_CRF:__init(vocab_size, tag_to_ix, embedding_dim, hidden_dim)
  self.embedding_dim = embedding_dim
  self.hidden_dim = hidden_dim
  self.vocab_size = vocab_size
  self.tag_to_ix = tag_to_ix
  self.tagset_size = 0
  for _ in pairs(tag_to_ix) do self.tagset_size = self.tagset_size + 1 end

  self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
  self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, { num_layers = 1, bidirectional = true })
  self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)

  -- transitions[i][j]: the score of going to tag i from tag j
  self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
  -- never to the start tag, never from the stop tag
  self.transitions.data[tag_to_ix[START_TAG]] = -10000
  self.transitions.data[":, " .. tag_to_ix[STOP_TAG]] = -10000

  self.hidden = self:init_hidden()
end

function BiLSTM_CRF:init_hidden()
  return { torch.randn(2, 1, self.hidden_dim // 2), torch.randn(2, 1, self.hidden_dim // 2) }
end

function BiLSTM_CRF:_forward_alg(feats)
  local init_alphas = torch.full({ 1, self.tagset_size }, -10000.)
  init_alphas[0][self.tag_to_ix[START_TAG]] = 0.
  local forward_var = init_alphas
  for _, feat in pairs(feats) do
    local alphas_t = {}
    for next_tag = 0, self.tagset_size - 1 do
      local emit_score = feat[next_tag]:view(1, -1):expand(1, self.tagset_size)
      local trans_score = self.transitions[next_tag]:view(1, -1)
      local next_tag_var = forward_var + trans_score + emit_score
      alphas_t[#alphas_t + 1] = log_sum_exp(next_tag_var):view(1)
    end
    forward_var = torch.cat(alphas_t):view(1, -1)
  end
  local terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
  local alpha = log_sum_exp(terminal_var)
  return alpha
end

function BiLSTM_CRF:_get_lstm_features(sentence)
  self.hidden = self:init_hidden()
  local embeds = self.word_embeds(sentence):view(#sentence, 1, -1)
  local lstm_out
  lstm_out, self.hidden = self.lstm(embeds, self.hidden)
  lstm_out = lstm_out:view(#sentence, self.hidden_dim)
  local lstm_feats = self.hidden2tag(lstm_out)
  return lstm_feats
end

function BiLSTM_CRF:_score_sentence(feats, tags)
  local score = torch.zeros(1)
  tags = torch.cat({ torch.tensor({ self.tag_to_ix[START_TAG] }, { dtype = torch.long }), tags })
  for i, feat in pairs(feats) do
    local to, from = tags[i + 1]:item(), tags[i]:item()
    score = score + self.transitions[to][from] + feat[to]
  end
  score = score + self.transitions[self.tag_to_ix[STOP_TAG]][tags[-1]:item()]
  return score
end

function BiLSTM_CRF:_viterbi_decode(feats)
  local backpointers = {}

  local init_vvars = torch.full({ 1, self.tagset_size }, -10000.)
  init_vvars[0][self.tag_to_ix[START_TAG]] = 0

  -- forward_var at step i holds the viterbi variables of step i - 1
  local forward_var = init_vvars
  for _, feat in pairs(feats) do
    local bptrs_t = {}
    local viterbivars_t = {}
    for next_tag = 0, self.tagset_size - 1 do
      -- the emission score does not change which previous tag is best: added below
      local next_tag_var = forward_var + self.transitions[next_tag]
      local best_tag_id = argmax(next_tag_var)
      bptrs_t[#bptrs_t + 1] = best_tag_id
      viterbivars_t[#viterbivars_t + 1] = next_tag_var[0][best_tag_id]:view(1)
    end
    forward_var = (torch.cat(viterbivars_t) + feat):view(1, -1)
    backpointers[#backpointers + 1] = bptrs_t
  end

  local terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
  local best_tag_id = argmax(terminal_var)
  local path_score = terminal_var[0][best_tag_id]

  local best_path = { best_tag_id }
  for t = #backpointers, 1, -1 do
    best_tag_id = backpointers[t][best_tag_id + 1]
    best_path[#best_path + 1] = best_tag_id
  end
  local start = table.remove(best_path)
  assert(start == self.tag_to_ix[START_TAG])
  local reversed = {}
  for i = #best_path, 1, -1 do reversed[#reversed + 1] = best_path[i] end
  return path_score, reversed
end

function BiLSTM_CRF:neg_log_likelihood(sentence, tags)
  local feats = self:_get_lstm_features(sentence)
  local forward_score = self:_forward_alg(feats)
  local gold_score = self:_score_sentence(feats, tags)
  return forward_score - gold_score
end

function BiLSTM_CRF:forward(sentence) -- not _forward_alg
  local lstm_feats = self:_get_lstm_features(sentence)
  local score, tag_seq = self:_viterbi_decode(lstm_feats)
  return score, tag_seq
end

if select(2, ...) == debug.getinfo(1, "S").source:sub(2) then -- loaded by require
  return { BiLSTM_CRF = BiLSTM_CRF, prepare_sequence = prepare_sequence, START_TAG = START_TAG, STOP_TAG = STOP_TAG }
end

local argparse = require "argparse"
local parser = argparse.ArgumentParser({ description = "Bi-LSTM CRF (NLP tutorial)" })
parser:add_argument("--epochs", { type = "int", default = 300, help = "passes over the training data" })
local args = parser:parse_args(arg)

torch.manual_seed(1)

local EMBEDDING_DIM = 5
local HIDDEN_DIM = 4

local training_data = { {
  ("the wall street journal reported today that apple corporation made money"):split(),
  ("B I I I O O O B I O O"):split(),
}, {
  ("georgia tech is a university in georgia"):split(),
  ("B I O O O O B"):split(),
} }

local word_to_ix, n_words = {}, 0
for _, pair in ipairs(training_data) do
  for _, word in ipairs(pair[1]) do
    if word_to_ix[word] == nil then
      word_to_ix[word] = n_words
      n_words = n_words + 1
    end
  end
end

local tag_to_ix = { B = 0, I = 1, O = 2, [START_TAG] = 3, [STOP_TAG] = 4 }

local model = BiLSTM_CRF(n_words, tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)
local optimizer = optim.SGD(model:parameters(), { lr = 0.01, weight_decay = 1e-4 })

do
  local _ <close> = torch.no_grad()
  local precheck_sent = prepare_sequence(training_data[1][1], word_to_ix)
  local precheck_tags = prepare_sequence(training_data[1][2], tag_to_ix)
  print(R.tuple(model(precheck_sent)))
end

for epoch = 0, args.epochs - 1 do
  for _, pair in ipairs(training_data) do
    local sentence, tags = pair[1], pair[2]
    model:zero_grad()
    local sentence_in = prepare_sequence(sentence, word_to_ix)
    local targets = prepare_sequence(tags, tag_to_ix)
    local neg_log_likelihood = model:neg_log_likelihood(sentence_in, targets)
    neg_log_likelihood:backward()
    optimizer:step()
  end
end

do
  local _ <close> = torch.no_grad()
  local precheck_sent = prepare_sequence(training_data[1][1], word_to_ix)
  print(R.tuple(model(precheck_sent)))
end
