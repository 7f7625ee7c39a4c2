-- pytorch/examples gat/main.py in Lua: a two-layer Graph Attention Network (model.lua)
-- classifies the papers of the Cora citation graph (data.lua), trained with Adam (weight decay
-- as L2) on a random split: 1200 test, 400 validation, the rest training nodes.
--
--   nnrepl scripts/examples/gat/main.lua [--epochs 300] [--lr 0.005] [--l2 5e-4] [--dropout-p 0.6]
--       [--hidden-dim 64] [--num-heads 8] [--concat-heads] [--val-every 20] [--no-accel]
--       [--dry-run] [--seed 13] [--data-root ./cora]
--
-- Differences from the original: nothing is downloaded. cora.content and cora.cites (from
-- https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz) must be in DATA_ROOT, by default ./cora
-- as in the original; --data-root (new) says where. When they are there the original's
-- "Dataset already downloaded..." is printed; when they are missing the program stops with
-- "cannot open './cora/cora.content' (...)". The random split comes from nnrepl's generator,
-- so it differs from PyTorch's for the same seed.
local argparse = require "argparse"
local time = require "time"
local model = require "model"
local data = require "data"
local GAT = model.GAT
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

-- Training settings: the defaults are the paper's
local parser = argparse.ArgumentParser({ description = "PyTorch Graph Attention Network" })
parser:add_argument("--epochs", { type = "int", default = 300,
  help = "number of epochs to train (default: 300)" })
parser:add_argument("--lr", { type = "float", default = 0.005,
  help = "learning rate (default: 0.005)" })
parser:add_argument("--l2", { type = "float", default = 5e-4,
  help = "weight decay (default: 6e-4)" })
parser:add_argument("--dropout-p", { type = "float", default = 0.6,
  help = "dropout probability (default: 0.6)" })
parser:add_argument("--hidden-dim", { type = "int", default = 64,
  help = "dimension of the hidden representation (default: 64)" })
parser:add_argument("--num-heads", { type = "int", default = 8,
  help = "number of the attention heads (default: 4)" })
parser:add_argument("--concat-heads", { action = "store_true",
  help = "wether to concatinate attention heads, or average over them (default: False)" })
parser:add_argument("--val-every", { type = "int", default = 20,
  help = "epochs to wait for print training and validation evaluation (default: 20)" })
parser:add_argument("--no-accel", { action = "store_true",
  help = "disables CUDA training" })
parser:add_argument("--dry-run", { action = "store_true",
  help = "quickly check a single pass" })
parser:add_argument("--seed", { type = "int", default = 13, metavar = "S",
  help = "random seed (default: 13)" })
parser:add_argument("--data-root", { default = "./cora",
  help = "folder holding cora.content and cora.cites (default: ./cora)" })
local args = parser:parse_args({ ... })

torch.manual_seed(args.seed)

local use_accel = not args.no_accel and torch.accelerator.is_available()

local device
if use_accel then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end
print(string.format("Using %s device", device))

local path = args.data_root
local function isfile(p)
  local f = io.open(p, "r")
  if f then f:close() end
  return f ~= nil
end
if isfile(path .. "/cora.content") and isfile(path .. "/cora.cites") then
  print("Dataset already downloaded...")
end

print("Loading dataset...")
local features, labels, adj_mat = load_cora(path, device)
-- the split: test, validation, training nodes
local idx = torch.randperm(#labels):to(device)
local idx_test, idx_val, idx_train = idx[":1200"], idx["1200:1600"], idx["1600:"]

local gat_net = GAT(
  features.shape[1],         -- in_features: input features per node
  args.hidden_dim,           -- n_hidden: output size of the first attention layer
  args.num_heads,            -- n_heads: heads of the first attention layer
  labels:max():item() + 1,   -- num_classes
  args.concat_heads,         -- concat: concatenate the heads rather than average them
  args.dropout_p,            -- dropout
  0.2                        -- leaky_relu_slope
):to(device)

local optimizer = Adam(gat_net:parameters(), { lr = args.lr, weight_decay = args.l2 })
local criterion = nn.NLLLoss()

for epoch = 0, args.epochs - 1 do
  train_iter(epoch + 1, gat_net, optimizer, criterion, { features, adj_mat }, labels, idx_train, idx_val, args.val_every)
  if args.dry_run then
    break
  end
end
local loss_test, acc_test = test(gat_net, criterion, { features, adj_mat }, labels, idx_test)
print(string.format("Test set results: loss %.4f accuracy %.4f", loss_test, acc_test))
