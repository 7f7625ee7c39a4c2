-- pytorch/tutorials beginner_source/chatbot_tutorial.py ("Chatbot Tutorial") in Lua: query /
-- response pairs from the Cornell Movie-Dialogs Corpus train a bidirectional GRU encoder and a
-- Luong attention decoder (model.lua) with teacher forcing, masked NLL loss, gradient clipping
-- and Adam; a greedy search decoder then answers sentences.
--
--   cd folder-holding-data && nnrepl path/to/scripts/tutorials/chatbot_tutorial/main.lua [--chat]
--   N_ITERATION=20 HIDDEN_SIZE=16 BATCH_SIZE=8 nnrepl .../main.lua     (a short run)
--
-- Differences from the original:
-- - Nothing is downloaded: the corpus's "data/cornell movie-dialogs corpus/movie_lines.txt" and
--   "movie_conversations.txt" (ISO-8859-1, " +++$+++ "-separated fields) must be under the
--   current folder; without them the script stops with "cannot open data/cornell movie-dialogs
--   corpus/movie_lines.txt", as Python's open would. printLines prints each line as Python
--   prints a bytes object (b'...').
-- - unicodeToAscii uses nnrepl's `unicodedata` (its NFD decomposes Latin letters); lowercasing
--   is ASCII after the accents are stripped, which gives the same words since every other
--   character becomes a space. re.sub is Python's (nnrepl's `re`).
-- - random.choice is Python's own algorithm (nnrepl's `random`), unseeded as in the tutorial.
-- - lengths go to the CPU for packing, as pack_padded_sequence requires (the current tutorial
--   does the same); the decoders make their tensors on the input's device.
-- - The loop that moves the optimizers' state with .cuda() moves it to `device`, so a
--   checkpoint also resumes on a machine without a GPU.
-- - New, from the environment (the tutorial's values are the defaults): N_ITERATION (4000),
--   PRINT_EVERY (1), SAVE_EVERY (500), HIDDEN_SIZE (500), BATCH_SIZE (64), and LOAD_FILENAME (a
--   checkpoint to start from; the tutorial's loadFilename, None by default).
-- - --chat runs evaluateInput on stdin (the tutorial leaves that line commented out); "q" or
--   "quit", or the end of the input, stops it.
local unicodedata = require "unicodedata"
local re = require "re"
local random = require "random"
local model = require "model"
local EncoderRNN, LuongAttnDecoderRNN, GreedySearchDecoder = model.EncoderRNN, model.LuongAttnDecoderRNN, model.GreedySearchDecoder
local maskNLLLoss = model.maskNLLLoss

local chat = false
for _, a in ipairs({ ... }) do
  if a == "--chat" then chat = true else error("chatbot_tutorial: unknown argument " .. a .. " (only --chat)", 0) end
end
local function env(name, default) return tonumber(os.getenv(name) or "") or default end

local USE_CUDA = torch.cuda.is_available()
local device = torch.device(USE_CUDA and "cuda" or "cpu")

local corpus_name = "cornell movie-dialogs corpus"
local corpus = "data/" .. corpus_name

local function open(path, mode)
  local f, err = io.open(path, mode)
  if not f then error("cannot open " .. path .. " (" .. tostring(err) .. ")", 0) end
  return f
end

-- how Python prints a bytes object
local function bytes_repr(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  local named = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t", ["\\"] = "\\\\" }
  return "b" .. q .. s:gsub("[%z\1-\31\\'\127-\255]", function(c)
    if named[c] then return named[c] end
    if c == "'" then return q == "'" and "\\'" or "'" end
    return string.format("\\x%02x", c:byte())
  end) .. q
end

local function printLines(file, n)
  n = n or 10
  local datafile = open(file, "rb")
  local count = 0
  for line in datafile:lines("L") do
    count = count + 1
    if count > n then break end
    print(bytes_repr(line))
  end
  datafile:close()
end

printLines(corpus .. "/movie_lines.txt")

-- ISO-8859-1 bytes to UTF-8
local function latin1(s) return (s:gsub("[\128-\255]", function(c) return utf8.char(c:byte()) end)) end

-- each line of the file as a table of its fields
local function loadLines(fileName, fields)
  local lines = {}
  local f = open(fileName, "rb")
  for line in f:lines("L") do
    local values = latin1(line):split(" +++$+++ ")
    local lineObj = {}
    for i, field in ipairs(fields) do
      lineObj[field] = values[i]
    end
    lines[lineObj.lineID] = lineObj
  end
  f:close()
  return lines
end

-- the lines of each conversation of movie_conversations.txt
local function loadConversations(fileName, lines, fields)
  local conversations = {}
  local f = open(fileName, "rb")
  for line in f:lines("L") do
    local values = latin1(line):split(" +++$+++ ")
    local convObj = {}
    for i, field in ipairs(fields) do
      convObj[field] = values[i]
    end
    -- "['L598485', 'L598486', ...]" -> the ids
    convObj.lines = {}
    for lineId in convObj.utteranceIDs:gmatch("L[0-9]+") do
      convObj.lines[#convObj.lines + 1] = assert(lines[lineId], "KeyError: '" .. lineId .. "'")
    end
    conversations[#conversations + 1] = convObj
  end
  f:close()
  return conversations
end

-- (line, next line) pairs of each conversation where both have text
local function extractSentencePairs(conversations)
  local qa_pairs = {}
  for _, conversation in ipairs(conversations) do
    for i = 1, #conversation.lines - 1 do
      local inputLine = conversation.lines[i].text:strip()
      local targetLine = conversation.lines[i + 1].text:strip()
      if inputLine ~= "" and targetLine ~= "" then
        qa_pairs[#qa_pairs + 1] = { inputLine, targetLine }
      end
    end
  end
  return qa_pairs
end

local datafile = corpus .. "/formatted_movie_lines.txt"

local delimiter = "\t"

local lines = {}
local conversations = {}
local MOVIE_LINES_FIELDS = { "lineID", "characterID", "movieID", "character", "text" }
local MOVIE_CONVERSATIONS_FIELDS = { "character1ID", "character2ID", "movieID", "utteranceIDs" }

print("\nProcessing corpus...")
lines = loadLines(corpus .. "/movie_lines.txt", MOVIE_LINES_FIELDS)
print("\nLoading conversations...")
conversations = loadConversations(corpus .. "/movie_conversations.txt", lines, MOVIE_CONVERSATIONS_FIELDS)

-- csv.writer's minimal quoting: a field holding the delimiter, a quote or a line break is quoted
local function csv_field(s)
  if s:find('[\t"\r\n]') then return '"' .. s:gsub('"', '""') .. '"' end
  return s
end

print("\nWriting newly formatted file...")
local outputfile = open(datafile, "wb")
for _, pair in ipairs(extractSentencePairs(conversations)) do
  outputfile:write(csv_field(pair[1]), delimiter, csv_field(pair[2]), "\n")
end
outputfile:close()

print("\nSample lines from file:")
printLines(datafile)

local PAD_token, SOS_token, EOS_token = model.PAD_token, model.SOS_token, model.EOS_token

local Voc = {}
Voc.__index = Voc

function Voc.new(name)
  local self = setmetatable({}, Voc)
  self.name = name
  self.trimmed = false
  self.word2index = {}
  self.word2count = {}
  self.index2word = { [PAD_token] = "PAD", [SOS_token] = "SOS", [EOS_token] = "EOS" }
  self.num_words = 3 -- SOS, EOS, PAD
  return self
end

function Voc:addSentence(sentence)
  for _, word in ipairs(sentence:split(" ")) do
    self:addWord(word)
  end
end

function Voc:addWord(word)
  if self.word2index[word] == nil then
    self.word2index[word] = self.num_words
    self.word2count[word] = 1
    self.index2word[self.num_words] = word
    self.num_words = self.num_words + 1
  else
    self.word2count[word] = self.word2count[word] + 1
  end
end

-- drop the words seen fewer than min_count times
function Voc:trim(min_count)
  if self.trimmed then return end
  self.trimmed = true

  local keep_words = {}
  for i = 3, self.num_words - 1 do -- word2count's order: the words' first appearance
    local k = self.index2word[i]
    if self.word2count[k] >= min_count then keep_words[#keep_words + 1] = k end
  end

  print(string.format("keep_words %d / %d = %.4f", #keep_words, self.num_words - 3, #keep_words / (self.num_words - 3)))

  self.word2index = {}
  self.word2count = {}
  self.index2word = { [PAD_token] = "PAD", [SOS_token] = "SOS", [EOS_token] = "EOS" }
  self.num_words = 3

  for _, word in ipairs(keep_words) do
    self:addWord(word)
  end
end

local MAX_LENGTH = 10 -- the longest sentence kept

local function unicodeToAscii(s)
  local out = {}
  for _, cp in utf8.codes(unicodedata.normalize("NFD", s)) do
    local c = utf8.char(cp)
    if unicodedata.category(c) ~= "Mn" then out[#out + 1] = c end
  end
  return table.concat(out)
end

-- lowercase, trim, and turn everything but letters and .!? into spaces
local function normalizeString(s)
  s = unicodeToAscii(s:strip()):lower()
  s = re.sub("([.!?])", " \\1", s)
  s = re.sub("[^a-zA-Z.!?]+", " ", s)
  s = re.sub("\\s+", " ", s):strip()
  return s
end

-- the query/response pairs, normalized, and an empty Voc
local function readVocs(datafile, corpus_name)
  print("Reading lines...")
  local f = open(datafile, "rb")
  local text = f:read("a"):strip()
  f:close()
  local pairs_ = {}
  for _, l in ipairs(text:split("\n")) do
    local pair = {}
    for _, s in ipairs(l:split("\t")) do pair[#pair + 1] = normalizeString(s) end
    pairs_[#pairs_ + 1] = pair
  end
  local voc = Voc.new(corpus_name)
  return voc, pairs_
end

-- both sentences shorter than MAX_LENGTH words (the EOS token needs the last place)
local function filterPair(p)
  return #p[1]:split(" ") < MAX_LENGTH and #p[2]:split(" ") < MAX_LENGTH
end

local function filterPairs(pairs_)
  local out = {}
  for _, pair in ipairs(pairs_) do
    if filterPair(pair) then out[#out + 1] = pair end
  end
  return out
end

local function loadPrepareData(corpus, corpus_name, datafile, save_dir)
  print("Start preparing training data ...")
  local voc, pairs_ = readVocs(datafile, corpus_name)
  print(string.format("Read %d sentence pairs", #pairs_))
  pairs_ = filterPairs(pairs_)
  print(string.format("Trimmed to %d sentence pairs", #pairs_))
  print("Counting words...")
  for _, pair in ipairs(pairs_) do
    voc:addSentence(pair[1])
    voc:addSentence(pair[2])
  end
  print("Counted words: " .. voc.num_words)
  return voc, pairs_
end

local function list_repr(pair) return "['" .. table.concat(pair, "', '") .. "']" end

local save_dir = "data/save"
local voc, pairs = loadPrepareData(corpus, corpus_name, datafile, save_dir)
print("\npairs:")
for i = 1, math.min(10, #pairs) do
  print(list_repr(pairs[i]))
end

local MIN_COUNT = 3 -- words seen fewer times are trimmed

local function trimRareWords(voc, pairs_, MIN_COUNT)
  voc:trim(MIN_COUNT)
  -- keep the pairs whose words all remain
  local keep_pairs = {}
  for _, pair in ipairs(pairs_) do
    local keep = true
    for _, sentence in ipairs(pair) do
      for _, word in ipairs(sentence:split(" ")) do
        if voc.word2index[word] == nil then keep = false; break end
      end
    end
    if keep then keep_pairs[#keep_pairs + 1] = pair end
  end

  print(string.format("Trimmed from %d pairs to %d, %.4f of total", #pairs_, #keep_pairs, #keep_pairs / #pairs_))
  return keep_pairs
end

pairs = trimRareWords(voc, pairs, MIN_COUNT)

local function indexesFromSentence(voc, sentence)
  local out = {}
  for _, word in ipairs(sentence:split(" ")) do
    local i = voc.word2index[word]
    if i == nil then error({ KeyError = word }) end
    out[#out + 1] = i
  end
  out[#out + 1] = EOS_token
  return out
end

-- itertools.zip_longest(*l): the lists transposed, short ones filled
local function zeroPadding(l, fillvalue)
  fillvalue = fillvalue or PAD_token
  local longest = 0
  for _, seq in ipairs(l) do longest = math.max(longest, #seq) end
  local out = {}
  for t = 1, longest do
    out[t] = {}
    for b, seq in ipairs(l) do out[t][b] = seq[t] or fillvalue end
  end
  return out
end

local function binaryMatrix(l, value)
  local m = {}
  for i, seq in ipairs(l) do
    m[i] = {}
    for _, token in ipairs(seq) do
      m[i][#m[i] + 1] = token == PAD_token and 0 or 1
    end
  end
  return m
end

-- the padded (max_length, batch) input and the lengths
local function inputVar(l, voc)
  local indexes_batch, lens = {}, {}
  for i, sentence in ipairs(l) do
    indexes_batch[i] = indexesFromSentence(voc, sentence)
    lens[i] = #indexes_batch[i]
  end
  local lengths = torch.tensor(lens)
  local padList = zeroPadding(indexes_batch)
  local padVar = torch.LongTensor(padList)
  return padVar, lengths
end

-- the padded target, its padding mask and the longest target's length
local function outputVar(l, voc)
  local indexes_batch, max_target_len = {}, 0
  for i, sentence in ipairs(l) do
    indexes_batch[i] = indexesFromSentence(voc, sentence)
    max_target_len = math.max(max_target_len, #indexes_batch[i])
  end
  local padList = zeroPadding(indexes_batch)
  local mask = binaryMatrix(padList)
  mask = torch.BoolTensor(mask)
  local padVar = torch.LongTensor(padList)
  return padVar, mask, max_target_len
end

local function batch2TrainData(voc, pair_batch)
  -- longest input first (a stable sort, as Python's list.sort)
  for i, pair in ipairs(pair_batch) do pair.pos = i end
  table.sort(pair_batch, function(a, b)
    local la, lb = #a[1]:split(" "), #b[1]:split(" ")
    if la ~= lb then return la > lb end
    return a.pos < b.pos
  end)
  local input_batch, output_batch = {}, {}
  for _, pair in ipairs(pair_batch) do
    input_batch[#input_batch + 1] = pair[1]
    output_batch[#output_batch + 1] = pair[2]
  end
  local inp, lengths = inputVar(input_batch, voc)
  local output, mask, max_target_len = outputVar(output_batch, voc)
  return { inp, lengths, output, mask, max_target_len }
end

local function random_pairs(n)
  local out = {}
  for i = 1, n do
    local p = random.choice(pairs)
    out[i] = { p[1], p[2] }
  end
  return out
end

-- a small batch to look at
local small_batch_size = 5
local batches = batch2TrainData(voc, random_pairs(small_batch_size))
local input_variable, lengths, target_variable, mask, max_target_len = table.unpack(batches)

print("input_variable: " .. tostring(input_variable))
print("lengths: " .. tostring(lengths))
print("target_variable: " .. tostring(target_variable))
print("mask: " .. tostring(mask))
print("max_target_len: " .. tostring(max_target_len))

local teacher_forcing_ratio -- set with the training configuration below

-- one training iteration on one batch
local function train(input_variable, lengths, target_variable, mask, max_target_len, encoder, decoder, embedding,
                     encoder_optimizer, decoder_optimizer, batch_size, clip, max_length)
  encoder_optimizer:zero_grad()
  decoder_optimizer:zero_grad()

  input_variable = input_variable:to(device)
  target_variable = target_variable:to(device)
  mask = mask:to(device)
  lengths = lengths:to("cpu") -- packing wants the lengths on the CPU

  local loss = 0
  local print_losses = {}
  local n_totals = 0

  local encoder_outputs, encoder_hidden = encoder(input_variable, lengths)

  -- SOS for each sentence
  local sos = {}
  for i = 1, batch_size do sos[i] = SOS_token end
  local decoder_input = torch.LongTensor({ sos })
  decoder_input = decoder_input:to(device)

  -- the decoder starts from the encoder's final hidden state
  local decoder_hidden = encoder_hidden[":" .. decoder.n_layers]

  local use_teacher_forcing = random.random() < teacher_forcing_ratio

  for t = 0, max_target_len - 1 do
    local decoder_output
    decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
    if use_teacher_forcing then
      -- the next input is the current target
      decoder_input = target_variable[t]:view(1, -1)
    else
      -- the next input is the decoder's own guess
      local _, topi = decoder_output:topk(1)
      decoder_input = topi:view(1, -1)
    end
    local mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
    loss = loss + mask_loss
    print_losses[#print_losses + 1] = mask_loss:item() * nTotal
    n_totals = n_totals + nTotal
  end

  loss:backward()

  -- gradients clipped in place
  nn.utils.clip_grad_norm_(encoder:parameters(), clip)
  nn.utils.clip_grad_norm_(decoder:parameters(), clip)

  encoder_optimizer:step()
  decoder_optimizer:step()

  local sum = 0
  for _, v in ipairs(print_losses) do sum = sum + v end
  return sum / n_totals
end

local hidden_size, checkpoint

local function trainIters(model_name, voc, pairs, encoder, decoder, encoder_optimizer, decoder_optimizer, embedding,
                          encoder_n_layers, decoder_n_layers, save_dir, n_iteration, batch_size, print_every, save_every,
                          clip, corpus_name, loadFilename)
  local training_batches = {}
  for i = 1, n_iteration do
    training_batches[i] = batch2TrainData(voc, random_pairs(batch_size))
  end

  print("Initializing ...")
  local start_iteration = 1
  local print_loss = 0
  if loadFilename then
    start_iteration = checkpoint.iteration + 1
  end

  print("Training...")
  for iteration = start_iteration, n_iteration do
    local training_batch = training_batches[iteration]
    local input_variable, lengths, target_variable, mask, max_target_len = table.unpack(training_batch)

    local loss = train(input_variable, lengths, target_variable, mask, max_target_len, encoder,
      decoder, embedding, encoder_optimizer, decoder_optimizer, batch_size, clip)
    print_loss = print_loss + loss

    if iteration % print_every == 0 then
      local print_loss_avg = print_loss / print_every
      print(string.format("Iteration: %d; Percent complete: %.1f%%; Average loss: %.4f", iteration,
        iteration / n_iteration * 100, print_loss_avg))
      print_loss = 0
    end

    if iteration % save_every == 0 then
      local directory = string.format("%s/%s/%s/%d-%d_%d", save_dir, model_name, corpus_name, encoder_n_layers,
        decoder_n_layers, hidden_size)
      os.execute("mkdir -p '" .. directory .. "'")
      torch.save({
        iteration = iteration,
        en = encoder:state_dict(),
        de = decoder:state_dict(),
        en_opt = encoder_optimizer:state_dict(),
        de_opt = decoder_optimizer:state_dict(),
        loss = loss,
        voc_dict = { name = voc.name, trimmed = voc.trimmed, word2index = voc.word2index,
          word2count = voc.word2count, index2word = voc.index2word, num_words = voc.num_words },
        embedding = embedding:state_dict(),
      }, string.format("%s/%d_checkpoint.tar", directory, iteration))
    end
  end
end

-- a sentence's answer as words
local function evaluate(encoder, decoder, searcher, voc, sentence, max_length)
  max_length = max_length or MAX_LENGTH
  local indexes_batch = { indexesFromSentence(voc, sentence) }
  local lengths = torch.tensor({ #indexes_batch[1] })
  -- (length, 1), as the models expect
  local input_batch = torch.LongTensor(indexes_batch):transpose(0, 1)
  input_batch = input_batch:to(device)
  lengths = lengths:to("cpu")
  local tokens = searcher(input_batch, lengths, max_length)
  local decoded_words = {}
  for i = 0, tokens:size(0) - 1 do
    decoded_words[#decoded_words + 1] = voc.index2word[tokens[i]:item()]
  end
  return decoded_words
end

local function evaluateInput(encoder, decoder, searcher, voc)
  while true do
    io.write("> ")
    io.flush()
    local input_sentence = io.read("l")
    if input_sentence == nil or input_sentence == "q" or input_sentence == "quit" then break end
    input_sentence = normalizeString(input_sentence)
    local ok, output_words = pcall(evaluate, encoder, decoder, searcher, voc, input_sentence)
    if ok then
      local shown = {}
      for _, x in ipairs(output_words) do
        if not (x == "EOS" or x == "PAD") then shown[#shown + 1] = x end
      end
      print("Bot: " .. table.concat(shown, " "))
    elseif type(output_words) == "table" and output_words.KeyError then
      print("Error: Encountered unknown word.")
    else
      error(output_words, 0)
    end
  end
end

-- the models
local model_name = "cb_model"
local attn_model = "dot"
-- attn_model = "general"
-- attn_model = "concat"
hidden_size = env("HIDDEN_SIZE", 500)
local encoder_n_layers = 2
local decoder_n_layers = 2
local dropout = 0.1
local batch_size = env("BATCH_SIZE", 64)

-- a checkpoint to start from, or nil to start from scratch
local loadFilename = os.getenv("LOAD_FILENAME")
if loadFilename == "" then loadFilename = nil end

local encoder_sd, decoder_sd, encoder_optimizer_sd, decoder_optimizer_sd, embedding_sd
if loadFilename then
  checkpoint = torch.load(loadFilename)
  encoder_sd = checkpoint.en
  decoder_sd = checkpoint.de
  encoder_optimizer_sd = checkpoint.en_opt
  decoder_optimizer_sd = checkpoint.de_opt
  embedding_sd = checkpoint.embedding
  for k, v in next, checkpoint.voc_dict do voc[k] = v end
end

print("Building encoder and decoder ...")
local embedding = nn.Embedding(voc.num_words, hidden_size)
if loadFilename then
  embedding:load_state_dict(embedding_sd)
end
local encoder = EncoderRNN(hidden_size, embedding, encoder_n_layers, dropout)
local decoder = LuongAttnDecoderRNN(attn_model, embedding, hidden_size, voc.num_words, decoder_n_layers, dropout)
if loadFilename then
  encoder:load_state_dict(encoder_sd)
  decoder:load_state_dict(decoder_sd)
end
encoder = encoder:to(device)
decoder = decoder:to(device)
print("Models built and ready to go!")

-- training
local clip = 50.0
teacher_forcing_ratio = 1.0
local learning_rate = 0.0001
local decoder_learning_ratio = 5.0
local n_iteration = env("N_ITERATION", 4000)
local print_every = env("PRINT_EVERY", 1)
local save_every = env("SAVE_EVERY", 500)

encoder:train()
decoder:train()

print("Building optimizers ...")
local encoder_optimizer = optim.Adam(encoder:parameters(), { lr = learning_rate })
local decoder_optimizer = optim.Adam(decoder:parameters(), { lr = learning_rate * decoder_learning_ratio })
if loadFilename then
  encoder_optimizer:load_state_dict(encoder_optimizer_sd)
  decoder_optimizer:load_state_dict(decoder_optimizer_sd)
end

-- the optimizers' state on the models' device
for _, opt in ipairs({ encoder_optimizer, decoder_optimizer }) do
  for _, state in next, opt.state do
    for k, v in next, state do
      if torch.is_tensor(v) then state[k] = v:to(device) end
    end
  end
end

print("Starting Training!")
trainIters(model_name, voc, pairs, encoder, decoder, encoder_optimizer, decoder_optimizer,
  embedding, encoder_n_layers, decoder_n_layers, save_dir, n_iteration, batch_size,
  print_every, save_every, clip, corpus_name, loadFilename)

-- evaluation: dropout off
encoder:eval()
decoder:eval()

local searcher = GreedySearchDecoder(encoder, decoder)

if chat then evaluateInput(encoder, decoder, searcher, voc) end
