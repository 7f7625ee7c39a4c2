-- Python's os names that Lua's os library lacks: os.getpid() is this process's id (the
-- distributed examples print it to tell their ranks apart); pyos.lua adds os.path, os.listdir,
-- os.makedirs, os.walk, os.environ and the rest. Python's str methods join Lua's string table
-- here too (pystr.lua: s:strip(), s:split(), ...), and Python's math names to math (pymath.lua).
local torch = require "torch"
local C = torch._io

if os.getpid == nil then
  function os.getpid() return C.getpid() end
end
require "pyos"
require "pystr"
require "pymath"

return torch
