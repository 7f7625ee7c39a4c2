-- torch.stft and torch.istft (PyTorch's signal-processing forms) from torch.fft and tensor ops:
-- frames by Tensor:unfold (a view), the window padded to n_fft at the centre, and the
-- inverse's overlap-add by index_add, divided by the summed squared window. Differentiable.
local torch = require "torch"
local U = require "nn_util"

local stft_spec = { { "n_fft", U.REQUIRED }, { "hop_length" }, { "win_length" }, { "window" }, { "center", true },
  { "pad_mode", "reflect" }, { "normalized", false }, { "onesided" }, { "return_complex" } }

-- the window as n_fft points: ones by default; a shorter one zero-padded on both sides
local function full_window(fname, window, n_fft, win_length, like)
  win_length = win_length or n_fft
  if win_length <= 0 or win_length > n_fft then
    U.errorf("%s: expected 0 < win_length <= n_fft, but got win_length=%d", fname, win_length)
  end
  local dt = like:is_complex() and (like.dtype == torch.complex128 and torch.float64 or torch.float32) or like.dtype
  window = window or torch.ones(win_length, { dtype = dt, device = like.device })
  if window:dim() ~= 1 or window:size(0) ~= win_length then
    U.errorf("%s: expected a 1D window tensor of size equal to win_length=%d, but got window with size %s", fname,
      win_length, tostring(window:size()))
  end
  if win_length == n_fft then return window end
  local left = (n_fft - win_length) // 2
  return torch.cat({ torch.zeros(left, { dtype = window.dtype, device = window.device }), window,
    torch.zeros(n_fft - win_length - left, { dtype = window.dtype, device = window.device }) })
end

-- x [B, L] padded by p on both sides of the last dim
local function pad_signal(x, p, mode)
  local L = x:size(-1)
  local left, right = {}, {}
  if mode == "constant" then
    local z = torch.zeros(x:size(0), p, { dtype = x.dtype, device = x.device })
    return torch.cat({ z, x, z }, -1)
  elseif mode == "reflect" then
    if p >= L then U.errorf("stft: padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension 1 of input %s", p, p, tostring(x:size())) end
    for i = 1, p do left[i] = p - i + 1; right[i] = L - 1 - i end
  elseif mode == "replicate" then
    for i = 1, p do left[i] = 0; right[i] = L - 1 end
  elseif mode == "circular" then
    for i = 1, p do left[i] = (L - p + i - 1) % L; right[i] = (i - 1) % L end
  else
    U.errorf("stft: unknown pad_mode '%s'", tostring(mode))
  end
  local function pick(idx) return x:index_select(-1, torch.tensor(idx, { dtype = torch.int64 }):to(x.device)) end
  return torch.cat({ pick(left), x, pick(right) }, -1)
end

function torch.stft(input, ...)
  local o = U.parse("stft", stft_spec, ...)
  if math.type(o.n_fft) ~= "integer" then U.errorf("stft(): argument 'n_fft' (position 2) must be int, not %s", U.typename(o.n_fft)) end
  local n_fft = o.n_fft
  local hop = o.hop_length or n_fft // 4
  if o.return_complex == nil and not input:is_complex() then
    U.error("stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release.")
  end
  if input:dim() ~= 1 and input:dim() ~= 2 then
    U.errorf("stft: expected a 1D or 2D tensor, but got %dD", input:dim())
  end
  if hop <= 0 then U.errorf("stft: expected hop_length > 0, but got hop_length=%d", hop) end
  local batched = input:dim() == 2
  local x = batched and input or input:unsqueeze(0)
  if o.center then x = pad_signal(x, n_fft // 2, o.pad_mode) end
  local L = x:size(-1)
  if n_fft <= 0 or n_fft > L then U.errorf("stft: expected 0 < n_fft < %d, but got n_fft=%d", L, n_fft) end
  local window = full_window("stft", o.window, n_fft, o.win_length, input)
  local frames = x:unfold(-1, n_fft, hop) * window -- [B, T, n_fft]
  local onesided = o.onesided
  if onesided == nil then onesided = not input:is_complex() and not window:is_complex() end
  local norm = o.normalized and "ortho" or "backward"
  local spec = onesided and torch.fft.rfft(frames, nil, -1, norm) or torch.fft.fft(frames, nil, -1, norm)
  spec = spec:transpose(-1, -2) -- [B, freq, T]
  if not batched then spec = spec:squeeze(0) end
  if o.return_complex == false then return torch.view_as_real(spec:contiguous()) end
  return spec
end

local istft_spec = { { "n_fft", U.REQUIRED }, { "hop_length" }, { "win_length" }, { "window" }, { "center", true },
  { "normalized", false }, { "onesided" }, { "length" }, { "return_complex", false } }

function torch.istft(input, ...)
  local o = U.parse("istft", istft_spec, ...)
  if math.type(o.n_fft) ~= "integer" then U.errorf("istft(): argument 'n_fft' (position 2) must be int, not %s", U.typename(o.n_fft)) end
  local n_fft = o.n_fft
  local hop = o.hop_length or n_fft // 4
  if not input:is_complex() then U.error("istft requires a complex-valued input tensor") end
  if input:dim() ~= 2 and input:dim() ~= 3 then U.errorf("istft: expected a tensor of 2 or 3 dims, but got %dD", input:dim()) end
  local batched = input:dim() == 3
  local spec = batched and input or input:unsqueeze(0) -- [B, freq, T]
  local nfreq, T = spec:size(1), spec:size(2)
  local onesided = o.onesided
  if onesided == nil then onesided = nfreq ~= n_fft end
  if onesided and nfreq ~= n_fft // 2 + 1 then
    U.errorf("istft: expected the frequency dimension (%d) of the input to equal n_fft / 2 + 1 when onesided=True, but got %d", n_fft // 2 + 1, nfreq)
  end
  if not onesided and nfreq ~= n_fft then
    U.errorf("istft: expected the frequency dimension of the input to equal n_fft (%d) when onesided=False, but got %d", n_fft, nfreq)
  end
  local norm = o.normalized and "ortho" or "backward"
  local cols = spec:transpose(1, 2) -- [B, T, freq]
  local frames
  if onesided then frames = torch.fft.irfft(cols, n_fft, -1, norm)
  else
    frames = torch.fft.ifft(cols, n_fft, -1, norm)
    if not o.return_complex then frames = frames.real end
  end
  local window = full_window("istft", o.window, n_fft, o.win_length, frames)
  frames = frames * window
  local B, total = frames:size(0), n_fft + hop * (T - 1)
  local idx = {}
  for t = 0, T - 1 do for k = 0, n_fft - 1 do idx[#idx + 1] = t * hop + k end end
  local index = torch.tensor(idx, { dtype = torch.int64 }):to(frames.device)
  local y = torch.zeros(B, total, { dtype = frames.dtype, device = frames.device })
    :index_add(1, index, frames:reshape(B, T * n_fft))
  local wsq = (window * window)
  local env = torch.zeros(total, { dtype = wsq.dtype, device = wsq.device })
    :index_add(0, index, wsq["repeat"](wsq, T))
  local start = o.center and n_fft // 2 or 0
  local stop = total
  if o.length then stop = start + o.length elseif o.center then stop = total - n_fft // 2 end
  local have = math.min(stop, total)
  y = y:narrow(1, start, have - start)
  env = env:narrow(0, start, have - start)
  if env:abs():min():item() < 1e-11 then
    U.error("istft: window overlap add min: " .. tostring(env:abs():min():item()) .. ", which is below 1e-11 (the NOLA constraint fails)")
  end
  y = y / env
  if stop > total then
    y = torch.cat({ y, torch.zeros(B, stop - total, { dtype = y.dtype, device = y.device }) }, 1)
  end
  if not batched then y = y:squeeze(0) end
  return y
end

local Tensor = torch.Tensor
Tensor.stft = torch.stft
Tensor.istft = torch.istft

return torch
