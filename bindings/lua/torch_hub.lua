-- torch.hub: nnrepl downloads nothing at run time, so load, list, help, load_state_dict_from_url
-- and download_url_to_file raise an error saying what to do instead; get_dir / set_dir work
-- ($TORCH_HOME/hub, by default $XDG_CACHE_HOME/torch/hub or ~/.cache/torch/hub).
local torch = require "torch"
local U = require "nn_util"

local hub = {}
torch.hub = hub

local hub_dir

local function expanduser(p)
  local home = os.getenv("HOME")
  if home and (p == "~" or p:sub(1, 2) == "~/") then return home .. p:sub(2) end
  return p
end

function hub.get_dir()
  if hub_dir then return hub_dir end
  local home = os.getenv("TORCH_HOME") or ((os.getenv("XDG_CACHE_HOME") or "~/.cache") .. "/torch")
  return expanduser(home) .. "/hub"
end

function hub.set_dir(d)
  if type(d) ~= "string" then U.errorf("set_dir: expected a path, got %s", U.typename(d)) end
  hub_dir = expanduser(d)
end

local build = "build the model in Lua instead (torchvision.models.resnet18(), or your own nn.Module) and load weights " ..
  "from a local file with model:load_state_dict(torch.load(path)); a PyTorch checkpoint converts to one in Python with " ..
  "safetensors.torch.save_file(torch.load(f), 'model.safetensors')"

local function refuse(fn, what)
  return function(first)
    U.errorf("torch.hub.%s(%s): nnrepl downloads nothing at run time (%s); %s", fn,
      type(first) == "string" and U.pyrepr(first) or "...", what, build)
  end
end

hub.load = refuse("load", "no hub repositories, no hubconf.py, no pretrained weights")
hub.list = refuse("list", "no hub repositories")
hub.help = refuse("help", "no hub repositories")
hub.load_state_dict_from_url = refuse("load_state_dict_from_url", "fetch the file yourself")
hub.download_url_to_file = refuse("download_url_to_file", "fetch the file yourself")

return hub
