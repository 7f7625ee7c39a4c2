-- pytorch/examples gcn/main.py in Lua: a two-layer Graph Convolutional Network (model.lua)
-- classifies the papers of the Cora citation graph (data.lua) from their words and citations,
-- trained with Adam (weight decay as L2) on a random split: 1000 test, 500 validation, the
-- rest training nodes.
--
--   nnrepl scripts/examples/gcn/main.lua [--epochs 200] [--lr 0.01] [--l2 5e-4] [--dropout-p 0.5]
--       [--hidden-dim 16] [--val-every 20] [--include-bias] [--no-accel] [--dry-run] [--seed 42]
--       [--data-root ./cora]
--
-- Differences from the original: nothing is downloaded (no "Downloading dataset..." line).
-- cora.content and cora.cites (from https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz) must be
-- in DATA_ROOT, by default ./cora as in the original; --data-root (new) says where. When they
-- are missing the program stops with "cannot open './cora/cora.content' (...)". Python's `@`
-- is :matmul, and the random split comes from nnrepl's generator, so it differs from PyTorch's
-- for the same seed.
local argparse = require "argparse"
local time = require "time"
local model = require "model"
local data = require "data"
local GCN = model.GCN
local load_cora = data.load_cora
local Adam = optim.Adam

local test

local function train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every)
  print_every = print_every or 10
  local start_t = time.time()
  model:train()
  optimizer:zero_grad()

  local output = model(table.unpack(input))
  local loss = criterion(output[mask_train], target[mask_train]) -- the training nodes only

  loss:backward()
  optimizer:step()

  -- loss and accuracy after the step, on the training and the validation nodes
  local loss_train, acc_train = test(model, criterion, input, target, mask_train)
  local loss_val, acc_val = test(model, criterion, input, target, mask_val)

  if epoch % print_every == 0 then
    print(string.format("Epoch: %04d (%.4fs) loss_train: %.4f acc_train: %.4f loss_val: %.4f acc_val: %.4f",
      epoch, time.time() - start_t, loss_train, acc_train, loss_val, acc_val))
  end
end

function test(model, criterion, input, target, mask)
  model:eval()
  local _ <close> = torch.no_grad()
  local output = model(table.unpack(input))
  output, target = output[mask], target[mask]

  local loss = criterion(output, target)
  local acc = output:argmax(1):eq(target):float():sum() / #target
  return loss:item(), acc:item()
end

local parser = argparse.ArgumentParser({ description = "PyTorch Graph Convolutional Network" })
parser:add_argument("--epochs", { type = "int", default = 200,
  help = "number of epochs to train (default: 200)" })
parser:add_argument("--lr", { type = "float", default = 0.01,
  help = "learning rate (default: 0.01)" })
parser:add_argument("--l2", { type = "float", default = 5e-4,
  help = "weight decay (default: 5e-4)" })
parser:add_argument("--dropout-p", { type = "float", default = 0.5,
  help = "dropout probability (default: 0.5)" })
parser:add_argument("--hidden-dim", { type = "int", default = 16,
  help = "dimension of the hidden representation (default: 16)" })
parser:add_argument("--val-every", { type = "int", default = 20,
  help = "epochs to wait for print training and validation evaluation (default: 20)" })
parser:add_argument("--include-bias", { action = "store_true",
  help = "use bias term in convolutions (default: False)" })
parser:add_argument("--no-accel", { action = "store_true",
  help = "disables accelerator" })
parser:add_argument("--dry-run", { action = "store_true",
  help = "quickly check a single pass" })
parser:add_argument("--seed", { type = "int", default = 42, metavar = "S",
  help = "random seed (default: 42)" })
parser:add_argument("--data-root", { default = "./cora",
  help = "folder holding cora.content and cora.cites (default: ./cora)" })
local args = parser:parse_args({ ... })

local use_accel = not args.no_accel and torch.accelerator.is_available()

torch.manual_seed(args.seed)

local device
if use_accel then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

print(string.format("Using %s device", device))

print("Loading dataset...")
local features, labels, adj_mat = load_cora(args.data_root, device)
local idx = torch.randperm(#labels):to(device)
local idx_test, idx_val, idx_train = idx[":1000"], idx["1000:1500"], idx["1500:"]

local gcn = GCN(features.shape[1], args.hidden_dim, labels:max():item() + 1, args.include_bias, args.dropout_p):to(device)
local optimizer = Adam(gcn:parameters(), { lr = args.lr, weight_decay = args.l2 })
local criterion = nn.NLLLoss()

for epoch = 0, args.epochs - 1 do
  train_iter(epoch + 1, gcn, optimizer, criterion, { features, adj_mat }, labels, idx_train, idx_val, args.val_every)
  if args.dry_run then
    break
  end
end

local loss_test, acc_test = test(gcn, criterion, { features, adj_mat }, labels, idx_test)
print(string.format("Test set results: loss %.4f accuracy %.4f", loss_test, acc_test))
