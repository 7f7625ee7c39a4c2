#!/usr/bin/env bash
# require "torch" from a stock lua5.4 through the torch.so module of a build.
# Usage: test_require_torch.sh <build dir>. Skipped where lua5.4 is not installed.
build=$(cd "${1:-build}" && pwd)
if ! command -v lua5.4 >/dev/null || [ ! -f "$build/torch.so" ]; then
  echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
# a sanitizer build's module needs the sanitizer runtimes loaded first in the stock interpreter
if ldd "$build/torch.so" | grep -q libasan; then
  export LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
fi
passed=0 failed=0
check() { # name, lua code (prints ok on success)
  local out; out=$(cd /tmp && lua5.4 -e "package.cpath = '$build/?.so;' .. package.cpath" -e "$2" 2>&1)
  if [ "$(tail -n 1 <<<"$out")" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1:"; echo "$out"; fi
}
check "require and print" '
local torch = require "torch"
assert(tostring(torch.ones(2)) == "tensor([1., 1.])", tostring(torch.ones(2)))
assert(require("torch") == torch and package.loaded.torch == torch)
print "ok"'
check "autograd and nn" '
local torch = require "torch"
local nn, optim = torch.nn, torch.optim
torch.manual_seed(0)
local m = nn.Linear(3, 1)
local opt = optim.SGD(m:parameters(), {lr = 0.1})
local x, y = torch.randn(16, 3), torch.randn(16, 1)
local first
for i = 1, 20 do
  opt:zero_grad()
  local loss = torch.nn.functional.mse_loss(m(x), y)
  loss:backward()
  opt:step()
  first = first or loss:item()
  if i == 20 then assert(loss:item() < first, loss:item()) end
end
print "ok"'
check "engine errors are Lua errors" '
local torch = require "torch"
local ok, err = pcall(function() return torch.ones(3, 4):matmul(torch.ones(5, 6)) end)
assert(not ok and tostring(err):find("[3, 4]", 1, true), err)
print "ok"'
check "bundled Lua modules" '
local torch = require "torch"
assert(type(require("time")) == "table")
print "ok"'
check "Python os names on os" '
local torch = require "torch"
assert(os.path.join("a", "/b") == "/b" and os.getcwd() == os.path.realpath("/tmp") and os.listdir("/")[1])
os.environ.NNREPL_EMBED = "x"
assert(os.getenv("NNREPL_EMBED") == "x" and require("shutil").which("sh"))
print "ok"'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
