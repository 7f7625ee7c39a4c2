-- torch.distributed.checkpoint.state_dict's broadcast_from_rank0: set_model_state_dict and
-- set_optimizer_state_dict read rank 0's full state dict only (the other ranks pass {} or
-- something else), for fully_shard-ed and plain models; its errors.
-- Run by test_dist.sh through the launcher with 2 and 3 ranks (gloo), or with "nccl" on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local SD = dist.checkpoint.state_dict
local _, dev = H.init(arg[1])
local rank = dist.get_rank()
local BCAST = SD.StateDictOptions { full_state_dict = true, broadcast_from_rank0 = true }
local FULL = SD.StateDictOptions { full_state_dict = true }

local function net(seed)
  torch.manual_seed(seed)
  return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)):to(dev)
end
local function step(m, opt)
  m(torch.ones(4, 3, { device = dev })):pow(2):sum():backward()
  opt:step()
  opt:zero_grad()
end

for _, sharded in ipairs({ true, false }) do
  -- the source: one process's model and Adam after two steps, full state dicts (the same on every rank)
  local src = net(1)
  local src_opt = optim.Adam(src:parameters(), { lr = 0.1 })
  step(src, src_opt); step(src, src_opt)
  local msd, osd = SD.get_state_dict(src, src_opt, { options = FULL })
  local what = sharded and "fully_shard" or "plain"
  local m = net(2)
  if sharded then dist.fsdp.fully_shard(m[0]); dist.fsdp.fully_shard(m) end
  local opt = optim.Adam(m:parameters(), { lr = 0.5 })
  -- rank 0 passes the real dicts, the others {} (model) and a wrong one (optimizer): not read
  SD.set_model_state_dict(m, rank == 0 and msd or {}, { options = BCAST })
  SD.set_optimizer_state_dict(m, opt, rank == 0 and osd or { state = {}, param_groups = { { lr = 9 } } }, { options = BCAST })
  local got = SD.get_model_state_dict(m, { options = FULL })
  for k, v in pairs(msd) do H.close(got[k], v, 0, "%s: %s from rank 0", what, k) end
  local gosd = SD.get_optimizer_state_dict(m, opt, { options = FULL })
  H.check(gosd.param_groups[1].lr == 0.1, "%s: the optimizer's lr from rank 0 (%s)", what, tostring(gosd.param_groups[1].lr))
  for k, s in pairs(osd.state) do
    H.close(gosd.state[k].exp_avg, s.exp_avg, 0, "%s: %s's exp_avg from rank 0", what, k)
    H.close(gosd.state[k].step, s.step, 0, "%s: %s's step", what, k)
  end
  -- the next step matches the source's
  step(m, opt); step(src, src_opt)
  got = SD.get_model_state_dict(m, { options = FULL })
  for k, v in pairs(SD.get_model_state_dict(src)) do H.close(got[k], v, 1e-6, "%s: %s after one more step", what, k) end
end

-- errors
local m = net(3)
H.raises(function() SD.set_model_state_dict(m, {}, { options = SD.StateDictOptions { broadcast_from_rank0 = true } }) end,
  "broadcast_from_rank0=true needs full_state_dict=true", "without full_state_dict")
H.raises(function() SD.get_model_state_dict(m, { options = BCAST }) end,
  "broadcast_from_rank0=true is for set_model_state_dict", "on get_model_state_dict")

dist.destroy_process_group()
H.report()
