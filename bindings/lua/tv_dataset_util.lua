-- Helpers of the file-reading datasets of tv_datasets_more.lua and tv_datasets_annot.lua:
-- index checks, the transforms, torchvision's verify_str_arg, the "files not found" errors
-- (nothing is ever downloaded), directory listings and small text-file readers.
local U = require "nn_util"
local tvio = require "tv_io"
local IC = tvio._C

local M = {}

function M.check_index(self, i, n)
  if math.type(i) ~= "integer" then U.errorf("%s: index must be an integer, got %s", getmetatable(self).__name, tostring(i)) end
  if i < 0 then i = i + n end
  if i < 0 or i >= n then U.errorf("%s index out of range", getmetatable(self).__name) end
  return i
end

function M.finish(self, img, target)
  if self.transform ~= nil then img = self.transform(img) end
  if self.target_transform ~= nil then target = self.target_transform(target) end
  return img, target
end

-- the datasets that take transforms (a joint one) or transform / target_transform: set them on self,
-- and apply them to a sample
function M.joint_transforms(self, o)
  if o.transforms ~= nil and (o.transform ~= nil or o.target_transform ~= nil) then
    U.errorf("Only transforms or transform/target_transform can be passed as argument")
  end
  self.transform, self.target_transform, self.transforms = o.transform, o.target_transform, o.transforms
end
function M.apply_joint(self, img, target)
  if self.transforms ~= nil then return self.transforms(img, target) end
  return M.finish(self, img, target)
end

-- __len and __getitem of datasets that keep file lists: self._image_files[i] and self._labels[i]
-- (list_*), or self._samples[i] = {path, target} (samples_*); images through self.loader
function M.list_len(self) return #self._image_files end
function M.list_item(self, index)
  index = M.check_index(self, index, #self._image_files)
  return M.finish(self, self.loader(self._image_files[index + 1]), self._labels[index + 1])
end
function M.samples_len(self) return #self._samples end
function M.samples_item(self, index)
  index = M.check_index(self, index, #self._samples)
  local s = self._samples[index + 1]
  return M.finish(self, self.loader(s[1]), s[2])
end

-- tv_matfile.loadmat(path), its errors prefixed with the dataset's name
function M.loadmat(cls, path)
  local ok, m = pcall(require("tv_matfile").loadmat, path)
  if not ok then U.errorf("%s: %s", cls, tostring(m)) end
  return m
end

-- {name -> 0-based index} of a list of names
function M.index_of(names)
  local t = {}
  for i, c in ipairs(names) do t[c] = i - 1 end
  return t
end

-- torchvision's verify_str_arg
function M.verify(value, arg, valid)
  for _, v in ipairs(valid) do if v == value then return value end end
  U.errorf("Unknown value '%s' for argument %s. Valid values are {'%s'}.", tostring(value), arg, table.concat(valid, "', '"))
end

function M.root(cls, root)
  root = require("pyos_sys").pathlike(root)
  if type(root) ~= "string" then U.errorf("%s: root must be a path, got %s", cls, U.typename(root)) end
  root = root:gsub("/+$", "")
  return root == "" and "/" or root
end

function M.kind(path) return IC.kind(path) end

-- Raise the error for missing data: what (the files, and where they come from) belongs in where.
function M.missing(cls, path, download, what, where)
  if download then
    U.errorf("%s: download=true, but nnrepl downloads nothing: put %s in %s", cls, what, where)
  end
  U.errorf("%s: %s not found: put %s in %s (nothing is downloaded)", cls, path, what, where)
end

-- path must exist (as kind "file" or "dir"), else M.missing
function M.need(cls, path, kind, download, what, where)
  if IC.kind(path) ~= kind then M.missing(cls, path, download, what, where) end
  return path
end

-- the names in dir (of kind "file" / "dir", or all), sorted
function M.listdir(cls, dir, kind)
  local entries, err = IC.listdir(dir)
  if not entries then U.errorf("%s: %s", cls, err) end
  local out = {}
  for name, k in pairs(entries) do
    if kind == nil or k == kind then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

function M.read_text(cls, path)
  local f, err = io.open(path, "rb")
  if not f then U.errorf("%s: cannot open %s (%s)", cls, path, tostring(err):gsub("^[^:]*: ", "")) end
  local s = f:read("a")
  f:close()
  return (s:gsub("^\239\187\191", "")) -- a UTF-8 byte order mark
end

-- the decoded JSON of a file (json.lua's tables), errors naming the file
function M.read_json(cls, path)
  return require("json").decode(M.read_text(cls, path), function(msg, p)
    U.errorf("%s: %s: bad JSON (%s at byte %d)", cls, path, msg, p)
  end)
end

-- the lines of a text file, without line ends
function M.lines(cls, path)
  local out = {}
  for line in (M.read_text(cls, path) .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = (line:gsub("\r$", "")) end
  if out[#out] == "" then out[#out] = nil end
  return out
end

-- Python's csv.reader fields of one line (csv.lua's parser), for delimiter d;
-- skip_space: skipinitialspace (spaces after a delimiter are dropped)
function M.csv_fields(line, d, skip_space)
  if line == "" then return { "" } end
  return require("csv").parse_line(line, { delimiter = d, skipinitialspace = skip_space or false })
end

-- csv.DictReader: a list of {column -> value} over the rows after the header
function M.csv_dicts(cls, path, d, skip_space)
  local lines = M.lines(cls, path)
  if #lines == 0 then U.errorf("%s: %s is empty", cls, path) end
  local head = M.csv_fields(lines[1], d or ",", skip_space)
  local rows = {}
  for k = 2, #lines do
    if lines[k] ~= "" then
      local f, row = M.csv_fields(lines[k], d or ",", skip_space), {}
      for j, name in ipairs(head) do row[name] = f[j] end
      rows[#rows + 1] = row
    end
  end
  return rows, head
end

function M.int(cls, s, where)
  local v = math.tointeger(tonumber(s))
  if v == nil then U.errorf("%s: %s: '%s' is not an integer", cls, where, tostring(s)) end
  return v
end

-- PIL.Image.open(path), and the default loader (converted to RGB)
function M.open(path) return tvio.Image.open(path) end
function M.rgb_loader(path) return tvio.Image.open(path):convert("RGB") end

return M
