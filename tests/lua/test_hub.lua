-- torch.hub: nothing is downloaded; the functions that would download say what to do instead.
local T = ...

T.test("torch.hub", function()
  local home = os.getenv("TORCH_HOME")
  local default = home and home .. "/hub" or ((os.getenv("XDG_CACHE_HOME") or (os.getenv("HOME") .. "/.cache")) .. "/torch/hub")
  T.eq(torch.hub.get_dir(), default, "get_dir default")
  torch.hub.set_dir("/tmp/nnrepl-hub")
  T.eq(torch.hub.get_dir(), "/tmp/nnrepl-hub", "set_dir")
  torch.hub.set_dir("~/hub-here")
  T.eq(torch.hub.get_dir(), os.getenv("HOME") .. "/hub-here", "set_dir expands ~")
  torch.hub.set_dir(default)
  for _, fn in ipairs({"load", "list", "help", "load_state_dict_from_url", "download_url_to_file"}) do
    T.raises(function() torch.hub[fn]("pytorch/vision", "resnet18") end, "~nnrepl downloads nothing at run time", fn)
  end
  T.raises(function() torch.hub.load("pytorch/vision", "resnet18", {pretrained = true}) end,
    "~model:load_state_dict(torch.load(path))", "says what to do instead")
end)

T.test("load_state_dict_from_url(check_hash = true) checks the name's sha256 prefix", function()
  local hashlib = require "hashlib"
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local tmp = dir .. "/w.pth"
  torch.save({w = torch.arange(3)}, tmp)
  local sha = hashlib.file_digest(tmp, "sha256"):hexdigest()
  local good = "net-" .. sha:sub(1, 8) .. ".pth"
  local bad = "net-" .. (sha:sub(1, 1) == "0" and "1" or "0") .. sha:sub(2, 8) .. ".pth"
  os.rename(tmp, dir .. "/" .. good)
  local f = io.open(dir .. "/" .. good, "rb"); local bytes = f:read("a"); f:close()
  f = io.open(dir .. "/" .. bad, "wb"); f:write(bytes); f:close()
  local sd = torch.hub.load_state_dict_from_url("https://h/" .. good, {model_dir = dir, check_hash = true})
  T.eq(sd.w:tolist(), {0, 1, 2})
  T.raises(function() torch.hub.load_state_dict_from_url("https://h/" .. bad, {model_dir = dir, check_hash = true}) end,
    "~invalid hash value (expected \"" .. bad:match("%-(%x+)%.") .. "\", got \"" .. sha .. "\")")
  T.eq(torch.hub.load_state_dict_from_url("https://h/" .. bad, {model_dir = dir}).w:tolist(), {0, 1, 2}, "unchecked by default")
  os.execute("rm -rf " .. dir)
end)
