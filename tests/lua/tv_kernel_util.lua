-- Helpers of the tv kernel tests (test_tv_tensor_kernels.lua, test_tv_warp_kernels.lua): random
-- images, the device result against the CPU one, and transforms run on a device against the CPU.
--   local KU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "tv_kernel_util.lua")(T)
return function(T)
  local M = {}

  function M.image(shape, dtype)
    if dtype == torch.uint8 then return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
    return torch.rand(shape, {dtype = dtype})
  end

  -- got (on any device) equals want (CPU): float within 1e-5, others exactly
  function M.same(got, want, what)
    got = got:cpu()
    if not T.eq(got.shape:totable(), want.shape:totable(), what .. ": shape") then return end
    T.check(got.dtype == want.dtype, what .. ": dtype " .. tostring(got.dtype))
    if want:numel() == 0 then return end
    local diff = (got:to(torch.float64) - want:to(torch.float64)):abs():max():item()
    local tol = want:is_floating_point() and 1e-5 or 0
    T.check(diff <= tol, string.format("%s: max difference %g", what, diff))
  end

  -- cases {name, make transform, dtype}: each transform on a device image gives the CPU result,
  -- with the same random draws, and keeps the image on the device
  function M.transforms_same(device, cases)
    for _, c in ipairs(cases) do
      local img = M.image({3, 14, 17}, c[3])
      local t = c[2]()
      for seed = 1, 3 do
        torch.manual_seed(seed)
        local want = t(img)
        torch.manual_seed(seed)
        local got = t(img:to(device))
        T.check(got.device.type == device, c[1] .. ": stays on " .. device)
        M.same(got, want, device .. " " .. c[1] .. " seed " .. seed)
      end
    end
  end

  -- fns {name, f}: f on img moved to the device gives f(img)
  function M.functional_same(device, img, fns)
    for _, f in ipairs(fns) do M.same(f[2](img:to(device)), f[2](img), device .. " F." .. f[1]) end
  end

  return M
end
