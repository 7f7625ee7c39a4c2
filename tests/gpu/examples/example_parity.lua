-- What the example parity scripts (tests/gpu/examples/<example>.lua) share, nnrepl's side of
-- example_parity.py: the command line (DIR [cuda|cpu] [--generate]), TF32 off on CUDA, the
-- result files.
--   local P = dofile(here .. "/example_parity.lua")
--   local run = P.start("name", ...)   -- run.dir, run.device, run.generate, run.path(what)
--   P.finish(run, losses, model)       -- <name>_nnrepl_losses.txt and _nnrepl_final.safetensors
local P = {}

function P.start(name, ...)
  local run = {}
  for _, a in ipairs({ ... }) do
    if a == "--generate" then run.generate = true
    elseif not run.dir then run.dir = a
    elseif not run.device then run.device = a
    else error(name .. ".lua: unexpected argument " .. a, 0) end
  end
  if not run.dir then error("usage: nnrepl tests/gpu/examples/" .. name .. ".lua DIR [cuda|cpu] [--generate]", 0) end
  run.device = torch.device(run.device or (torch.cuda.is_available() and "cuda" or "cpu"))
  run.name = name
  function run.path(what) return run.dir .. "/" .. name .. "_" .. what end
  -- --generate: make the input files here when the data file is missing
  local f = io.open(run.path("data.safetensors"), "rb")
  if f then f:close() end
  run.generate = run.generate and not f
  if run.generate then os.execute("mkdir -p '" .. run.dir .. "'") end
  if run.device.type == "cuda" then
    torch.backends.cuda.matmul.allow_tf32 = false
    torch.backends.cudnn.allow_tf32 = false
  end
  return run
end

function P.finish(run, losses, model)
  local f = assert(io.open(run.path("nnrepl_losses.txt"), "w"))
  for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
  f:close()
  torch.save(model:state_dict(), run.path("nnrepl_final.safetensors"))
  print(string.format("nnrepl %s on %s: losses %.6f -> %.6f over %d steps", run.name, tostring(run.device), losses[1],
    losses[#losses], #losses))
end

return P
