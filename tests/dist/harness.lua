-- A small check harness for the distributed tests: each rank counts its own checks
-- and ends with "N passed, N failed" (the launcher prefixes the rank).
local H = { passed = 0, failed = 0 }

function H.check(cond, fmt, ...)
  if cond then
    H.passed = H.passed + 1
  else
    H.failed = H.failed + 1
    io.stderr:write("FAIL: " .. string.format(fmt, ...) .. "\n", debug.traceback("", 2), "\n")
  end
  return cond
end

-- the largest absolute difference, or nil when shapes differ
function H.maxdiff(a, b)
  if a:dim() ~= b:dim() then return nil end
  for d = 0, a:dim() - 1 do if a:size(d) ~= b:size(d) then return nil end end
  if a:numel() == 0 then return 0 end
  return (a:to("cpu", torch.float64) - b:to("cpu", torch.float64)):abs():max():item()
end

function H.close(a, b, tol, fmt, ...)
  local d = H.maxdiff(a, b)
  local ok = d ~= nil and d <= (tol or 0)
  if not ok then
    fmt = string.format(fmt, ...) .. string.format(" (max difference %s)\n got %s\n expected %s", tostring(d), tostring(a), tostring(b))
    return H.check(false, "%s", fmt)
  end
  return H.check(true, "")
end

function H.raises(fn, pattern, fmt, ...)
  local ok, err = pcall(fn)
  local msg = string.format(fmt, ...)
  if ok then return H.check(false, "%s: no error raised", msg) end
  return H.check(tostring(err):find(pattern, 1, true) ~= nil, "%s: error %q does not mention %q", msg, tostring(err), pattern)
end

-- The process group of a test run with `gloo` (the default, CPU tensors) or `nccl` (each rank
-- on cuda:LOCAL_RANK) as its argument: returns the backend and the device for its tensors.
function H.init(backend)
  backend = backend or "gloo"
  local dev = "cpu"
  if backend == "nccl" then
    dev = "cuda:" .. os.getenv("LOCAL_RANK")
    torch.cuda.set_device(tonumber(os.getenv("LOCAL_RANK")))
  end
  torch.distributed.init_process_group(backend, { timeout = 60 })
  return backend, dev
end

function H.report()
  print(string.format("%d passed, %d failed", H.passed, H.failed))
  io.stdout:flush()
  os.exit(H.failed == 0 and 0 or 1)
end

return H
