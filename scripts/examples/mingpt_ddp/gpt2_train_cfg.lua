-- The minGPT-ddp example's training config (the original's gpt2_train_cfg.yaml, read by hydra),
-- as a Lua table. main.lua reads it; `section.key=value` arguments override single values.
return {
  data_config = {
    -- the original downloads karpathy/char-rnn's tinyshakespeare input.txt; nnrepl downloads
    -- nothing: put the file here (relative to the folder you run in) or override the path
    path = "data/input.txt",
    block_size = 128,
    train_split = 0.9,
    truncate = 0.05,
  },
  gpt_config = {
    n_layer = 8,
    n_head = 8,
    n_embd = 512,
  },
  trainer_config = {
    max_epochs = 10,
    batch_size = 216,
    data_loader_workers = 4,
    grad_norm_clip = 1.0,
    snapshot_path = "gpt_snapshot.pt",
    save_every = 3,
    use_amp = true,
  },
  optimizer_config = {
    weight_decay = 0.1,
    learning_rate = 0.0003,
  },
}
