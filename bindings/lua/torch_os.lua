-- Python's os.getpid(), which Lua's os library lacks: os.getpid() is this process's id (the
-- distributed examples print it to tell their ranks apart).
local torch = require "torch"
local C = torch._io

if os.getpid == nil then
  function os.getpid() return C.getpid() end
end

return torch
