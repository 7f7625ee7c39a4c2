-- pytorch/tutorials intermediate_source/char_rnn_generation_tutorial.py ("NLP From Scratch:
-- Generating Names with a Character-Level RNN") in Lua: an RNN (model.lua) conditioned on a
-- language learns to spell names letter by letter (plain SGD written out), then samples names
-- from a language and a first letter.
--
--   cd folder-holding-data && nnrepl path/to/scripts/tutorials/char_rnn_generation/main.lua
--   N_ITERS=2000 PRINT_EVERY=500 nnrepl .../main.lua     (a short run)
--
-- Differences from the original:
-- - Nothing is downloaded: data/names/[Language].txt (from the tutorial's data.zip, UTF-8, one
--   name per line) must be under the current folder; without them the script stops with the
--   tutorial's own "Data not found" error.
-- - unicodeToAscii uses nnrepl's `unicodedata` module, whose NFD decomposes Latin letters only
--   (U+00C0-U+024F, U+1E00-U+1EFF); other accented letters are dropped instead of stripped.
-- - glob.glob lists the files sorted (Python: directory order), so the category order is fixed.
-- - Python's random is nnrepl's `random` module: random.randint draws Python's numbers.
-- - matplotlib is not available: the loss curve is not drawn (all_losses holds it).
-- - The model class takes n_categories when it is defined (`require("model")(n_categories)`),
--   where Python's reads the script's global.
-- - N_ITERS and PRINT_EVERY (environment) are new: the training iterations and how often a line
--   is printed (defaults 100000 and 5000, the tutorial's); the samples come from the categories
--   that exist (the tutorial's four when the full data set is there).
local unicodedata = require "unicodedata"
local glob = require "glob"
local random = require "random"

local all_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" .. " .,;'-"
local n_letters = #all_letters + 1 -- Plus EOS marker

local function findFiles(path) return glob.glob(path) end

local function unicodeToAscii(s)
  local out = {}
  for _, cp in utf8.codes(unicodedata.normalize("NFD", s)) do
    local c = utf8.char(cp)
    if unicodedata.category(c) ~= "Mn" and #c == 1 and all_letters:find(c, 1, true) then
      out[#out + 1] = c
    end
  end
  return table.concat(out)
end

local function readLines(filename)
  local f = assert(io.open(filename, "rb"))
  local text = f:read("a"):gsub("^%s+", ""):gsub("%s+$", "")
  f:close()
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = unicodeToAscii(line) end
  return lines
end

local category_lines = {}
local all_categories = {}
for _, filename in ipairs(findFiles("data/names/*.txt")) do
  local category = filename:match("([^/]*)$"):gsub("%.[^.]*$", "")
  all_categories[#all_categories + 1] = category
  category_lines[category] = readLines(filename)
end

local n_categories = #all_categories

if n_categories == 0 then
  error("Data not found. Make sure that you downloaded data from https://download.pytorch.org/tutorial/data.zip and extract it to the current directory.", 0)
end

print(string.format("# categories: %d [%s]", n_categories, "'" .. table.concat(all_categories, "', '") .. "'"))
print(unicodeToAscii("O'Néàl"))

-- Creating the Network

local RNN = require("model")(n_categories)

-- Preparing for Training


local function randomChoice(l)
  return l[random.randint(0, #l - 1) + 1]
end

local function randomTrainingPair()
  local category = randomChoice(all_categories)
  local line = randomChoice(category_lines[category])
  return category, line
end

local function categoryTensor(category)
  local li
  for i, c in ipairs(all_categories) do
    if c == category then li = i - 1 end
  end
  local tensor = torch.zeros(1, n_categories)
  tensor[0][li] = 1
  return tensor
end

local function letter_index(letter) -- str.find: 0-based, -1 when absent
  local i = all_letters:find(letter, 1, true)
  return i and i - 1 or -1
end

-- One-hot matrix of first to last letters (not including EOS) for input
local function inputTensor(line)
  local tensor = torch.zeros(#line, 1, n_letters)
  for li = 0, #line - 1 do
    local letter = line:sub(li + 1, li + 1)
    tensor[li][0][letter_index(letter)] = 1
  end
  return tensor
end

-- LongTensor of second letter to end (EOS) for target
local function targetTensor(line)
  local letter_indexes = {}
  for li = 1, #line - 1 do letter_indexes[#letter_indexes + 1] = letter_index(line:sub(li + 1, li + 1)) end
  letter_indexes[#letter_indexes + 1] = n_letters - 1 -- EOS
  return torch.LongTensor(letter_indexes)
end

local function randomTrainingExample()
  local category, line = randomTrainingPair()
  local category_tensor = categoryTensor(category)
  local input_line_tensor = inputTensor(line)
  local target_line_tensor = targetTensor(line)
  return category_tensor, input_line_tensor, target_line_tensor
end

-- Training the Network

local criterion = nn.NLLLoss()

local learning_rate = 0.0005

local rnn

local function train(category_tensor, input_line_tensor, target_line_tensor)
  target_line_tensor:unsqueeze_(-1)
  local hidden = rnn:initHidden()

  rnn:zero_grad()

  local loss = 0
  local output

  for i = 0, input_line_tensor:size(0) - 1 do
    output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
    local l = criterion(output, target_line_tensor[i])
    loss = loss + l
  end

  loss:backward()

  for _, p in ipairs(rnn:parameters()) do
    p.data:add_(p.grad.data, { alpha = -learning_rate })
  end

  return output, loss:item() / input_line_tensor:size(0)
end

local function timeSince(since)
  local now = time.time()
  local s = now - since
  local m = math.floor(s / 60)
  s = s - m * 60
  return string.format("%dm %ds", m, math.floor(s))
end

rnn = RNN(n_letters, 128, n_letters)

local n_iters = tonumber(os.getenv("N_ITERS") or "100000")
local print_every = tonumber(os.getenv("PRINT_EVERY") or "5000")
local plot_every = 500
local all_losses = {}
local total_loss = 0 -- Reset every plot_every iters

local start = time.time()

for iter = 1, n_iters do
  local output, loss = train(randomTrainingExample())
  total_loss = total_loss + loss

  if iter % print_every == 0 then
    print(string.format("%s (%d %d%%) %.4f", timeSince(start), iter, math.floor(iter / n_iters * 100), loss))
  end

  if iter % plot_every == 0 then
    all_losses[#all_losses + 1] = total_loss / plot_every
    total_loss = 0
  end
end

-- Plotting the Losses: matplotlib's curve is not drawn (all_losses holds it)

-- Sampling the Network

local max_length = 20

local function sample(category, start_letter)
  start_letter = start_letter or "A"
  local _ <close> = torch.no_grad()
  local category_tensor = categoryTensor(category)
  local input = inputTensor(start_letter)
  local hidden = rnn:initHidden()

  local output_name = start_letter

  for i = 1, max_length do
    local output
    output, hidden = rnn(category_tensor, input[0], hidden)
    local topv, topi = output:topk(1)
    topi = topi[0][0]:item()
    if topi == n_letters - 1 then
      break
    end
    local letter = all_letters:sub(topi + 1, topi + 1)
    output_name = output_name .. letter
    input = inputTensor(letter)
  end

  return output_name
end

local function samples(category, start_letters)
  start_letters = start_letters or "ABC"
  for start_letter in start_letters:gmatch(".") do
    print(sample(category, start_letter))
  end
end

for _, cs in ipairs({ { "Russian", "RUS" }, { "German", "GER" }, { "Spanish", "SPA" }, { "Chinese", "CHI" } }) do
  if category_lines[cs[1]] then samples(cs[1], cs[2]) end
end
