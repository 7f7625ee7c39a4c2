-- pytorch/examples distributed/minGPT-ddp/mingpt/main.py in Lua: trains a character-level GPT
-- on a text file (tinyshakespeare in the original) with DistributedDataParallel, one rank per GPU;
-- prints each rank's loss every 100 iterations, evaluates on the held-out 10% after each epoch,
-- and local rank 0 saves a snapshot every save_every epochs, from which a new run resumes.
--
--   nnrepl --nproc-per-node 2 scripts/examples/mingpt_ddp/main.lua [--config-path DIR]
--       [--config-name NAME] [section.key=value ...]
--   e.g. ... main.lua trainer_config.max_epochs=2 data_config.path=/data/input.txt
--
-- The model is in model.lua, the data set in char_dataset.lua, the loop in trainer.lua.
-- Differences from the original:
-- - no hydra: the config is the Lua table in gpt2_train_cfg.lua (the original's
--   gpt2_train_cfg.yaml); hydra's command-line overrides work: `section.key=value` sets a key
--   of the file, `+section.key=value` adds one (e.g. +gpt_config.resid_pdrop=0); a value is a
--   number, true / false, null or a string. --config-path / --config-name pick another file
--   (DIR/NAME.lua). Setting a key the file lacks without `+` is an error, as with hydra.
-- - nothing is downloaded: data_config.path is data/input.txt (the original reads the URL of
--   karpathy/char-rnn's tinyshakespeare input.txt, which its repository also ships as
--   mingpt/data/input.txt); a URL raises an error saying to save the file locally.
-- - the original exits when it finds fewer than 2 GPUs; the port then runs its ranks on the
--   CPU with gloo (it needs one GPU per local rank), saying so.
local model_lib = require "model"
local trainer_lib = require "trainer"
local char_dataset = require "char_dataset"
local dist = torch.distributed
local GPT, GPTConfig, OptimizerConfig, create_optimizer =
  model_lib.GPT, model_lib.GPTConfig, model_lib.OptimizerConfig, model_lib.create_optimizer
local Trainer, TrainerConfig = trainer_lib.Trainer, trainer_lib.TrainerConfig
local CharDataset, DataConfig = char_dataset.CharDataset, char_dataset.DataConfig

local function verify_min_gpu_count(min_gpus)
  min_gpus = min_gpus or 2
  local has_gpu = torch.accelerator.is_available()
  local gpu_count = torch.accelerator.device_count()
  return has_gpu and gpu_count >= min_gpus
end

local function ddp_setup()
  local acc = trainer_lib.accelerator()
  local rank = trainer_lib.env_rank("LOCAL_RANK")
  local device = acc and torch.device(string.format("%s:%d", acc.type, rank)) or torch.device("cpu")
  local backend = dist.get_default_backend_for_device(device)
  dist.init_process_group(backend)
  if acc then torch.accelerator.set_device_index(rank) end
end

local function get_train_objs(gpt_cfg, opt_cfg, data_cfg)
  local dataset = CharDataset(data_cfg)
  local train_len = math.floor(#dataset * data_cfg.train_split)
  local split = torch.utils.data.random_split(dataset, { train_len, #dataset - train_len })
  local train_set, test_set = split[1], split[2]

  gpt_cfg.vocab_size = dataset.vocab_size
  gpt_cfg.block_size = dataset.block_size
  local model = GPT(gpt_cfg)
  local optimizer = create_optimizer(model, opt_cfg)

  return model, optimizer, train_set, test_set
end

-- hydra's stand-in: the config file, then the command line's overrides
local function load_config(argv)
  local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
  local config_path, config_name, overrides = here, "gpt2_train_cfg", {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local flag, value = a:match("^(%-%-config%-[a-z]+)=(.*)$")
    if not flag and (a == "--config-path" or a == "--config-name") then flag, value, i = a, argv[i + 1], i + 1 end
    if flag == "--config-path" and value then config_path = value
    elseif flag == "--config-name" and value then config_name = value:gsub("%.lua$", "")
    elseif a:match("^%+?[%w_]+%.[%w_]+=") then overrides[#overrides + 1] = a
    else error(string.format("main.lua: unrecognized argument '%s' (expected section.key=value, +section.key=value, "
        .. "--config-path DIR or --config-name NAME)", a), 0) end
    i = i + 1
  end
  local file = config_path .. "/" .. config_name .. ".lua"
  local chunk, err = loadfile(file)
  if not chunk then error("main.lua: cannot load the config " .. file .. ": " .. err, 0) end
  local cfg = chunk()
  for _, o in ipairs(overrides) do
    local add, section, key, value = o:match("^(%+?)([%w_]+)%.([%w_]+)=(.*)$")
    if type(cfg[section]) ~= "table" then
      error(string.format("Could not override '%s.%s': the config has no section '%s'", section, key, section), 0)
    end
    if add == "" and cfg[section][key] == nil then -- hydra's struct mode: only + adds a key
      error(string.format("Could not override '%s.%s': key '%s' is not in section '%s' (to add it, use "
        .. "+%s.%s=%s)", section, key, key, section, section, key, value), 0)
    elseif add == "+" and cfg[section][key] ~= nil then
      error(string.format("Could not append to config: '%s.%s' is already in it (use %s.%s=%s)", section, key,
        section, key, value), 0)
    end
    if value == "true" then value = true
    elseif value == "false" then value = false
    elseif value == "null" then value = nil
    elseif tonumber(value) then value = math.tointeger(tonumber(value)) or tonumber(value) end
    cfg[section][key] = value
  end
  return cfg
end

local function main(cfg)
  ddp_setup()

  local gpt_cfg = GPTConfig(cfg["gpt_config"])
  local opt_cfg = OptimizerConfig(cfg["optimizer_config"])
  local data_cfg = DataConfig(cfg["data_config"])
  local trainer_cfg = TrainerConfig(cfg["trainer_config"])

  local model, optimizer, train_data, test_data = get_train_objs(gpt_cfg, opt_cfg, data_cfg)
  local trainer = Trainer.new(trainer_cfg, model, optimizer, train_data, test_data)
  trainer:train()

  dist.destroy_process_group()
end

local cfg = load_config({ ... })
local _min_gpu_count = 2
if not verify_min_gpu_count(_min_gpu_count) or not trainer_lib.accelerator() then
  print(string.format("Unable to locate sufficient %d gpus to run this example. Running it on the CPU with gloo.",
    math.max(_min_gpu_count, tonumber(os.getenv("LOCAL_WORLD_SIZE") or "1"))))
end
main(cfg)
