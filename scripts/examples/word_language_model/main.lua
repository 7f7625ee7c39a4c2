-- pytorch/examples word_language_model/main.py in Lua: trains an RNN/LSTM/GRU or Transformer
-- language model on a word corpus, evaluates it, keeps the best model (torch.save of the whole
-- module) and reports the test loss and perplexity.
--
--   nnrepl scripts/examples/word_language_model/main.lua --data DIR [--model LSTM] [--tied]
--       [--epochs 40] [--emsize 200] [--nhid 200] [--bptt 35] [--accel] [--onnx-export F] ...
--   nnrepl scripts/examples/word_language_model/generate.lua --data DIR [--words 1000]
--
-- DIR holds train.txt, valid.txt and test.txt (WikiText-2's layout; there is no download: put
-- the corpus there yourself, a missing file is an error naming it). Differences from the
-- original: torch.save / torch.load take the path instead of an open file; Ctrl+C stops the
-- program rather than ending training early; the safe_globals lists name nnrepl's classes
-- (its MultiheadAttention projects with an nn.Linear, so NonDynamicallyQuantizableLinear is
-- not there). As in the original, --onnx-export works for the RNN models only (the
-- Transformer has no init_hidden).
local argparse = require "argparse"
local time = require "time"

local data = require "data"
local model_lib = require "model"
local PositionalEncoding, RNNModel, TransformerModel =
  model_lib.PositionalEncoding, model_lib.RNNModel, model_lib.TransformerModel

local parser = argparse.ArgumentParser({ description = "PyTorch Wikitext-2 RNN/LSTM/GRU/Transformer Language Model" })
parser:add_argument("--data", { type = "str", default = "./data/wikitext-2", help = "location of the data corpus" })
parser:add_argument("--model", { type = "str", default = "LSTM",
  help = "type of network (RNN_TANH, RNN_RELU, LSTM, GRU, Transformer)" })
parser:add_argument("--emsize", { type = "int", default = 200, help = "size of word embeddings" })
parser:add_argument("--nhid", { type = "int", default = 200, help = "number of hidden units per layer" })
parser:add_argument("--nlayers", { type = "int", default = 2, help = "number of layers" })
parser:add_argument("--lr", { type = "float", default = 20, help = "initial learning rate" })
parser:add_argument("--clip", { type = "float", default = 0.25, help = "gradient clipping" })
parser:add_argument("--epochs", { type = "int", default = 40, help = "upper epoch limit" })
parser:add_argument("--batch_size", { type = "int", default = 20, metavar = "N", help = "batch size" })
parser:add_argument("--bptt", { type = "int", default = 35, help = "sequence length" })
parser:add_argument("--dropout", { type = "float", default = 0.2, help = "dropout applied to layers (0 = no dropout)" })
parser:add_argument("--tied", { action = "store_true", help = "tie the word embedding and softmax weights" })
parser:add_argument("--seed", { type = "int", default = 1111, help = "random seed" })
parser:add_argument("--log-interval", { type = "int", default = 200, metavar = "N", help = "report interval" })
parser:add_argument("--save", { type = "str", default = "model.pt", help = "path to save the final model" })
parser:add_argument("--onnx-export", { type = "str", default = "", help = "path to export the final model in onnx format" })
parser:add_argument("--nhead", { type = "int", default = 2,
  help = "the number of heads in the encoder/decoder of the transformer model" })
parser:add_argument("--dry-run", { action = "store_true", help = "verify the code and the model" })
parser:add_argument("--accel", { action = "store_true", help = "Enables accelerated training" })
parser:add_argument("--use-optimizer", { action = "store_true", help = "Uses AdamW optimizer for gradient updating" })
local args = parser:parse_args({ ... })

-- Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)

local device
if args.accel and torch.accelerator.is_available() then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

print("Using device: " .. tostring(device))

-------------------------------------------------------------------------------
-- Load data
-------------------------------------------------------------------------------

local corpus = data.Corpus(args.data)

-- batchify lays the token stream out as bsz columns (a..f | g..l | ... for the alphabet and
-- bsz 4), dropping the tail that does not fill a row; the columns are independent sequences.
local function batchify(data_, bsz)
  -- Work out how cleanly we can divide the dataset into bsz parts.
  local nbatch = data_:size(0) // bsz
  -- Trim off any extra elements that wouldn't cleanly fit (remainders).
  data_ = data_:narrow(0, 0, nbatch * bsz)
  -- Evenly divide the data across the bsz batches.
  data_ = data_:view(bsz, -1):t():contiguous()
  return data_:to(device)
end

local eval_batch_size = 10
local train_data = batchify(corpus.train, args.batch_size)
local val_data = batchify(corpus.valid, eval_batch_size)
local test_data = batchify(corpus.test, eval_batch_size)

-------------------------------------------------------------------------------
-- Build the model
-------------------------------------------------------------------------------

local ntokens = #corpus.dictionary
local model
if args.model == "Transformer" then
  model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout):to(device)
else
  model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied):to(device)
end

local criterion = nn.NLLLoss()
local optimizer
if args.use_optimizer then
  optimizer = torch.optim.AdamW(model:parameters(), { lr = args.lr })
end

-------------------------------------------------------------------------------
-- Training code
-------------------------------------------------------------------------------

-- Wraps hidden states in new Tensors, to detach them from their history.
local function repackage_hidden(h)
  if torch.is_tensor(h) then
    return h:detach()
  else
    local out = {}
    for i, v in ipairs(h) do out[i] = repackage_hidden(v) end
    return out
  end
end

