-- pytorch/tutorials intermediate_source/seq2seq_translation_tutorial.py ("NLP From Scratch:
-- Translation with a Sequence to Sequence Network and Attention") in Lua: a GRU encoder and an
-- attention decoder (model.lua) learn French -> English on the short "i am / he is ..." pairs,
-- in batches of 32 with teacher forcing and Adam, then translate a few sentences.
--
--   cd folder-holding-data && nnrepl path/to/scripts/tutorials/seq2seq_translation/main.lua
--   N_EPOCHS=4 PRINT_EVERY=2 nnrepl .../main.lua     (a short run)
--
-- Differences from the original:
-- - Nothing is downloaded: data/eng-fra.txt (from the tutorial's data.zip: UTF-8, one
--   "English<TAB>French" pair a line) must be under the current folder; without it the script
--   stops with "cannot open data/eng-fra.txt", as Python's open would.
-- - unicodeToAscii uses nnrepl's `unicodedata` module, whose NFD decomposes Latin letters only
--   (U+00C0-U+024F, U+1E00-U+1EFF), which covers French; lowercasing is ASCII (Lua's
--   string.lower) after the accents are stripped, which gives the same words, since the
--   remaining non-ASCII letters become spaces anyway. re.sub is Python's (nnrepl's `re`).
-- - The RandomSampler follows torch.manual_seed as in PyTorch, but draws other numbers than
--   PyTorch's (random.choice is Python's own, from nnrepl's `random` module).
-- - The decoders make their SOS input on the encoder outputs' device (Python: the global device).
-- - matplotlib is not available: the loss curve and the attention matrices are not drawn.
-- - N_EPOCHS and PRINT_EVERY (environment) are new: the epochs and how often a loss line is
--   printed (defaults 80 and 5, the tutorial's).
local unicodedata = require "unicodedata"
local re = require "re"
local model = require "model"
local EncoderRNN, AttnDecoderRNN = model.EncoderRNN, model.AttnDecoderRNN
local TensorDataset, DataLoader, RandomSampler = torch.utils.data.TensorDataset, torch.utils.data.DataLoader, torch.utils.data.RandomSampler

local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

local SOS_token, EOS_token, MAX_LENGTH = model.SOS_token, model.EOS_token, model.MAX_LENGTH

local random = require "random"

local Lang = {}
Lang.__index = Lang

function Lang.new(name)
  local self = setmetatable({}, Lang)
  self.name = name
  self.word2index = {}
  self.word2count = {}
  self.index2word = { [0] = "SOS", [1] = "EOS" }
  self.n_words = 2 -- Count SOS and EOS
  return self
end

function Lang:addSentence(sentence)
  for _, word in ipairs(sentence:split(" ")) do
    self:addWord(word)
  end
end

function Lang:addWord(word)
  if self.word2index[word] == nil then
    self.word2index[word] = self.n_words
    self.word2count[word] = 1
    self.index2word[self.n_words] = word
    self.n_words = self.n_words + 1
  else
    self.word2count[word] = self.word2count[word] + 1
  end
end

local function unicodeToAscii(s)
  local out = {}
  for _, cp in utf8.codes(unicodedata.normalize("NFD", s)) do
    local c = utf8.char(cp)
    if unicodedata.category(c) ~= "Mn" then out[#out + 1] = c end
  end
  return table.concat(out)
end

-- Lowercase, trim, and remove non-letter characters
local function normalizeString(s)
  s = unicodeToAscii(s:strip()):lower()
  s = re.sub("([.!?])", " \\1", s)
  s = re.sub("[^a-zA-Z!?]+", " ", s)
  return s:strip()
end

local function readLangs(lang1, lang2, reverse)
  print("Reading lines...")

  local path = string.format("data/%s-%s.txt", lang1, lang2)
  local f, err = io.open(path, "rb")
  if not f then error(string.format("cannot open %s (%s): download https://download.pytorch.org/tutorial/data.zip and extract it to the current folder", path, err), 0) end
  local lines = f:read("a"):strip():split("\n")
  f:close()

  local pairs_ = {}
  for _, l in ipairs(lines) do
    local pair = {}
    for _, s in ipairs(l:split("\t")) do pair[#pair + 1] = normalizeString(s) end
    pairs_[#pairs_ + 1] = pair
  end

  local input_lang, output_lang
  if reverse then
    for i, p in ipairs(pairs_) do
      local r = {}
      for k = #p, 1, -1 do r[#r + 1] = p[k] end
      pairs_[i] = r
    end
    input_lang = Lang.new(lang2)
    output_lang = Lang.new(lang1)
  else
    input_lang = Lang.new(lang1)
    output_lang = Lang.new(lang2)
  end

  return input_lang, output_lang, pairs_
end

local eng_prefixes = {
  "i am ", "i m ",
  "he is", "he s ",
  "she is", "she s ",
  "you are", "you re ",
  "we are", "we re ",
  "they are", "they re ",
}

local function filterPair(p)
  return #p[1]:split(" ") < MAX_LENGTH and #p[2]:split(" ") < MAX_LENGTH and p[2]:startswith(eng_prefixes)
end

local function filterPairs(pairs_)
  local out = {}
  for _, pair in ipairs(pairs_) do
    if filterPair(pair) then out[#out + 1] = pair end
  end
  return out
end

local function prepareData(lang1, lang2, reverse)
  local input_lang, output_lang, pairs_ = readLangs(lang1, lang2, reverse)
  print(string.format("Read %s sentence pairs", #pairs_))
  pairs_ = filterPairs(pairs_)
  print(string.format("Trimmed to %s sentence pairs", #pairs_))
  print("Counting words...")
  for _, pair in ipairs(pairs_) do
    input_lang:addSentence(pair[1])
    output_lang:addSentence(pair[2])
  end
  print("Counted words:")
  print(input_lang.name .. " " .. input_lang.n_words)
  print(output_lang.name .. " " .. output_lang.n_words)
  return input_lang, output_lang, pairs_
end

-- Python's repr of a list of strings
local function list_repr(l) return "['" .. table.concat(l, "', '") .. "']" end

local input_lang, output_lang, pairs = prepareData("eng", "fra", true)
print(list_repr(random.choice(pairs)))

-- Preparing Training Data

local function indexesFromSentence(lang, sentence)
  local out = {}
  for _, word in ipairs(sentence:split(" ")) do
    local i = lang.word2index[word]
    if i == nil then error(string.format("KeyError: '%s' is not a word of %s", word, lang.name), 2) end
    out[#out + 1] = i
  end
  return out
end

local function tensorFromSentence(lang, sentence)
  local indexes = indexesFromSentence(lang, sentence)
  indexes[#indexes + 1] = EOS_token
  return torch.tensor(indexes, { dtype = torch.long, device = device }):view(1, -1)
end

local function tensorsFromPair(pair)
  local input_tensor = tensorFromSentence(input_lang, pair[1])
  local target_tensor = tensorFromSentence(output_lang, pair[2])
  return input_tensor, target_tensor
end

local function get_dataloader(batch_size)
  local input_lang, output_lang, pairs = prepareData("eng", "fra", true)

  local n = #pairs
  local input_ids = torch.zeros(n, MAX_LENGTH, { dtype = torch.int32 })
  local target_ids = torch.zeros(n, MAX_LENGTH, { dtype = torch.int32 })

  for idx, pair in ipairs(pairs) do
    local inp_ids = indexesFromSentence(input_lang, pair[1])
    local tgt_ids = indexesFromSentence(output_lang, pair[2])
    inp_ids[#inp_ids + 1] = EOS_token
    tgt_ids[#tgt_ids + 1] = EOS_token
    input_ids[string.format("%d, :%d", idx - 1, #inp_ids)] = torch.tensor(inp_ids, { dtype = torch.int32 })
    target_ids[string.format("%d, :%d", idx - 1, #tgt_ids)] = torch.tensor(tgt_ids, { dtype = torch.int32 })
  end

  local train_data = TensorDataset(input_ids:long():to(device), target_ids:long():to(device))

  local train_sampler = RandomSampler(train_data)
  local train_dataloader = DataLoader(train_data, { sampler = train_sampler, batch_size = batch_size })
  return input_lang, output_lang, train_dataloader
end

-- Training the Model

local function train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
  local total_loss = 0
  for input_tensor, target_tensor in dataloader:iter() do
    encoder_optimizer:zero_grad()
    decoder_optimizer:zero_grad()

    local encoder_outputs, encoder_hidden = encoder(input_tensor)
    local decoder_outputs = decoder(encoder_outputs, encoder_hidden, target_tensor)

    local loss = criterion(decoder_outputs:view(-1, decoder_outputs:size(-1)), target_tensor:view(-1))
    loss:backward()

    encoder_optimizer:step()
    decoder_optimizer:step()

    total_loss = total_loss + loss:item()
  end

  return total_loss / #dataloader
end

local function asMinutes(s)
  local m = math.floor(s / 60)
  s = s - m * 60
  return string.format("%dm %ds", m, math.floor(s))
end

local function timeSince(since, percent)
  local now = time.time()
  local s = now - since
  local es = s / percent
  local rs = es - s
  return string.format("%s (- %s)", asMinutes(s), asMinutes(rs))
end

local function train(train_dataloader, encoder, decoder, n_epochs, learning_rate, print_every, plot_every)
  learning_rate, print_every, plot_every = learning_rate or 0.001, print_every or 100, plot_every or 100
  local start = time.time()
  local plot_losses = {}
  local print_loss_total = 0 -- Reset every print_every
  local plot_loss_total = 0 -- Reset every plot_every

  local encoder_optimizer = optim.Adam(encoder:parameters(), { lr = learning_rate })
  local decoder_optimizer = optim.Adam(decoder:parameters(), { lr = learning_rate })
  local criterion = nn.NLLLoss()

  for epoch = 1, n_epochs do
    local loss = train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
    print_loss_total = print_loss_total + loss
    plot_loss_total = plot_loss_total + loss

    if epoch % print_every == 0 then
      local print_loss_avg = print_loss_total / print_every
      print_loss_total = 0
      print(string.format("%s (%d %d%%) %.4f", timeSince(start, epoch / n_epochs), epoch, math.floor(epoch / n_epochs * 100), print_loss_avg))
    end

    if epoch % plot_every == 0 then
      local plot_loss_avg = plot_loss_total / plot_every
      plot_losses[#plot_losses + 1] = plot_loss_avg
      plot_loss_total = 0
    end
  end

  -- showPlot(plot_losses): matplotlib is not available
  return plot_losses
end

-- Evaluation

local function evaluate(encoder, decoder, sentence, input_lang, output_lang)
  local _ <close> = torch.no_grad()
  local input_tensor = tensorFromSentence(input_lang, sentence)

  local encoder_outputs, encoder_hidden = encoder(input_tensor)
  local decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

  local _, topi = decoder_outputs:topk(1)
  local decoded_ids = topi:squeeze()

  local decoded_words = {}
  for i = 0, decoded_ids:size(0) - 1 do
    local idx = decoded_ids[i]:item()
    if idx == EOS_token then
      decoded_words[#decoded_words + 1] = "<EOS>"
      break
    end
    decoded_words[#decoded_words + 1] = output_lang.index2word[idx]
  end
  return decoded_words, decoder_attn
end

local encoder, decoder

local function evaluateRandomly(encoder, decoder, n)
  for i = 1, n or 10 do
    local pair = random.choice(pairs)
    print("> " .. pair[1])
    print("= " .. pair[2])
    local output_words = evaluate(encoder, decoder, pair[1], input_lang, output_lang)
    local output_sentence = table.concat(output_words, " ")
    print("< " .. output_sentence)
    print("")
  end
end

-- Training and Evaluating

local hidden_size = 128
local batch_size = 32

local train_dataloader
input_lang, output_lang, train_dataloader = get_dataloader(batch_size)

encoder = EncoderRNN(input_lang.n_words, hidden_size):to(device)
decoder = AttnDecoderRNN(hidden_size, output_lang.n_words):to(device)

local n_epochs = tonumber(os.getenv("N_EPOCHS") or "80")
local print_every = tonumber(os.getenv("PRINT_EVERY") or "5")
train(train_dataloader, encoder, decoder, n_epochs, nil, print_every, print_every)

encoder:eval()
decoder:eval()
evaluateRandomly(encoder, decoder)

-- Visualizing Attention: showAttention's matplotlib figure is not drawn

local function evaluateAndShowAttention(input_sentence)
  local output_words, attentions = evaluate(encoder, decoder, input_sentence, input_lang, output_lang)
  print("input = " .. input_sentence)
  print("output = " .. table.concat(output_words, " "))
end

evaluateAndShowAttention("il n est pas aussi grand que son pere")

evaluateAndShowAttention("je suis trop fatigue pour conduire")

evaluateAndShowAttention("je suis desole si c est une question idiote")

evaluateAndShowAttention("je suis reellement fiere de vous")
