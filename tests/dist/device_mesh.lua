-- torch.distributed.device_mesh: a 1-D mesh of the whole world, a 1-D mesh of part of it
-- (3 ranks and more) and a 2-D mesh (4 ranks: collectives over each dimension's groups,
-- coordinates, sub-meshes by name), against values computed here. Run by test_dist.sh
-- through the launcher with 2, 3 and 4 ranks; with the argument "nccl", on CUDA over NCCL
-- (one GPU a rank: the NCCL section of test_dist.sh).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local DM = dist.device_mesh

-- init_device_mesh initializes the default group itself
local dt = arg[1] == "nccl" and "cuda" or "cpu"
local backend = dt == "cuda" and "nccl" or "gloo"
local mesh = DM.init_device_mesh(dt, { tonumber(os.getenv("WORLD_SIZE")) | 0 }, { mesh_dim_names = { "dp" } })
H.check(dist.is_initialized() and dist.get_backend() == backend, "init_device_mesh made the default %s group", backend)
-- tensors on the mesh's device (init_device_mesh("cuda") picked this rank's GPU)
local function T(v) return torch.tensor(v, { device = dt }) end
local rank, world = dist.get_rank(), dist.get_world_size()
local function range(n) local t = {} for i = 0, n - 1 do t[#t + 1] = i end return t end

-- ---- 1-D, the whole world ----
H.check(mesh.ndim == 1 and mesh:size() == world and mesh:size(0) == world and mesh:size("dp") == world, "a 1-D mesh's sizes")
H.close(mesh.mesh, torch.arange(world), 0, "mesh.mesh")
H.check(mesh.device_type == dt and mesh.mesh_dim_names[1] == "dp" and mesh.shape[1] == world, "device_type, mesh_dim_names, shape")
H.check(mesh:get_group() == dist.group.WORLD and mesh:get_group("dp") == dist.group.WORLD, "the whole world's 1-D mesh uses WORLD")
H.check(mesh:get_rank() == rank and mesh:get_local_rank() == rank and mesh:get_coordinate()[1] == rank, "ranks and coordinate")
H.check(mesh["dp"]:get_group() == mesh:get_group(), "mesh['dp'] of a 1-D mesh")
local want = "DeviceMesh('" .. dt .. "', [" .. table.concat(range(world), ", ") .. "], mesh_dim_names=('dp',))"
H.check(tostring(mesh) == want, "prints %s (got %s)", want, tostring(mesh))
local t = T({ rank + 1.0 })
dist.all_reduce(t, { group = mesh:get_group() })
H.check(t:item() == world * (world + 1) / 2, "all_reduce over the mesh's group")

-- ---- errors ----
H.raises(function() DM.init_device_mesh(dt, { world + 1 }) end, "Mesh should not be bigger than default world size", "a mesh bigger than the world")
H.raises(function() DM.init_device_mesh("cuda:0", { world }) end, "Device type with index is not supported but got cuda:0", "a device with an index")
H.raises(function() DM.init_device_mesh(dt, { world }, { mesh_dim_names = { "a", "b" } }) end, "mesh_dim_names must have same length as mesh_shape", "too many names")
H.raises(function() DM.init_device_mesh(dt, { world }, { mesh_dim_names = { "a" }, shape = 1 }) end, "unknown keyword 'shape'", "an unknown keyword")
H.raises(function() mesh:get_group("tp") end, "Mesh dimension 'tp' does not exist", "get_group of an unknown name")
H.raises(function() mesh:size(1) end, "out of range", "size of a dimension out of range")
local unnamed = dist.DeviceMesh(dt, range(world))
H.raises(function() return unnamed["dp"] end, "Cannot slice a DeviceMesh without mesh_dim_names!", "slicing a mesh without names")
H.check(unnamed.mesh_dim_names == nil and unnamed:get_local_rank(0) == rank, "a DeviceMesh without names")

-- ---- 1-D, part of the world: ranks 1.. (rank 0 is not in it) ----
if world >= 3 then
  local part = dist.DeviceMesh(dt, torch.arange(1, world))
  local g = part:get_group()
  if rank == 0 then
    H.check(g == dist.GroupMember.NON_GROUP_MEMBER and part:get_coordinate() == nil, "a rank outside the mesh")
  else
    H.check(part:get_coordinate()[1] == rank - 1 and part:get_local_rank() == rank - 1, "coordinate in a mesh of ranks 1..")
    local x = T({ rank * 1.0 })
    dist.all_reduce(x, { group = g })
    H.check(x:item() == world * (world - 1) / 2, "all_reduce over a mesh of ranks 1..")
  end
end

-- ---- 2-D ----
if world % 2 == 0 and world >= 4 then
  local rows = world // 2
  local m2 = DM.init_device_mesh(dt, { rows, 2 }, { mesh_dim_names = { "dp", "tp" } })
  local i, j = rank // 2, rank % 2
  H.check(m2.ndim == 2 and m2:size() == world and m2:size(0) == rows and m2:size("tp") == 2, "a 2-D mesh's sizes")
  local c = m2:get_coordinate()
  H.check(c[1] == i and c[2] == j, "get_coordinate of a 2-D mesh: {%d, %d}", i, j)
  H.check(m2:get_local_rank("dp") == i and m2:get_local_rank(1) == j, "get_local_rank of each dimension")
  H.raises(function() m2:get_group() end, "Found the DeviceMesh have 2 dimensions", "get_group() of a 2-D mesh")
  -- tp: the two ranks of a row; dp: the ranks of a column
  local x = T({ rank * 1.0 })
  dist.all_reduce(x, { group = m2:get_group("tp") })
  H.check(x:item() == 4 * i + 1, "all_reduce over tp: %d", x:item())
  local y = T({ rank * 1.0 })
  dist.all_reduce(y, { group = m2:get_group(0) })
  H.check(y:item() == 2 * (rows * (rows - 1) / 2) + rows * j, "all_reduce over dp: %d", y:item())
  H.check(#m2:get_all_groups() == 2, "get_all_groups")
  local ranks_tp = dist.get_process_group_ranks(m2:get_group("tp"))
  H.check(ranks_tp[1] == 2 * i and ranks_tp[2] == 2 * i + 1, "the tp group's ranks")
  -- sub-meshes
  local dp = m2["dp"]
  H.check(dp.ndim == 1 and dp.mesh_dim_names[1] == "dp" and dp:get_group() == m2:get_group("dp"), "m2['dp'] is 1-D over the dp group")
  local col = {}
  for r = 0, rows - 1 do col[#col + 1] = 2 * r + j end
  H.close(dp.mesh, torch.tensor(col), 0, "m2['dp'].mesh is this rank's column")
  H.check(dp:get_local_rank() == i and dp:get_coordinate()[1] == i, "the sub-mesh's local rank")
  local tp = m2["tp"]
  H.close(tp.mesh, torch.tensor({ 2 * i, 2 * i + 1 }), 0, "m2['tp'].mesh is this rank's row")
  local both = m2[{ "dp", "tp" }]
  H.close(both.mesh, m2.mesh, 0, "m2[{'dp', 'tp'}] is the whole mesh")
  H.raises(function() return m2[{ "tp", "dp" }] end, "Mesh dim indices should be in ascending order", "sub-mesh names out of order")
  local z = T({ 1.0 })
  dist.all_reduce(z, { group = tp:get_group() })
  H.check(z:item() == 2, "all_reduce over the sub-mesh's group")
end

dist.barrier()
H.report()
