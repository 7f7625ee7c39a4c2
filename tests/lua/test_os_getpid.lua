-- os.getpid() (Python's), against the kernel's /proc/self/stat and a child shell's $PPID.
local T = ...

T.test("os.getpid", function()
  local pid = os.getpid()
  T.check(math.type(pid) == "integer" and pid > 0, "a positive integer")
  local f = io.open("/proc/self/stat", "r")
  if f then
    local stat = f:read("l")
    f:close()
    T.eq(pid, tonumber(stat:match("^(%d+)")), "the pid in /proc/self/stat")
  else
    T.skip("no /proc", 1)
  end
  local p = io.popen("echo $PPID")
  local ppid = tonumber(p:read("l"))
  p:close()
  T.eq(pid, ppid, "a child shell's parent")
  T.eq(os.getpid(), pid, "the same on a second call")
end)
