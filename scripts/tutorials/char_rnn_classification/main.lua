-- pytorch/tutorials intermediate_source/char_rnn_classification_tutorial.py ("NLP From Scratch:
-- Classifying Names with a Character-Level RNN") in Lua: a CharRNN (model.lua) learns the
-- language of a surname from its letters, trained in minibatches with SGD, then a confusion
-- matrix over the held-out names.
--
--   cd folder-holding-data && nnrepl path/to/scripts/tutorials/char_rnn_classification/main.lua
--   N_EPOCH=2 nnrepl .../main.lua     (fewer epochs than the tutorial's 27, for a quick run)
--
-- Differences from the original:
-- - Nothing is downloaded: data/names/[Language].txt (from the tutorial's data.zip, UTF-8, one
--   name per line) must be under the current folder; without them the script stops with
--   "no data/names/*.txt under the current folder".
-- - unicodeToAscii uses nnrepl's `unicodedata` module, whose NFD decomposes Latin letters only
--   (U+00C0-U+024F, U+1E00-U+1EFF); other accented letters are dropped instead of stripped.
-- - glob.glob lists the files sorted and the language list is sorted, where Python's order
--   (directory order, then a set's hash order) changes from one machine or run to the next.
-- - Python's random is nnrepl's `random` module: random.shuffle draws Python's numbers;
--   np.array_split is written out below.
-- - matplotlib is not available: the loss curve is not drawn, and evaluate prints the confusion
--   matrix's diagonal (the fraction of each language guessed right) instead of plotting it.
-- - N_EPOCH (environment) is new: the number of training epochs (default 27, the tutorial's).
local unicodedata = require "unicodedata"
local glob = require "glob"
local random = require "random"
local pyfloat = require("nn_util").pyfloat -- Python's repr of a float, for f"{x}"
local CharRNN = require "model"

local device = torch.device("cpu")
if torch.cuda.is_available() then
  device = torch.device("cuda")
end

torch.set_default_device(device)
print(string.format("Using device = %s", torch.get_default_device()))

-- Preparing the Data

-- "_" stands for any character outside the vocabulary
local allowed_characters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" .. " .,;'" .. "_"
local n_letters = #allowed_characters

local function unicodeToAscii(s)
  local out = {}
  for _, cp in utf8.codes(unicodedata.normalize("NFD", s)) do
    local c = utf8.char(cp)
    if unicodedata.category(c) ~= "Mn" and #c == 1 and allowed_characters:find(c, 1, true) then
      out[#out + 1] = c
    end
  end
  return table.concat(out)
end

print(string.format("converting 'Ślusàrski' to %s", unicodeToAscii("Ślusàrski")))

-- Turning Names into Tensors

-- 0-based, like str.find; a character outside the vocabulary is "_"
local function letterToIndex(letter)
  local i = #letter == 1 and allowed_characters:find(letter, 1, true)
  if not i then
    return allowed_characters:find("_", 1, true) - 1
  end
  return i - 1
end

local function letterToTensor(letter)
  local tensor = torch.zeros(1, n_letters)
  tensor[0][letterToIndex(letter)] = 1
  return tensor
end

-- a line's characters (code points, as Python's str) one-hot: <line_length x 1 x n_letters>
local function lineToTensor(line)
  local tensor = torch.zeros(utf8.len(line), 1, n_letters)
  local li = 0
  for _, cp in utf8.codes(line) do
    tensor[li][0][letterToIndex(utf8.char(cp))] = 1
    li = li + 1
  end
  return tensor
end

print(letterToTensor("J"))

print(lineToTensor("Jones"):size())

print(string.format("The letter 'a' becomes %s", lineToTensor("a")))
print(string.format("The name 'Ahn' becomes %s", lineToTensor("Ahn")))

local Dataset = torch.utils.data.Dataset

local NamesDataset = Dataset:extend("NamesDataset")

function NamesDataset:__init(data_dir)
  self.data_dir = data_dir
  self.load_time = os.time()
  local labels_set = {}

  self.data = {}
  self.data_tensors = {}
  self.labels = {}
  self.labels_tensors = {}

  local text_files = glob.glob(data_dir .. "/*.txt")
  for _, filename in ipairs(text_files) do
    local label = filename:match("([^/]*)$"):gsub("%.[^.]*$", "")
    labels_set[label] = true
    local f = assert(io.open(filename, "rb"))
    local text = f:read("a"):gsub("^%s+", ""):gsub("%s+$", "")
    f:close()
    for name in (text .. "\n"):gmatch("(.-)\n") do
      self.data[#self.data + 1] = name
      self.data_tensors[#self.data_tensors + 1] = lineToTensor(name)
      self.labels[#self.labels + 1] = label
    end
  end

  self.labels_uniq = {}
  for label in pairs(labels_set) do self.labels_uniq[#self.labels_uniq + 1] = label end
  table.sort(self.labels_uniq)
  local index = {}
  for i, label in ipairs(self.labels_uniq) do index[label] = i - 1 end
  for idx = 1, #self.labels do
    self.labels_tensors[idx] = torch.tensor({ index[self.labels[idx]] }, { dtype = torch.long })
  end
end

function NamesDataset:__len()
  return #self.data
end

function NamesDataset:__getitem(idx)
  return self.labels_tensors[idx + 1], self.data_tensors[idx + 1], self.labels[idx + 1], self.data[idx + 1]
end

if #glob.glob("data/names/*.txt") == 0 then
  error("no data/names/*.txt under the current folder: download https://download.pytorch.org/tutorial/data.zip elsewhere and extract it here", 0)
end
local alldata = NamesDataset("data/names")
print(string.format("loaded %d items of data", #alldata))
do
  local label_tensor, data_tensor, label, name = alldata:__getitem(0)
  print(string.format("example = (%s, %s, '%s', '%s')", label_tensor, data_tensor, label, name))
end

local split = torch.utils.data.random_split(alldata, { .85, .15 }, { generator = torch.Generator({ device = device }):manual_seed(2024) })
local train_set, test_set = split[1], split[2]

print(string.format("train examples = %d, validation examples = %d", #train_set, #test_set))

-- Creating the Network

local n_hidden = 128
local rnn = CharRNN(n_letters, n_hidden, #alldata.labels_uniq)
print(rnn)

local function label_from_output(output, output_labels)
  local top_n, top_i = output:topk(1)
  local label_i = top_i[0]:item()
  return output_labels[label_i + 1], label_i
end

local input = lineToTensor("Albert")
local output = rnn(input)
print(output)
print(string.format("('%s', %d)", label_from_output(output, alldata.labels_uniq)))

-- Training

-- np.array_split(list, n): n consecutive parts, the first #list % n one longer
local function array_split(list, n)
  if n <= 0 then error("array_split: number sections must be larger than 0.", 2) end
  local parts, at = {}, 1
  for k = 1, n do
    local size = #list // n + (k <= #list % n and 1 or 0)
    parts[k] = table.move(list, at, at + size - 1, 1, {})
    at = at + size
  end
  return parts
end

local function train(rnn, training_data, n_epoch, n_batch_size, report_every, learning_rate, criterion)
  n_epoch, n_batch_size, report_every = n_epoch or 10, n_batch_size or 64, report_every or 50
  learning_rate, criterion = learning_rate or 0.2, criterion or nn.NLLLoss()
  local current_loss = 0
  local all_losses = {}
  rnn:train()
  local optimizer = torch.optim.SGD(rnn:parameters(), { lr = learning_rate })

  local start = time.time()
  print(string.format("training on data set with n = %d", #training_data))

  for iter = 1, n_epoch do
    rnn:zero_grad()

    local batches = {}
    for i = 1, #training_data do batches[i] = i - 1 end
    random.shuffle(batches)
    batches = array_split(batches, #batches // n_batch_size)

    for idx, batch in ipairs(batches) do
      local batch_loss = 0
      for _, i in ipairs(batch) do
        local label_tensor, text_tensor, label, text = training_data:__getitem(i)
        local output = rnn:forward(text_tensor)
        local loss = criterion(output, label_tensor)
        batch_loss = batch_loss + loss
      end

      batch_loss:backward()
      nn.utils.clip_grad_norm_(rnn:parameters(), 3)
      optimizer:step()
      optimizer:zero_grad()

      current_loss = current_loss + batch_loss:item() / #batch
    end

    all_losses[#all_losses + 1] = current_loss / #batches
    if iter % report_every == 0 then
      print(string.format("%d (%.0f%%): \t average batch loss = %s", iter, iter / n_epoch * 100, pyfloat(all_losses[#all_losses])))
    end
    current_loss = 0
  end

  return all_losses
end

local n_epoch = tonumber(os.getenv("N_EPOCH") or "27")
local start = time.time()
local all_losses = train(rnn, train_set, n_epoch, nil, 5, 0.15)
local finish = time.time()
print(string.format("training took %ss", pyfloat(finish - start)))

-- Plotting the Results: matplotlib's loss curve is not drawn (all_losses holds it)

-- Evaluating the Results

local function evaluate(rnn, testing_data, classes)
  local confusion = torch.zeros(#classes, #classes)
  local class_index = {}
  for i, c in ipairs(classes) do class_index[c] = i - 1 end

  rnn:eval()
  do
    local _ <close> = torch.no_grad()
    for i = 0, #testing_data - 1 do
      local label_tensor, text_tensor, label, text = testing_data:__getitem(i)
      local output = rnn(text_tensor)
      local guess, guess_i = label_from_output(output, classes)
      local label_i = class_index[label]
      confusion[label_i][guess_i] = confusion[label_i][guess_i] + 1
    end
  end

  for i = 0, #classes - 1 do
    local denom = confusion[i]:sum()
    if denom > 0 then
      confusion[i] = confusion[i] / denom
    end
  end

  -- in place of matplotlib's matshow: each language's diagonal entry
  for i, c in ipairs(classes) do
    print(string.format("%s: %.2f", c, confusion[i - 1][i - 1]:item()))
  end
  return confusion
end

evaluate(rnn, test_set, alldata.labels_uniq)
