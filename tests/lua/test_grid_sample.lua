-- F.affine_grid and F.grid_sample against loops that follow PyTorch's definitions (float64);
-- gradients by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function naive(plane, gx, gy, H, W, mode, pad, align)
  local function un(v, n) return align and (v + 1) * (n - 1) / 2 or ((v + 1) * n - 1) / 2 end
  local ix, iy = un(gx, W), un(gy, H)
  if pad == "border" then ix, iy = math.min(math.max(ix, 0), W - 1), math.min(math.max(iy, 0), H - 1) end
  local function at(x, y)
    if x < 0 or x > W - 1 or y < 0 or y > H - 1 then return 0 end
    return plane[y + 1][x + 1]
  end
  if mode == "nearest" then
    local function rnd(v) local f = math.floor(v); local d = v - f; if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end return f end
    return at(rnd(ix), rnd(iy))
  end
  local x0, y0 = math.floor(ix), math.floor(iy)
  local ax, ay = ix - x0, iy - y0
  return at(x0, y0) * (1 - ax) * (1 - ay) + at(x0 + 1, y0) * ax * (1 - ay) + at(x0, y0 + 1) * (1 - ax) * ay + at(x0 + 1, y0 + 1) * ax * ay
end

T.test("grid_sample against the loop", function()
  torch.manual_seed(141)
  local x = torch.randn(2, 3, 4, 5, f64)
  local grid = torch.rand(2, 3, 6, 2, f64) * 2.6 - 1.3 -- some points outside [-1, 1]
  for _, mode in ipairs({ "bilinear", "nearest" }) do
    for _, pad in ipairs({ "zeros", "border" }) do
      for _, align in ipairs({ false, true }) do
        local y = F.grid_sample(x, grid, { mode = mode, padding_mode = pad, align_corners = align })
        local g, xs, ok = grid:tolist(), x:tolist(), true
        for n = 1, 2 do for c = 1, 3 do for i = 1, 3 do for j = 1, 6 do
          local want = naive(xs[n][c], g[n][i][j][1], g[n][i][j][2], 4, 5, mode, pad, align)
          ok = ok and math.abs(y[n - 1][c - 1][i - 1][j - 1]:item() - want) < 1e-12
        end end end end
        T.check(ok, string.format("%s, %s, align_corners=%s", mode, pad, tostring(align)))
      end
    end
  end
  gradcheck("grid_sample input and grid", function(t, gr) return F.grid_sample(t, gr, { align_corners = false }) end,
    { torch.randn(1, 2, 3, 3, f64), torch.rand(1, 2, 2, 2, f64) * 1.4 - 0.7 })
end)

T.test("affine_grid", function()
  local theta = torch.tensor({ { { 0.8, -0.2, 0.1 }, { 0.3, 1.1, -0.4 } } }, f64)
  for _, align in ipairs({ false, true }) do
    local g = F.affine_grid(theta, { 1, 3, 4, 5 }, align):tolist()
    local ok = true
    for i = 0, 3 do for j = 0, 4 do
      local x = align and -1 + 2 * j / 4 or (2 * j + 1) / 5 - 1
      local y = align and -1 + 2 * i / 3 or (2 * i + 1) / 4 - 1
      ok = ok and math.abs(g[1][i + 1][j + 1][1] - (0.8 * x - 0.2 * y + 0.1)) < 1e-12
        and math.abs(g[1][i + 1][j + 1][2] - (0.3 * x + 1.1 * y - 0.4)) < 1e-12
    end end
    T.check(ok, "grid = theta [x, y, 1], align_corners=" .. tostring(align))
  end
  local id = torch.tensor({ { { 1.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 } } }, f64)
  local img = torch.randn(1, 2, 5, 6, f64)
  T.near(F.grid_sample(img, F.affine_grid(id, img:size())):tolist(), img:tolist(), 1e-12, "the identity transform (size as x:size())")
  T.raises(function() F.affine_grid(torch.ones(1, 3, 3), { 1, 1, 2, 2 }) end, "~Expected a batch of 2D affine matrices")
end)

T.test("align_corners left out warns, as PyTorch's default change does", function()
  local said = {}
  local stderr = io.stderr
  io.stderr = { write = function(_, ...) for _, s in ipairs({ ... }) do said[#said + 1] = s end end }
  torch.set_warn_always(true)
  local id = torch.tensor({ { { 1.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 } } })
  local ok = pcall(function()
    F.grid_sample(torch.ones(1, 1, 2, 2), F.affine_grid(id, { 1, 1, 2, 2 }))
    said.given = #said
    F.grid_sample(torch.ones(1, 1, 2, 2), F.affine_grid(id, { 1, 1, 2, 2 }, { align_corners = false }), { align_corners = false })
  end)
  torch.set_warn_always(false)
  io.stderr = stderr
  T.check(ok, "ran")
  local text = table.concat(said)
  local _, n = text:gsub("UserWarning: Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0", "")
  T.eq(n, 2, "one warning from affine_grid, one from grid_sample")
  T.eq(#said, said.given, "none when align_corners is given")
end)
