-- pytorch/examples word_language_model/generate.py in Lua: samples --words words from a model
-- that main.lua saved (the whole module, torch.save(model, ...)), one at a time with the given
-- temperature, and writes them to --outf, 20 a line.
--
--   nnrepl scripts/examples/word_language_model/generate.lua --data DIR --checkpoint model.pt
--       [--outf generated.txt] [--words 1000] [--temperature 1.0] [--seed 1111] [--accel]
--
-- --data must be the corpus the model was trained on (its dictionary maps ids to words).
-- Difference: idx2word is a Lua list, so the word of id i is idx2word[i + 1].
local argparse = require "argparse"

local data = require "data"
local model_lib = require "model"
local PositionalEncoding, RNNModel, TransformerModel =
  model_lib.PositionalEncoding, model_lib.RNNModel, model_lib.TransformerModel

local parser = argparse.ArgumentParser({ description = "PyTorch Wikitext-2 Language Model" })
-- Model parameters.
parser:add_argument("--data", { type = "str", default = "./data/wikitext-2", help = "location of the data corpus" })
parser:add_argument("--checkpoint", { type = "str", default = "./model.pt", help = "model checkpoint to use" })
parser:add_argument("--outf", { type = "str", default = "generated.txt", help = "output file for generated text" })
parser:add_argument("--words", { type = "int", default = "1000", help = "number of words to generate" })
parser:add_argument("--seed", { type = "int", default = 1111, help = "random seed" })
parser:add_argument("--temperature", { type = "float", default = 1.0, help = "temperature - higher will increase diversity" })
parser:add_argument("--log-interval", { type = "int", default = 100, help = "reporting interval" })
parser:add_argument("--accel", { action = "store_true", default = false, help = "use accelerator" })
local args = parser:parse_args({ ... })

-- Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)

local device
if args.accel and torch.accelerator.is_available() then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

if args.temperature < 1e-3 then
  parser:error("--temperature has to be greater or equal 1e-3.")
end

local model
do
  local safe_globals = { PositionalEncoding, RNNModel, TransformerModel, F.relu, nn.MultiheadAttention, nn.ModuleList,
    nn.Dropout, nn.Linear, nn.LayerNorm, nn.Embedding, nn.GRU, nn.LSTM, nn.RNN, nn.TransformerEncoder,
    nn.TransformerEncoderLayer }
  local _ <close> = torch.serialization.safe_globals(safe_globals)
  model = torch.load(args.checkpoint, { map_location = device })
end
model:eval()

local corpus = data.Corpus(args.data)
local ntokens = #corpus.dictionary

local is_transformer_model = model.model_type == "Transformer"
local hidden
if not is_transformer_model then
  hidden = model:init_hidden(1)
end
local input = torch.randint(ntokens, { 1, 1 }, { dtype = torch.long }):to(device)

local outf = assert(io.open(args.outf, "w"))
do
  local _ <close> = torch.no_grad() -- no tracking history
  for i = 0, args.words - 1 do
    local output, word_weights, word_idx
    if is_transformer_model then
      output = model(input, false)
      word_weights = output[-1]:squeeze():div(args.temperature):exp():cpu()
      word_idx = torch.multinomial(word_weights, 1)[0]
      local word_tensor = torch.tensor({ { word_idx:item() } }):long():to(device)
      input = torch.cat({ input, word_tensor }, 0)
    else
      output, hidden = model(input, hidden)
      word_weights = output:squeeze():div(args.temperature):exp():cpu()
      word_idx = torch.multinomial(word_weights, 1)[0]
      input:fill_(word_idx)
    end

    local word = corpus.dictionary.idx2word[word_idx:item() + 1]

    outf:write(word .. (i % 20 == 19 and "\n" or " "))

    if i % args.log_interval == 0 then
      print(string.format("| Generated %d/%d words", i, args.words))
    end
  end
end
outf:close()
