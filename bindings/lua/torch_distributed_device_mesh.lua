-- torch.distributed.device_mesh: DeviceMesh and init_device_mesh. A mesh lays global ranks
-- out in an n-D grid; each of its dimensions has a process group per 1-D slice along it (every
-- rank makes every slice's group, in the same order, as new_group needs), of which a rank keeps
-- the one it is in.
--   local mesh = dist.init_device_mesh("cpu", {2, 2}, {mesh_dim_names = {"dp", "tp"}})
--   dist.all_reduce(t, {group = mesh:get_group("tp")}); mesh["dp"]:get_local_rank()
local torch = require "torch"
local U = require "nn_util"
local dist = torch.distributed
local I = require "torch_distributed_internal"
local C, errorf, WORLD, NON_MEMBER = I.C, I.errorf, I.WORLD, I.NON_MEMBER

local device_mesh = {}
dist.device_mesh = device_mesh

local DeviceMesh = { __name = "torch.distributed.device_mesh.DeviceMesh" }

-- a nested Lua list of ranks, as the mesh's shape says
local function nested(t)
  local l = t:tolist()
  return type(l) == "table" and l or { l }
end

DeviceMesh.__tostring = function(m)
  local function show(v)
    if type(v) ~= "table" then return tostring(math.tointeger(v) or v) end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = show(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  local s = string.format("DeviceMesh('%s', %s", m.device_type, show(nested(m.mesh)))
  if m.mesh_dim_names then
    local q = {}
    for i, n in ipairs(m.mesh_dim_names) do q[i] = "'" .. n .. "'" end
    s = s .. ", mesh_dim_names=(" .. table.concat(q, ", ") .. (#q == 1 and ",)" or ")")
  end
  return s .. ")"
end

local function check_names(names, ndim, fn)
  if names == nil then return nil end
  if type(names) ~= "table" then errorf(3, "%s: mesh_dim_names must be a list of strings, got %s", fn, U.typename(names)) end
  if #names ~= ndim then
    errorf(3, "%s: mesh_dim_names must have same length as mesh_shape. Found len(mesh_dim_names): %d and len(mesh_shape):%d.", fn, #names, ndim)
  end
  local seen = {}
  for _, n in ipairs(names) do
    if type(n) ~= "string" then errorf(3, "%s: mesh_dim_names must be strings, got %s", fn, U.typename(n)) end
    if seen[n] then errorf(3, "%s: Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names %s", fn, table.concat(names, ", ")) end
    seen[n] = true
  end
  return table.move(names, 1, #names, 1, {})
end

local function new_mesh(device_type, mesh, names, groups)
  local m = setmetatable({ device_type = device_type, mesh = mesh, mesh_dim_names = names, ndim = mesh:dim(), _groups = groups }, DeviceMesh)
  local shape = {}
  for d = 0, mesh:dim() - 1 do shape[d + 1] = mesh:size(d) end
  m.shape = shape
  -- this rank's coordinate (nil when the mesh does not hold it)
  local me = C.rank()
  local flat = mesh:reshape(-1):tolist()
  for i, r in ipairs(flat) do
    if r == me then
      local coord, rest = {}, i - 1
      for d = #shape, 1, -1 do coord[d] = rest % shape[d]; rest = rest // shape[d] end
      m._coordinate = coord
    end
  end
  return m
end

-- the group of each dimension: the slices along dim d are the rows of mesh with d moved last
local function make_groups(mesh, world)
  local groups = {}
  local flat = mesh:reshape(-1):tolist()
  local whole = #flat == world
  for i, r in ipairs(flat) do whole = whole and r == i - 1 end
  for d = 0, mesh:dim() - 1 do
    if mesh:dim() == 1 and whole then
      groups[1] = WORLD
    else
      local n = mesh:size(d)
      local rows = mesh:movedim(d, -1):reshape(-1, n):tolist()
      local mine = NON_MEMBER
      for _, ranks in ipairs(rows) do
        local g = dist.new_group(ranks)
        if g ~= NON_MEMBER then mine = g end
      end
      groups[d + 1] = mine
    end
  end
  return groups
end

-- DeviceMesh(device_type, mesh, {mesh_dim_names=, backend_override=}): mesh is a tensor or a
-- nested list of global ranks; every rank of the default group makes it, in the same order
local function mesh_init(device_type, mesh, ...)
  local o = U.parse("DeviceMesh", { { "mesh_dim_names" }, { "backend_override" }, { "_init_backend", true } }, ...)
  if type(device_type) ~= "string" then errorf(3, "DeviceMesh: device_type must be a string, got %s", U.typename(device_type)) end
  if o.backend_override ~= nil then errorf(3, "DeviceMesh: backend_override is not supported; every dimension uses the default group's backend") end
  if not torch.is_tensor(mesh) then mesh = torch.tensor(mesh, { dtype = torch.int64 }) end
  mesh = mesh:to("cpu", torch.int64):contiguous()
  if mesh:dim() == 0 then mesh = mesh:reshape(1) end
  local names = check_names(o.mesh_dim_names, mesh:dim(), "DeviceMesh")
  if not C.is_initialized() then dist.init_process_group(dist.get_default_backend_for_device(device_type)) end
  local world = C.size()
  if mesh:numel() > world then errorf(3, "Mesh should not be bigger than default world size %d, but found %d ranks!", world, mesh:numel()) end
  local seen = {}
  for _, r in ipairs(mesh:reshape(-1):tolist()) do
    if r < 0 or r >= world then errorf(3, "DeviceMesh: rank %d is not in the default group (world size %d)", r, world) end
    if seen[r] then errorf(3, "DeviceMesh: rank %d appears twice in the mesh", r) end
    seen[r] = true
  end
  return new_mesh(device_type, mesh, names, make_groups(mesh, world))
end

device_mesh.DeviceMesh = setmetatable({}, { __index = DeviceMesh, __call = function(_, ...) return mesh_init(...) end,
  __tostring = function() return "<class 'torch.distributed.device_mesh.DeviceMesh'>" end })

-- init_device_mesh(device_type, mesh_shape, {mesh_dim_names=, backend_override=}): ranks
-- 0..prod(mesh_shape)-1 in row-major order; initializes the default group if needed
function device_mesh.init_device_mesh(device_type, mesh_shape, ...)
  local o = U.parse("init_device_mesh", { { "mesh_dim_names" }, { "backend_override" } }, ...)
  if type(device_type) ~= "string" then errorf(2, "init_device_mesh: device_type must be a string, got %s", U.typename(device_type)) end
  if device_type:find(":") then
    errorf(2, "Device type with index is not supported but got %s. If you maintained a 'torch.device' object, it's recommended to pass in 'device.type'.", device_type)
  end
  if type(mesh_shape) ~= "table" or #mesh_shape == 0 then errorf(2, "init_device_mesh: mesh_shape must be a non-empty list of sizes") end
  local n = 1
  for _, s in ipairs(mesh_shape) do
    if math.type(s) ~= "integer" or s < 1 then errorf(2, "init_device_mesh: mesh_shape must hold positive integers, got %s", tostring(s)) end
    n = n * s
  end
  check_names(o.mesh_dim_names, #mesh_shape, "init_device_mesh")
  if not C.is_initialized() then dist.init_process_group(dist.get_default_backend_for_device(device_type)) end
  if device_type == "cuda" and torch.cuda.is_available() then
    torch.cuda.set_device(math.tointeger(tonumber(os.getenv("LOCAL_RANK") or "")) or C.rank() % torch.cuda.device_count())
  end
  local mesh = torch.arange(n, { dtype = torch.int64 }):view(mesh_shape)
  return mesh_init(device_type, mesh, { mesh_dim_names = o.mesh_dim_names, backend_override = o.backend_override })
end

dist.init_device_mesh = device_mesh.init_device_mesh
dist.DeviceMesh = device_mesh.DeviceMesh

-- ---- methods ----

-- a dimension: its index (0-based) or its name
local function dim_of(m, dim, fn)
  if dim == nil then
    if m.ndim > 1 then
      errorf(3, "Found the DeviceMesh have %d dimensions. Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.", m.ndim)
    end
    return 0
  end
  if type(dim) == "string" then
    for i, n in ipairs(m.mesh_dim_names or {}) do if n == dim then return i - 1 end end
    errorf(3, "%s: Mesh dimension '%s' does not exist. Available mesh dimensions are: mesh_dim_names=%s", fn, dim,
      m.mesh_dim_names and ("(" .. table.concat(m.mesh_dim_names, ", ") .. ")") or "None")
  end
  if math.type(dim) ~= "integer" or dim < -m.ndim or dim >= m.ndim then
    errorf(3, "%s: mesh_dim %s is out of range for a mesh of %d dimensions", fn, tostring(dim), m.ndim)
  end
  return dim % m.ndim
end

-- size(mesh_dim): the size of a dimension; size(): the number of ranks
function DeviceMesh:size(dim)
  if dim == nil then return self.mesh:numel() end
  return self.shape[dim_of(self, dim, "size") + 1]
end

function DeviceMesh:get_group(dim) return self._groups[dim_of(self, dim, "get_group") + 1] end

function DeviceMesh:get_all_groups() return table.move(self._groups, 1, #self._groups, 1, {}) end

function DeviceMesh:get_local_rank(dim) return dist.get_rank(self:get_group(dim)) end

function DeviceMesh:get_rank() return C.rank() end

-- this rank's index along each dimension (nil if the mesh does not hold it)
function DeviceMesh:get_coordinate()
  return self._coordinate and table.move(self._coordinate, 1, #self._coordinate, 1, {})
end

-- mesh["dp"] or mesh[{"dp", "tp"}]: the sub-mesh of those dimensions holding this rank, over
-- the groups the parent made (no new groups)
local function submesh(m, names)
  if m.mesh_dim_names == nil then errorf(3, "Cannot slice a DeviceMesh without mesh_dim_names!") end
  if type(names) == "string" then names = { names } end
  local dims, keep = {}, {}
  for i, n in ipairs(names) do
    dims[i] = dim_of(m, n, "DeviceMesh.__getitem__")
    if keep[dims[i]] then errorf(3, "DeviceMesh.__getitem__: dimension '%s' is named twice", n) end
    keep[dims[i]] = true
  end
  for i = 2, #dims do
    if dims[i] < dims[i - 1] then
      errorf(3, "Invalid mesh_dim_names (%s) specified. Found mesh dim indices to slice: [%s]. Mesh dim indices should be in ascending order.",
        table.concat(names, ", "), table.concat(dims, ", "))
    end
  end
  if not m._coordinate then errorf(3, "DeviceMesh.__getitem__: rank %d is not in this mesh", C.rank()) end
  local t = m.mesh
  for d = m.ndim - 1, 0, -1 do -- fix the other dimensions at this rank's coordinate
    if not keep[d] then t = t:select(d, m._coordinate[d + 1]) end
  end
  local groups, sub_names = {}, {}
  for i, d in ipairs(dims) do groups[i], sub_names[i] = m._groups[d + 1], m.mesh_dim_names[d + 1] end
  return new_mesh(m.device_type, t:contiguous(), sub_names, groups)
end

local optional_fields = { mesh_dim_names = true, _coordinate = true }
DeviceMesh.__index = function(m, k)
  local v = DeviceMesh[k]
  if v ~= nil or optional_fields[k] then return v end
  if type(k) == "string" or (type(k) == "table" and getmetatable(k) == nil) then return submesh(m, k) end
  return nil
end

return device_mesh
