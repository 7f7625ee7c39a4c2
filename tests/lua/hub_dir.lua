-- Runs fn with torch.hub's folder set to dir (default: a fresh path, an empty cache, so that
-- weights= cannot find the user's own checkpoints), then puts the folder back, even on error:
--   dofile(here .. "hub_dir.lua")(function(cache) ... end)     cache: <dir>/checkpoints/
return function(fn, dir)
  dir = dir or (os.getenv("TMPDIR") or "/tmp") .. "/nnrepl_no_hub_" .. tostring(math.random(1 << 30))
  local saved = torch.hub.get_dir()
  torch.hub.set_dir(dir)
  local ok, err = pcall(fn, dir .. "/checkpoints/")
  torch.hub.set_dir(saved)
  if not ok then error(err, 0) end
end
