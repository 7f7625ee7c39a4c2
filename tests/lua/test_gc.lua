-- How tensors pace Lua's collector (account() in bindings/tensor.c): a pushed tensor
-- reports the bytes its collection would free, and a full collection starts when those
-- held by Tensor userdata grow by an eighth (at least 32 MB).
local T = ...

-- A dead table that the last full collection made old: young collections keep it, so
-- its weak entry goes only when a full collection runs.
local function old_witness()
  local w = setmetatable({}, { __mode = "v" })
  local strong = {}
  w[1] = strong
  collectgarbage()
  strong = nil
  return w
end

T.test("a tensor pushed again reports no storage", function()
  local p = torch.zeros(2 ^ 21, { requires_grad = true }) -- 8 MB
  p:mul(2):sum():backward()
  local w = old_witness()
  local reads = 0
  for _ = 1, 100 do -- 800 MB if each read counted the gradient's storage
    if p.grad:numel() == 2 ^ 21 then reads = reads + 1 end
  end
  T.eq(reads, 100, "every read sees the gradient")
  T.check(w[1] ~= nil, "reading .grad 100 times started no full collection")
  -- new storage kept alive does start one
  local kept = {}
  for i = 1, 100 do kept[i] = torch.empty(2 ^ 21) end
  T.check(w[1] == nil, "800 MB of new tensors started a full collection")
end)

T.test("after collectgarbage(), growth counts from what it left, not from an earlier peak", function()
  local peak = {}
  for i = 1, 150 do peak[i] = torch.empty(2 ^ 21) end -- 1.2 GB held: full collections follow the growth
  peak = nil
  local w = old_witness() -- collectgarbage() frees the peak
  local kept = {}
  for i = 1, 40 do kept[i] = torch.empty(2 ^ 21) end -- 320 MB: far more than what was left
  T.check(w[1] == nil, "320 MB of new tensors after the peak's collection started a full collection")
end)

T.test("dead temporaries go in young collections", function()
  -- nn.Sequential's pattern: each output feeds the next op and is then dropped
  local w = old_witness()
  local seen = setmetatable({}, { __mode = "v" })
  local x = torch.rand(2 ^ 18) -- 1 MB
  for i = 1, 400 do
    x = x * 1.0001
    seen[i] = x
  end
  local left = 0
  for i = 1, 300 do if seen[i] then left = left + 1 end end
  T.check(w[1] ~= nil, "no full collection ran")
  T.eq(left, 0, "the first 300 of 400 dead 1 MB outputs were freed without one")
  T.check(seen[400] ~= nil, "the live one stays")
end)

T.test("a CUDA allocation collects dead tensors that hold the memory it needs", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 3) end
  collectgarbage()
  torch.cuda.empty_cache()
  local chunk = torch.cuda.get_device_properties(0).total_memory // 5 // 4 -- float32 elements
  local before = torch.cuda.memory_stats()
  collectgarbage("stop") -- each chunk dies at once, but only a collection would free it
  local ok, err = pcall(function()
    for _ = 1, 8 do local _ = torch.empty(chunk, { device = "cuda" }) end -- 8/5 of the GPU
  end)
  collectgarbage("restart")
  T.check(ok, "8 chunks of a fifth of the GPU each, one alive at a time: " .. tostring(err))
  local after = torch.cuda.memory_stats()
  T.eq(after.num_ooms, before.num_ooms, "no out-of-memory error")
  T.check(after.num_alloc_retries > before.num_alloc_retries, "the allocator retried")
  collectgarbage()
  torch.cuda.empty_cache()
end)
