-- PyTorch recipe "How to use TensorBoard with PyTorch"
-- (recipes_source/recipes/tensorboard_with_pytorch.py) in Lua: a linear regression whose loss is
-- logged with SummaryWriter's add_scalar.
--
--   nnrepl scripts/tutorials/recipes/tensorboard_with_pytorch.lua
--   tensorboard --logdir=runs
--
-- Differences from the original:
-- * def train_model(iter) is a local function; `iter` is named n_iter.
-- * The recipe prints nothing; (extra) the last line prints the log folder and the first and
--   last logged losses. RECIPE_ITERS (10) sets the number of steps.
local SummaryWriter = torch.utils.tensorboard.SummaryWriter
local writer = SummaryWriter()

local x = torch.arange(-5, 5, 0.1):view(-1, 1)
local y = -5 * x + 0.1 * torch.randn(x:size())

local model = nn.Linear(1, 1)
local criterion = nn.MSELoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.1 })

local losses = {} -- (extra)
local function train_model(n_iter)
  for epoch = 0, n_iter - 1 do
    local y1 = model(x)
    local loss = criterion(y1, y)
    writer:add_scalar("Loss/train", loss, epoch)
    losses[#losses + 1] = loss:item()
    optimizer:zero_grad()
    loss:backward()
    optimizer:step()
  end
end

train_model(tonumber(os.getenv("RECIPE_ITERS") or "10"))
writer:flush()

writer:close()

print(string.format("(extra) logged %d losses under %s: first %.4f, last %.4f", #losses, writer.log_dir, losses[1],
  losses[#losses]))
