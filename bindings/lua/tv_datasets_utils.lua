-- torchvision.datasets.utils: file checks (calculate_md5, check_md5, check_integrity), directory
-- listings (list_dir, list_files) and verify_str_arg. nnrepl downloads nothing: download_url,
-- download_file_from_google_drive and download_and_extract_archive say where the file must go.
local U = require "nn_util"
local hashlib = require "hashlib"
local DU = require "tv_dataset_util"

local M = {}

function M.calculate_md5(fpath, ...)
  U.parse("calculate_md5", {{"chunk_size", 1024 * 1024}}, ...)
  if type(fpath) ~= "string" then U.errorf("calculate_md5: expected a path, got %s", U.typename(fpath)) end
  return hashlib.file_digest(fpath, "md5"):hexdigest()
end

function M.check_md5(fpath, md5, ...) return md5 == M.calculate_md5(fpath, ...) end

-- false when the file is missing or its md5 differs (md5 nil: the file exists)
function M.check_integrity(fpath, md5)
  if DU.kind(fpath) ~= "file" then return false end
  if md5 == nil then return true end
  return M.check_md5(fpath, md5)
end

local function expand(root) return (root:gsub("^~", os.getenv("HOME") or "~")) end

-- names of root's folders (or their paths with prefix = true)
function M.list_dir(root, ...)
  local o = U.parse("list_dir", {{"prefix", false}}, ...)
  root = expand(root)
  local out = DU.listdir("list_dir", root, "dir")
  if o.prefix then for i, n in ipairs(out) do out[i] = root .. "/" .. n end end
  return out
end

-- names of root's files ending with suffix (a string or a list of them)
function M.list_files(root, suffix, ...)
  local o = U.parse("list_files", {{"prefix", false}}, ...)
  root = expand(root)
  local suffixes = type(suffix) == "table" and suffix or {suffix}
  local out = {}
  for _, n in ipairs(DU.listdir("list_files", root, "file")) do
    for _, s in ipairs(suffixes) do
      if n:sub(-#s) == s then out[#out + 1] = o.prefix and (root .. "/" .. n) or n; break end
    end
  end
  return out
end

function M.verify_str_arg(value, arg, valid_values, custom_msg)
  if type(value) ~= "string" then
    U.errorf("Expected type str%s, but got type %s.", arg and (" for argument " .. arg) or "", U.typename(value))
  end
  if valid_values == nil then return value end
  for _, v in ipairs(valid_values) do if v == value then return value end end
  if custom_msg then U.error(custom_msg) end
  local shown = {}
  for i, v in ipairs(valid_values) do shown[i] = "'" .. v .. "'" end
  U.errorf("Unknown value '%s' for argument %s. Valid values are {%s}.", value, tostring(arg), table.concat(shown, ", "))
end

local function no_download(fn)
  return function(url, root, filename)
    local name = filename or (type(url) == "string" and url:gsub("[?#].*$", ""):match("([^/]+)$")) or "the file"
    U.errorf("%s: nnrepl downloads nothing at run time: fetch %s on a machine with network and put it in %s as %s",
      fn, tostring(url), tostring(root), name)
  end
end
M.download_url = no_download("download_url")
M.download_file_from_google_drive = no_download("download_file_from_google_drive")
M.download_and_extract_archive = no_download("download_and_extract_archive")

return M
