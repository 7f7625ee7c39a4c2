-- nn.SyncBatchNorm in one process (no process group): BatchNorm's results; convert_sync_batchnorm
-- shares the parameters and buffers. tests/dist/syncbn.lua checks it across ranks.
local T = ...

T.test("SyncBatchNorm without a process group is BatchNorm", function()
  torch.manual_seed(0)
  local x = torch.randn(4, 3, 5) * 2 + 1
  local a, b = nn.BatchNorm1d(3), nn.SyncBatchNorm(3)
  T.near(b(x):tolist(), a(x):tolist(), 1e-6, "training output")
  T.near(b.running_var:tolist(), a.running_var:tolist(), 1e-6, "running_var")
  a:eval(); b:eval()
  T.near(b(x):tolist(), a(x):tolist(), 1e-6, "eval output")
  T.eq(tostring(nn.SyncBatchNorm(3, { momentum = false })),
    "SyncBatchNorm(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)", "printed")
  T.raises(function() nn.SyncBatchNorm(3)(torch.randn(3)) end, "expected at least 2D input (got 1D input)")
end)

T.test("convert_sync_batchnorm", function()
  local bn = nn.BatchNorm2d(2, { momentum = 0.3 })
  local m = nn.Sequential(nn.Conv2d(1, 2, 3), bn, nn.Sequential(nn.BatchNorm1d(2)), nn.InstanceNorm2d(2))
  m:eval()
  local c = nn.SyncBatchNorm.convert_sync_batchnorm(m)
  T.check(c == m, "a container is converted in place")
  T.check(c[1]:isinstance(nn.SyncBatchNorm) and c[2][0]:isinstance(nn.SyncBatchNorm), "BatchNorm2d and a nested BatchNorm1d")
  T.check(not c[3]:isinstance(nn.SyncBatchNorm), "InstanceNorm kept")
  T.check(rawequal(c[1].weight, bn.weight) and rawequal(c[1].running_mean, bn.running_mean), "shared parameters and buffers")
  T.eq(c[1].momentum, 0.3, "momentum kept")
  T.eq(c[1].training, false, "mode kept")
  local single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4))
  T.check(single:isinstance(nn.SyncBatchNorm), "a bare BatchNorm is returned converted")
end)
