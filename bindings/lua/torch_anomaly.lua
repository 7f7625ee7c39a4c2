-- torch.autograd.set_detect_anomaly / detect_anomaly, as PyTorch's: while on, backward checks
-- each gradient a node returns and fails with "Function 'XBackward0' returned nan values in
-- its Nth output." (one device-to-host read per gradient, so it is slow, as PyTorch's is).
-- set_detect_anomaly(mode) sets it for good, or for a block as a `<close>` value; detect_anomaly()
-- turns it on for a block. (PyTorch also prints the forward's traceback: not kept here.)
local torch = require "torch"
local U = require "nn_util"

local closer = { __close = function(c) torch._set_anomaly(c.prev) end, __name = "torch.autograd.anomaly_mode" }

local function set(mode, check_nan)
  if type(mode) ~= "boolean" then U.errorf("set_detect_anomaly: mode must be a boolean, got %s", U.typename(mode)) end
  if check_nan == false and mode then U.error("set_detect_anomaly: check_nan=false is not supported (the NaN check is what it does)") end
  return setmetatable({ prev = torch._set_anomaly(mode) }, closer)
end

torch.autograd.set_detect_anomaly = set
function torch.autograd.detect_anomaly(check_nan) return set(true, check_nan) end
torch.is_anomaly_check_nan_enabled = torch.is_anomaly_enabled
