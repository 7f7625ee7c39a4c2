-- Port of pytorch/tutorials beginner_source/nlp/deep_learning_tutorial.py ("Deep Learning with
-- PyTorch", Deep Learning for NLP): affine maps, non-linearities, softmax, then a logistic
-- regression bag-of-words classifier (Spanish or English) trained with SGD and NLLLoss.
--   nnrepl scripts/tutorials/nlp/deep_learning_tutorial.lua [--epochs N]   (default 100)
-- Differences: dicts print in insertion order through pyrepr.lua; --epochs for a short run.
local argparse = require "argparse"
local R = require "pyrepr"
local parser = argparse.ArgumentParser({ description = "Deep Learning with PyTorch (NLP tutorial)" })
parser:add_argument("--epochs", { type = "int", default = 100, help = "passes over the training data" })
local args = parser:parse_args(arg)

torch.manual_seed(1)

local lin = nn.Linear(5, 3)
local data = torch.randn(2, 5)
print(lin(data))

data = torch.randn(2, 2)
print(data)
print(F.relu(data))

data = torch.randn(5)
print(data)
print(F.softmax(data, { dim = 0 }))
print(F.softmax(data, { dim = 0 }):sum())
print(F.log_softmax(data, { dim = 0 }))

-- Logistic regression bag-of-words classifier
data = { { ("me gusta comer en la cafeteria"):split(), "SPANISH" },
         { ("Give it to me"):split(), "ENGLISH" },
         { ("No creo que sea una buena idea"):split(), "SPANISH" },
         { ("No it is not a good idea to get lost at sea"):split(), "ENGLISH" } }

local test_data = { { ("Yo creo que si"):split(), "SPANISH" },
                    { ("it is lost on me"):split(), "ENGLISH" } }

local word_to_ix, words = {}, {}
for _, set in ipairs({ data, test_data }) do
  for _, pair in ipairs(set) do
    for _, word in ipairs(pair[1]) do
      if word_to_ix[word] == nil then
        words[#words + 1] = word
        word_to_ix[word] = #words - 1
      end
    end
  end
end
print(R.dict(words, word_to_ix))

local VOCAB_SIZE = #words
local NUM_LABELS = 2

local BoWClassifier = nn.Module:extend("BoWClassifier")

function BoWClassifier:__init(num_labels, vocab_size)
  self.linear = nn.Linear(vocab_size, num_labels)
end

function BoWClassifier:forward(bow_vec)
  return F.log_softmax(self.linear(bow_vec), { dim = 1 })
end

local function make_bow_vector(sentence, word_to_ix)
  local vec = torch.zeros(#words)
  for _, word in ipairs(sentence) do
    local i = word_to_ix[word]
    vec[i] = vec[i] + 1
  end
  return vec:view(1, -1)
end

local function make_target(label, label_to_ix)
  return torch.LongTensor({ label_to_ix[label] })
end

local model = BoWClassifier(NUM_LABELS, VOCAB_SIZE)

for _, param in ipairs(model:parameters()) do
  print(param)
end

do
  local _ <close> = torch.no_grad()
  local sample = data[1]
  local bow_vector = make_bow_vector(sample[1], word_to_ix)
  local log_probs = model(bow_vector)
  print(log_probs)
end

local label_to_ix = { SPANISH = 0, ENGLISH = 1 }

do
  local _ <close> = torch.no_grad()
  for _, pair in ipairs(test_data) do
    local bow_vec = make_bow_vector(pair[1], word_to_ix)
    local log_probs = model(bow_vec)
    print(log_probs)
  end
end

print(model:parameters()[1][":, " .. word_to_ix["creo"]])

local loss_function = nn.NLLLoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.1 })

for epoch = 0, args.epochs - 1 do
  for _, pair in ipairs(data) do
    local instance, label = pair[1], pair[2]
    model:zero_grad()
    local bow_vec = make_bow_vector(instance, word_to_ix)
    local target = make_target(label, label_to_ix)
    local log_probs = model(bow_vec)
    local loss = loss_function(log_probs, target)
    loss:backward()
    optimizer:step()
  end
end

do
  local _ <close> = torch.no_grad()
  for _, pair in ipairs(test_data) do
    local bow_vec = make_bow_vector(pair[1], word_to_ix)
    local log_probs = model(bow_vec)
    print(log_probs)
  end
end

print(model:parameters()[1][":, " .. word_to_ix["creo"]])
