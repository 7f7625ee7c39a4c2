-- What tests/dist/fsdp.lua and fsdp2.lua share: one process's training on the whole batches,
-- and the comparison of a full state dict with a module's.
return function(H, X, Y)
  local C = {}

  -- make(seed) trained steps steps on X[step], Y[step] with opt_fn's optimizer
  function C.reference(make, seed, opt_fn, steps)
    local ref = make(seed)
    local opt = opt_fn(ref:parameters())
    for step = 0, steps - 1 do
      opt:zero_grad()
      F.mse_loss(ref(X[step]), Y[step]):backward()
      opt:step()
    end
    return ref
  end

  -- steps steps of model on this rank's slices of X and Y; returns the last output
  function C.train(model, opt, slice, steps)
    local y
    for step = 0, steps - 1 do
      opt:zero_grad()
      y = model(slice(X, step))
      F.mse_loss(y:to(Y.dtype), slice(Y, step)):backward() -- a mixed-precision output in Y's dtype
      opt:step()
    end
    return y
  end

  -- the full state dict equals the reference module's, key for key in order
  function C.same_state(sd, ref, tol, what)
    local want = ref:state_dict()
    local wk, gk = table.concat(want:keys(), ","), table.concat(sd:keys(), ",")
    H.check(wk == gk, "%s: state dict keys %s, expected %s", what, gk, wk)
    local worst = 0
    for k, t in pairs(want) do
      local d = sd[k] and H.maxdiff(sd[k], t)
      worst = d and math.max(worst, d) or math.huge
    end
    H.check(worst <= tol, "%s: full parameters differ from one process's by %s", what, tostring(worst))
  end

  return C
end