-- get_batch cuts rows i .. i+bptt-1 of the batchified source as the input and the rows one
-- further on, flattened, as the targets (the chunks run along the sequence, dimension 0).
local function get_batch(source, i)
  local seq_len = math.min(args.bptt, source:size(0) - 1 - i)
  local data_ = source[i .. ":" .. (i + seq_len)]
  local target = source[(i + 1) .. ":" .. (i + 1 + seq_len)]:view(-1)
  return data_, target
end

local function evaluate(data_source)
  -- Turn on evaluation mode which disables dropout.
  model:eval()
  local total_loss = 0.
  local ntokens_ = #corpus.dictionary
  local hidden
  if args.model ~= "Transformer" then hidden = model:init_hidden(eval_batch_size) end
  local _ <close> = torch.no_grad()
  local data_
  for i = 0, data_source:size(0) - 2, args.bptt do
    local output, targets
    data_, targets = get_batch(data_source, i)
    if args.model == "Transformer" then
      output = model(data_)
      output = output:view(-1, ntokens_)
    else
      output, hidden = model(data_, hidden)
      hidden = repackage_hidden(hidden)
    end
    total_loss = total_loss + data_:size(0) * criterion(output, targets):item()
  end
  return total_loss / (data_source:size(0) - 1)
end

local lr, epoch

local function train()
  -- Turn on training mode which enables dropout.
  model:train()
  local total_loss = 0.
  local start_time = time.time()
  local ntokens_ = #corpus.dictionary
  local hidden
  if args.model ~= "Transformer" then hidden = model:init_hidden(args.batch_size) end
  local batch = 0
  for i = 0, train_data:size(0) - 2, args.bptt do
    local data_, targets = get_batch(train_data, i)
    -- Starting each batch, we detach the hidden state from how it was previously produced.
    -- If we didn't, the model would try backpropagating all the way to start of the dataset.
    if args.use_optimizer then
      optimizer:zero_grad()
    else
      model:zero_grad()
    end
    local output
    if args.model == "Transformer" then
      output = model(data_)
      output = output:view(-1, ntokens_)
    else
      hidden = repackage_hidden(hidden)
      output, hidden = model(data_, hidden)
    end
    local loss = criterion(output, targets)
    loss:backward()

    -- `clip_grad_norm_` helps prevent the exploding gradient problem in RNNs / LSTMs.
    torch.nn.utils.clip_grad_norm_(model:parameters(), args.clip)
    if args.use_optimizer then
      optimizer:step()
    else
      for _, p in ipairs(model:parameters()) do
        p.data:add_(p.grad, { alpha = -lr })
      end
    end

    total_loss = total_loss + loss:item()

    if batch % args.log_interval == 0 and batch > 0 then
      local cur_loss = total_loss / args.log_interval
      local elapsed = time.time() - start_time
      print(string.format("| epoch %3d | %5d/%5d batches | lr %02.2f | ms/batch %5.2f | loss %5.2f | ppl %8.2f",
        epoch, batch, train_data:size(0) // args.bptt, lr, elapsed * 1000 / args.log_interval, cur_loss,
        math.exp(cur_loss)))
      total_loss = 0
      start_time = time.time()
    end
    if args.dry_run then break end
    batch = batch + 1
  end
end

local function export_onnx(path, batch_size, seq_len)
  print(string.format("The model is also exported in ONNX format at %s.", os.realpath and os.realpath(args.onnx_export)
    or io.popen("realpath -m '" .. args.onnx_export .. "'"):read("l")))
  model:eval()
  local dummy_input = torch.LongTensor(seq_len * batch_size):zero_():view(-1, batch_size):to(device)
  local hidden = model:init_hidden(batch_size)
  torch.onnx.export(model, { dummy_input, hidden }, path)
end

-- Loop over epochs.
lr = args.lr
local best_val_loss = nil

for e = 1, args.epochs do
  epoch = e
  local epoch_start_time = time.time()
  train()
  local val_loss = evaluate(val_data)
  print(string.rep("-", 89))
  print(string.format("| end of epoch %3d | time: %5.2fs | valid loss %5.2f | valid ppl %8.2f",
    epoch, time.time() - epoch_start_time, val_loss, math.exp(val_loss)))
  print(string.rep("-", 89))
  -- Save the model if the validation loss is the best we've seen so far.
  if not best_val_loss or val_loss < best_val_loss then
    torch.save(model, args.save)
    best_val_loss = val_loss
  else
    -- Anneal the learning rate if no improvement has been seen in the validation dataset.
    lr = lr / 4.0
  end
end

-- Load the best saved model.
do
  local safe_globals
  if args.model == "Transformer" then
    safe_globals = { PositionalEncoding, TransformerModel, F.relu, nn.MultiheadAttention, nn.ModuleList, nn.Dropout,
      nn.Linear, nn.LayerNorm, nn.Embedding, nn.TransformerEncoder, nn.TransformerEncoderLayer }
  else
    safe_globals = { RNNModel, nn.Dropout, nn.Linear, nn.GRU, nn.LSTM, nn.RNN, nn.Embedding }
  end
  local _ <close> = torch.serialization.safe_globals(safe_globals)
  model = torch.load(args.save)
  -- nnrepl's RNNs read their weights where they are; flatten_parameters is there for the port
  if args.model == "RNN_TANH" or args.model == "RNN_RELU" or args.model == "LSTM" or args.model == "GRU" then
    model.rnn:flatten_parameters()
  end
end

-- Run on test data.
local test_loss = evaluate(test_data)
print(string.rep("=", 89))
print(string.format("| End of training | test loss %5.2f | test ppl %8.2f", test_loss, math.exp(test_loss)))
print(string.rep("=", 89))

if #args.onnx_export > 0 then
  -- Export the model in ONNX format.
  export_onnx(args.onnx_export, 1, args.bptt)
end
