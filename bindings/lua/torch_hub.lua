-- torch.hub: nnrepl downloads nothing at run time, so load, list, help and download_url_to_file
-- raise an error saying what to do instead; load_state_dict_from_url reads the file PyTorch would
-- have cached (<get_dir()>/checkpoints/<name>) and says where to put it when absent; get_dir / set_dir work
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
  "from a local file with model:load_state_dict(torch.load(path)) (torch.load reads PyTorch's .pth files)"

local function refuse(fn, what)
  return function(first)
    U.errorf("torch.hub.%s(%s): nnrepl downloads nothing at run time (%s); %s", fn,
      type(first) == "string" and U.pyrepr(first) or "...", what, build)
  end
end

hub.load = refuse("load", "no hub repositories, no hubconf.py, no pretrained weights")
hub.list = refuse("list", "no hub repositories")
hub.help = refuse("help", "no hub repositories")
-- The checkpoint at url, from the cache folder where PyTorch looks before downloading:
-- model_dir (default <get_dir()>/checkpoints) / file_name (default the url's last path part).
function hub.load_state_dict_from_url(url, ...)
  local o = U.parse("load_state_dict_from_url", { { "model_dir" }, { "map_location" }, { "progress", true },
    { "check_hash", false }, { "file_name" }, { "weights_only", false } }, ...)
  if type(url) ~= "string" then U.errorf("load_state_dict_from_url: expected a url string, got %s", U.typename(url)) end
  local dir = o.model_dir and expanduser(o.model_dir) or (hub.get_dir() .. "/checkpoints")
  local name = o.file_name or url:gsub("[?#].*$", ""):match("([^/]+)$")
  if not name then U.errorf("load_state_dict_from_url: no file name in url %s", U.pyrepr(url)) end
  local path = dir .. "/" .. name
  local f = io.open(path, "rb")
  if not f then
    U.errorf("torch.hub.load_state_dict_from_url: %s is not in the cache, and nnrepl downloads nothing at run time: " ..
      "fetch %s on a machine with network and put it at %s", name, url, path)
  end
  f:close()
  -- check_hash: the sha256 of the file starts with the hex digits after the name's last "-"
  -- (PyTorch checks downloads so; the file here was put by hand, so it is checked when asked)
  local prefix = o.check_hash and name:match("%-(%x+)%.")
  if prefix then
    local got = require("hashlib").file_digest(path, "sha256"):hexdigest()
    if got:sub(1, #prefix) ~= prefix then
      U.errorf('invalid hash value (expected "%s", got "%s"): %s is not the file of %s', prefix, got, path, url)
    end
  end
  return torch.load(path, { map_location = o.map_location, weights_only = o.weights_only })
end
hub.download_url_to_file = refuse("download_url_to_file", "fetch the file yourself")

return hub
