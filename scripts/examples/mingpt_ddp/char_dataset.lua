-- pytorch/examples distributed/minGPT-ddp/mingpt/char_dataset.py in Lua: a text file as a
-- character-level data set; sample i is the characters i .. i + block_size - 1 as token ids and
-- the same shifted by one (the next characters) as the targets.
--   local cd = require "char_dataset"   -- cd.CharDataset, cd.DataConfig
-- Difference from the original: the path must be a local file (fsspec would also open URLs;
-- nnrepl downloads nothing); a URL raises an error saying so.
local dataclass = require("dataclass").dataclass

local M = {}

M.DataConfig = dataclass("DataConfig", {
  { "path" },
  { "block_size" },
  { "train_split" },
  { "truncate", 1.0 },
})

local CharDataset = torch.utils.data.Dataset:extend("CharDataset")
M.CharDataset = CharDataset

local function read_text(path)
  if type(path) ~= "string" then error("CharDataset: data_config.path is not set", 0) end
  if path:match("^%a[%w+.-]*://") then
    error(string.format("CharDataset: nnrepl downloads nothing (%s): save the text to a local file and set "
      .. "data_config.path to it, e.g. data_config.path=data/input.txt", path), 0)
  end
  local f, err = io.open(path, "rb")
  if not f then error("CharDataset: cannot open the data: " .. err, 0) end
  local text = f:read("a")
  f:close()
  return text
end

function CharDataset:__init(data_cfg)
  local text = read_text(data_cfg.path)
  local data = {} -- the characters (UTF-8 decoded, as Python's str)
  for _, c in utf8.codes(text) do data[#data + 1] = c end
  local keep = math.floor(#data * data_cfg.truncate)
  for i = #data, keep + 1, -1 do data[i] = nil end

  local seen, chars = {}, {}
  for _, c in ipairs(data) do
    if not seen[c] then seen[c] = true; chars[#chars + 1] = c end
  end
  table.sort(chars)
  local data_size, vocab_size = #data, #chars
  print(string.format("Data has %d characters, %d unique.", data_size, vocab_size))

  self.stoi, self.itos = {}, {}
  for i, c in ipairs(chars) do
    self.stoi[utf8.char(c)] = i - 1
    self.itos[i - 1] = utf8.char(c)
  end
  self.block_size = data_cfg.block_size
  self.vocab_size = vocab_size
  self.data = data
  -- every character's id, encoded once (the original encodes each chunk when it is asked for)
  local ids = {}
  for i, c in ipairs(data) do ids[i] = self.stoi[utf8.char(c)] end
  self.ids = torch.tensor(ids, { dtype = torch.long })
end

function CharDataset:__len()
  return #self.data - self.block_size
end

function CharDataset:__getitem(idx)
  -- block_size + 1 characters from idx on, as ids: inputs and next-character targets
  local chunk = self.ids:narrow(0, idx, self.block_size + 1)
  local x = chunk:narrow(0, 0, self.block_size):clone()
  local y = chunk:narrow(0, 1, self.block_size):clone()
  return x, y
end

return M
