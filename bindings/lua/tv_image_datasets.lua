-- Image-file datasets of torchvision.datasets: ImageFolder (root/class/xxx.png,
-- classes sorted, class_to_idx) and CsvImageDataset (document 000's MyDataset:
-- `path,label` rows, paths relative to the CSV's folder). Both extend
-- torch.utils.data.Dataset: __getitem(i) (0-based) returns image, label (ds[i]
-- is the list {image, label}, ds:get(i) the two values), #ds the length.
-- The default loader is Image.open(path):convert("RGB"), as torchvision's.
local torch = require "torch"
local Image = require("tv_io").Image
local C = require("tv_io")._C

local M = {}

M.IMG_EXTENSIONS = {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}

local function default_loader(path) return Image.open(path):convert("RGB") end
M.default_loader = default_loader

local data = (torch.utils and torch.utils.data) or require "torch_data"
local function new_class(name) return data.Dataset:extend(name) end

local function check_opts(fn, opts, names)
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(fn .. ": options must be a table, got " .. type(opts), 4) end
  for k in pairs(opts) do
    local known = false
    for _, n in ipairs(names) do known = known or n == k end
    if not known then error(string.format("%s: unknown keyword '%s'", fn, tostring(k)), 4) end
  end
  return opts
end

local function check_index(fn, index, n)
  if math.type(index) ~= "integer" then error(fn .. ": index must be an integer, got " .. tostring(index), 3) end
  if index < 0 then index = index + n end
  if index < 0 or index >= n then error(string.format("%s: index %d is out of range for %d samples", fn, index, n), 3) end
  return index
end

local function finish(self, sample, target)
  if self.transform then sample = self.transform(sample) end
  if self.target_transform then target = self.target_transform(target) end
  return sample, target
end

---------------------------------------------------------------------------
-- ImageFolder
---------------------------------------------------------------------------

local function has_extension(name, exts)
  local lower = name:lower()
  for _, e in ipairs(exts) do
    if lower:sub(-#e) == e then return true end
  end
  return false
end

-- entries of a directory, or an error naming it
local function listdir(fn, path)
  local entries, err = C.listdir(path)
  if not entries then error(fn .. ": " .. err, 4) end
  return entries
end

-- every file under dir (following links), in Python's sorted(os.walk(dir)) order
local function walk(fn, dir, out)
  local dirs = {}
  local function visit(d, depth)
    if depth > 64 then error(fn .. ": directories nested too deeply under '" .. dir .. "'", 5) end
    dirs[#dirs + 1] = d
    for name, kind in pairs(listdir(fn, d)) do
      if kind == "dir" then visit(d .. "/" .. name, depth + 1) end
    end
  end
  visit(dir, 0)
  table.sort(dirs)
  for _, d in ipairs(dirs) do
    local files = {}
    for name, kind in pairs(listdir(fn, d)) do
      if kind == "file" then files[#files + 1] = name end
    end
    table.sort(files)
    for _, f in ipairs(files) do out[#out + 1] = d .. "/" .. f end
  end
  return out
end

local DatasetFolder = new_class("DatasetFolder")
M.DatasetFolder = DatasetFolder

-- the sorted class folders of dir and their indices (DatasetFolder.find_classes)
function DatasetFolder.find_classes(self_or_dir, dir)
  dir = dir or self_or_dir
  local classes = {}
  for name, kind in pairs(listdir("find_classes", dir)) do
    if kind == "dir" then classes[#classes + 1] = name end
  end
  table.sort(classes)
  if #classes == 0 then error("Couldn't find any class folder in " .. dir .. ".", 3) end
  local class_to_idx = {}
  for i, c in ipairs(classes) do class_to_idx[c] = i - 1 end
  return classes, class_to_idx
end

-- DatasetFolder.make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty): the
-- {path, class_index} samples, class by class in sorted order, files in sorted walk order
function DatasetFolder.make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)
  if (extensions == nil) == (is_valid_file == nil) then
    error("Both extensions and is_valid_file cannot be None or not None at the same time", 3)
  end
  if type(extensions) == "string" then extensions = {extensions} end
  local valid = is_valid_file or function(p) return has_extension(p, extensions) end
  local classes = {}
  for c in pairs(class_to_idx) do classes[#classes + 1] = c end
  table.sort(classes)
  local samples, empty = {}, {}
  for _, c in ipairs(classes) do
    local before = #samples
    local d = directory .. "/" .. c
    if C.kind(d) == "dir" then
      for _, path in ipairs(walk("make_dataset", d, {})) do
        if valid(path) then samples[#samples + 1] = {path, class_to_idx[c]} end
      end
    end
    if #samples == before then empty[#empty + 1] = c end
  end
  if #empty > 0 and not allow_empty then
    local msg = "Found no valid file for the classes " .. table.concat(empty, ", ") .. ". "
    if extensions then msg = msg .. "Supported extensions are: " .. table.concat(extensions, ", ") end
    error(msg, 3)
  end
  return samples
end

local folder_keys = {"root", "loader", "extensions", "transform", "target_transform", "is_valid_file", "allow_empty"}

-- the shared constructor: o has the keys above; cls names the class in messages
local function folder_init(self, cls, o)
  local root = require("pyos_sys").pathlike(o.root)
  if type(root) ~= "string" then error(cls .. ": root must be a path, got " .. type(root), 4) end
  root = root:gsub("(.)/+$", "%1")
  if o.loader == nil then error(cls .. ": loader is required", 4) end
  self.root, self.loader = root, o.loader
  self.transform, self.target_transform = o.transform, o.target_transform
  local ok, classes, class_to_idx = pcall(self.find_classes, self, root)
  if not ok then error(cls .. ": " .. tostring(classes):gsub("^[^\n]-:%d+: ", ""), 4) end
  local exts = o.extensions
  if type(exts) == "string" then exts = {exts} end
  local ok2, samples = pcall(DatasetFolder.make_dataset, root, class_to_idx, exts, o.is_valid_file, o.allow_empty)
  if not ok2 then error(cls .. ": " .. tostring(samples):gsub("^[^\n]-:%d+: ", ""), 4) end
  self.classes, self.class_to_idx, self.extensions = classes, class_to_idx, exts
  self.samples, self.targets = samples, {}
  for i, s in ipairs(samples) do self.targets[i] = s[2] end
end

-- DatasetFolder(root, loader, extensions, {transform, target_transform, is_valid_file, allow_empty})
-- or DatasetFolder{root=..., loader=..., ...}
function DatasetFolder:__init(...)
  local args, n = {...}, select("#", ...)
  local o = {}
  if n > 0 and type(args[n]) == "table" and getmetatable(args[n]) == nil and args[n][1] == nil then -- keywords, not a list of extensions
    o = check_opts("DatasetFolder", args[n], folder_keys)
    n = n - 1
  end
  for i = 1, n do
    if o[folder_keys[i]] ~= nil then error("DatasetFolder: got multiple values for argument '" .. folder_keys[i] .. "'", 3) end
    o[folder_keys[i]] = args[i]
  end
  folder_init(self, "DatasetFolder", o)
end

function DatasetFolder:__len() return #self.samples end

function DatasetFolder:__getitem(index)
  index = check_index(getmetatable(self).__name, index, #self.samples)
  local s = self.samples[index + 1]
  return finish(self, self.loader(s[1]), s[2])
end

function DatasetFolder:__tostring()
  return string.format("Dataset %s\n    Number of datapoints: %d\n    Root location: %s", getmetatable(self).__name,
    #self.samples, self.root)
end

-- ImageFolder: a DatasetFolder with the image loader and IMG_EXTENSIONS (extensions= may replace them)
local ImageFolder = DatasetFolder:extend("ImageFolder")
M.ImageFolder = ImageFolder

-- ImageFolder(root, {transform, target_transform, loader, is_valid_file, extensions, allow_empty}), or
-- Python's positional order ImageFolder(root, transform, target_transform, loader, is_valid_file, allow_empty)
function ImageFolder:__init(root, opts, ...)
  root = require("pyos_sys").pathlike(root)
  if type(root) == "table" and opts == nil then root, opts = root.root, root end
  -- a transform (a function, or a callable object such as Compose) rather than an options table
  if type(opts) == "function" or (type(opts) == "table" and getmetatable(opts) ~= nil) then
    local a = table.pack(...)
    opts = {transform = opts, target_transform = a[1], loader = a[2], is_valid_file = a[3], allow_empty = a[4]}
  elseif select("#", ...) > 0 then
    error("ImageFolder: the arguments after root are positional only when the second is a transform; "
      .. "otherwise give them in the options table", 3)
  end
  opts = check_opts("ImageFolder", opts, {"root", "transform", "target_transform", "loader", "is_valid_file",
    "extensions", "allow_empty"})
  if opts.is_valid_file and opts.extensions then
    error("ImageFolder: both extensions and is_valid_file cannot be given at the same time", 3)
  end
  local o = {root = root, loader = opts.loader or default_loader, transform = opts.transform,
    target_transform = opts.target_transform, is_valid_file = opts.is_valid_file, allow_empty = opts.allow_empty}
  if not opts.is_valid_file then o.extensions = opts.extensions or M.IMG_EXTENSIONS end
  folder_init(self, "ImageFolder", o)
  self.imgs = self.samples
end

---------------------------------------------------------------------------
-- CsvImageDataset
---------------------------------------------------------------------------

-- fields of one CSV line (RFC 4180 quoting), or nil and a message
local function csv_fields(line)
  local fields, i, n = {}, 1, #line
  while true do
    local field
    if line:sub(i, i) == '"' then
      local parts, j = {}, i + 1
      while true do
        local q = line:find('"', j, true)
        if not q then return nil, "unterminated quoted field" end
        parts[#parts + 1] = line:sub(j, q - 1)
        if line:sub(q + 1, q + 1) == '"' then
          parts[#parts + 1] = '"'
          j = q + 2
        else
          i = q + 1
          break
        end
      end
      field = table.concat(parts)
      if i <= n and line:sub(i, i) ~= "," then return nil, "text after a quoted field" end
    else
      local c = line:find(",", i, true) or n + 1
      field = line:sub(i, c - 1)
      i = c
    end
    fields[#fields + 1] = field
    if i > n then return fields end
    i = i + 1 -- past the comma
    if i > n then
      fields[#fields + 1] = ""
      return fields
    end
  end
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function as_label(s)
  s = trim(s)
  local v = math.tointeger(tonumber(s))
  return v
end

local CsvImageDataset = new_class("CsvImageDataset")
M.CsvImageDataset = CsvImageDataset

-- CsvImageDataset(csv_path, {transform, target_transform, loader, header, num_classes, check_files})
-- header: true / false, or nil to skip a first row whose label is not an integer (pandas
-- always takes the first row as the header). check_files (default true): every image must exist.
function CsvImageDataset:__init(csv_path, opts)
  opts = check_opts("CsvImageDataset", opts, {"transform", "target_transform", "loader", "header", "num_classes",
    "check_files"})
  if type(csv_path) ~= "string" then error("CsvImageDataset: csv_path must be a path, got " .. type(csv_path), 3) end
  local f, err = io.open(csv_path, "rb")
  if not f then error("CsvImageDataset: cannot open '" .. csv_path .. "': " .. tostring(err):gsub("^[^:]*: ", ""), 3) end
  local text = f:read("a")
  f:close()
  local dir = csv_path:match("^(.*)/[^/]*$") or "."
  self.csv_path, self.root = csv_path, dir
  self.transform, self.target_transform = opts.transform, opts.target_transform
  self.loader = opts.loader or default_loader
  local where = function(line) return string.format("CsvImageDataset: '%s' line %d", csv_path, line) end
  local samples, lineno, first = {}, 0, true
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if lineno == 1 then line = line:gsub("^\239\187\191", "") end -- UTF-8 byte order mark
    if line:match("^%s*$") then goto continue end
    do
      local fields, ferr = csv_fields(line)
      if not fields then error(where(lineno) .. ": " .. ferr, 3) end
      if #fields < 2 then error(where(lineno) .. ": expected 'path,label', got '" .. line .. "'", 3) end
      local label = as_label(fields[2])
      local is_header = first and (opts.header == true or (opts.header == nil and label == nil))
      first = false
      if not is_header then
        if label == nil then error(where(lineno) .. ": label '" .. fields[2] .. "' is not an integer", 3) end
        if label < 0 or (opts.num_classes and label >= opts.num_classes) then
          error(string.format("%s: label %d is out of range [0, %s)", where(lineno), label,
            opts.num_classes and tostring(opts.num_classes) or "inf"), 3)
        end
        local path = trim(fields[1])
        if path == "" then error(where(lineno) .. ": empty image path", 3) end
        if path:sub(1, 1) ~= "/" then path = dir .. "/" .. path end
        if opts.check_files ~= false and C.kind(path) ~= "file" then
          error(where(lineno) .. ": image '" .. path .. "' does not exist", 3)
        end
        samples[#samples + 1] = {path, label, lineno}
      end
    end
    ::continue::
  end
  self.samples, self.targets = samples, {}
  for i, s in ipairs(samples) do self.targets[i] = s[2] end
end

function CsvImageDataset:__len() return #self.samples end

function CsvImageDataset:__getitem(index)
  index = check_index("CsvImageDataset", index, #self.samples)
  local s = self.samples[index + 1]
  local ok, img = pcall(self.loader, s[1])
  if not ok then
    error(string.format("CsvImageDataset: '%s' line %d: %s", self.csv_path, s[3], tostring(img)), 2)
  end
  return finish(self, img, s[2])
end

function CsvImageDataset:__tostring()
  return string.format("Dataset CsvImageDataset\n    Number of datapoints: %d\n    CSV file: %s", #self.samples, self.csv_path)
end

return M
