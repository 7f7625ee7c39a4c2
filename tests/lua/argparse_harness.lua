-- What the argparse tests share: testable(parser) makes a parser print into strings
-- (p.stdout.text, p.stderr.text, 80 columns) and turns its exits into errors
-- {status, stdout, stderr} instead of ending the process.
--   local testable = dofile(here .. "argparse_harness.lua")
local function sink()
  local s = { text = "" }
  function s:write(...) for _, x in ipairs({ ... }) do self.text = self.text .. x end return self end
  return s
end

return function(p)
  p.columns = 80
  p.stdout, p.stderr = sink(), sink()
  function p:exit(status, message)
    if message then self.stderr:write(message) end
    error({ status = status, stdout = self.stdout.text, stderr = self.stderr.text }, 0)
  end
  return p
end
