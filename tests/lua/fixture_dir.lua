-- A fresh folder for a test's fixture files, and the two helpers the dataset tests write them with:
--   local FX = dofile(here .. "fixture_dir.lua")("tv_more")   -- FX.dir, FX.mkdir(path), FX.write(path, bytes)
return function(tag)
  local dir = (os.getenv("TMPDIR") or "/tmp") .. "/nnrepl_test_" .. tag .. "_" .. tostring(os.time()) .. "_" ..
    tostring(math.random(1 << 30))
  local function mkdir(p) os.execute("mkdir -p '" .. p .. "'") end
  local function write(path, s)
    local f = assert(io.open(path, "wb"))
    f:write(s)
    f:close()
  end
  mkdir(dir)
  return { dir = dir, mkdir = mkdir, write = write }
end
