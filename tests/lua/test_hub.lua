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
