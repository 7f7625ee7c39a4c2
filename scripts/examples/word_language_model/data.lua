-- pytorch/examples word_language_model/data.py in Lua: a Dictionary of words and a Corpus that
-- turns train.txt, valid.txt and test.txt into int64 tensors of word ids, each line ending
-- with the word <eos>. Words are split on white space, as Python's str.split().
-- Difference: idx2word is a Lua list, so the word of id i is idx2word[i + 1].
local M = {}

local Dictionary = {}
Dictionary.__index = Dictionary
Dictionary.__len = function(self) return #self.idx2word end

function Dictionary.new()
  return setmetatable({ word2idx = {}, idx2word = {} }, Dictionary)
end

function Dictionary:add_word(word)
  if self.word2idx[word] == nil then
    self.idx2word[#self.idx2word + 1] = word
    self.word2idx[word] = #self.idx2word - 1
  end
  return self.word2idx[word]
end

M.Dictionary = setmetatable(Dictionary, { __call = function() return Dictionary.new() end })

local function words_of(line)
  local words = {}
  for w in line:gmatch("%S+") do words[#words + 1] = w end
  words[#words + 1] = "<eos>"
  return words
end

local Corpus = {}
Corpus.__index = Corpus

function Corpus.new(path)
  local self = setmetatable({ dictionary = Dictionary.new() }, Corpus)
  self.train = self:tokenize(path .. "/train.txt")
  self.valid = self:tokenize(path .. "/valid.txt")
  self.test = self:tokenize(path .. "/test.txt")
  return self
end

-- Tokenizes a text file.
function Corpus:tokenize(path)
  local f = io.open(path, "r")
  if not f then
    error(string.format("data.lua: %s does not exist: --data must name a folder holding train.txt, valid.txt " ..
      "and test.txt (nothing is downloaded)", path), 0)
  end
  f:close()
  -- Add words to the dictionary
  for line in io.lines(path) do
    for _, word in ipairs(words_of(line)) do self.dictionary:add_word(word) end
  end
  -- Tokenize file content
  local ids = {}
  for line in io.lines(path) do
    for _, word in ipairs(words_of(line)) do ids[#ids + 1] = self.dictionary.word2idx[word] end
  end
  return torch.tensor(ids, { dtype = torch.int64 })
end

M.Corpus = setmetatable(Corpus, { __call = function(_, path) return Corpus.new(path) end })

return M
