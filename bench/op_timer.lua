-- The per-op timer of bench/amp_ops.lua and bench/conv_stem.lua: CUDA events around `iters`
-- calls of fn after 3 warm-up calls, median of `reps` repeats, printed as "op <name> <us> us".
-- Lua's collector is stopped while a repeat runs (a loop that only makes large results is
-- otherwise host-bound on full collections; a training step is not). On a CPU device
-- (a smoke test of a script) it times with the host clock.
--   local time = dofile("bench/op_timer.lua")(iters, reps, dev)
return function(iters, reps, dev)
  return function(name, fn)
    for _ = 1, 3 do fn() end
    local t = {}
    for r = 1, reps do
      collectgarbage("collect")
      collectgarbage("stop")
      if dev.type == "cuda" then
        local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
        e0:record()
        for _ = 1, iters do fn() end
        e1:record()
        e1:synchronize()
        t[r] = e0:elapsed_time(e1) * 1000 / iters
      else
        local t0 = require("time").perf_counter()
        for _ = 1, iters do fn() end
        t[r] = (require("time").perf_counter() - t0) * 1e6 / iters
      end
      collectgarbage("restart")
    end
    table.sort(t)
    print(string.format("op %-32s %9.2f us", name, t[(reps + 1) // 2]))
  end
end
