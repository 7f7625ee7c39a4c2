#!/usr/bin/env bash
# Command-line behaviour of nnrepl: scripts and their arguments, -e, -i, -l, -v,
# --help, stdin programs, errors and exit codes, help(), and the completer (through
# its Lua view, require "nnrepl.complete").
# Usage: bash tests/interp/test_cli.sh build/nnrepl
bin=${1:?usage: test_cli.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NNREPL_HISTORY="$tmp/history" NO_COLOR=1
passed=0 failed=0

check() { # name, then a command that succeeds when the check passes
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
# run ARGS... < stdin: sets $out, $err, $rc
run() { out=$("$bin" "$@" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err"); }
has() { grep -qF -- "$2" <<<"$1"; }      # text, fixed string
matches() { [[ $1 =~ $2 ]]; }           # text, extended regex over the whole text
lacks() { ! grep -qF -- "$2" <<<"$1"; }
is() { [ "$1" = "$2" ] || { echo "  expected [$2]"; echo "  got      [$1]"; return 1; }; }

# ---- a script with arguments: arg and ... ----
cat >"$tmp/args.lua" <<'EOF'
print("arg0", arg[0])
print("args", #arg, arg[1], arg[2], arg[3])
print("dots", select("#", ...), ...)
print("neg", arg[-1] ~= nil, arg[-2])
EOF
run "$tmp/args.lua" a "b c" ""
check "script runs, exit 0" is "$rc" 0
check "arg[0] is the script" has "$out" "arg0	$tmp/args.lua"
check "arg[1..] are the arguments" has "$out" "args	3	a	b c	"
check "... holds the arguments" has "$out" "dots	3	a	b c	"
check "arg[-1] is the interpreter" has "$out" "neg	true	nil"
run -e 'x = 1' "$tmp/args.lua" z
check "options go to negative indices" has "$(printf '%s\n' "$out")" "args	1	z	nil	nil"
out=$("$bin" -e 'print(arg[-3] ~= nil, arg[-2], arg[-1], arg[0], arg[1])' "$tmp/args.lua" z 2>&1 | head -1)
check "-e runs before the script and sees arg" is "$out" "true	-e	print(arg[-3] ~= nil, arg[-2], arg[-1], arg[0], arg[1])	$tmp/args.lua	z"

# ---- the script's folder comes first on package.path (Python's sys.path[0]) ----
mkdir -p "$tmp/proj/pkg"
echo 'return { name = "model beside the script" }' >"$tmp/proj/model.lua"
echo 'return { name = "package beside the script" }' >"$tmp/proj/pkg/init.lua"
echo 'print(require("model").name); print(require("pkg").name); print(require("torchvision") ~= nil)' >"$tmp/proj/main.lua"
out=$(cd / && "$bin" "$tmp/proj/main.lua" 2>&1)
check "require finds modules beside the script, from another folder" is "$out" "model beside the script
package beside the script
true"
out=$(cd "$tmp/proj" && "$bin" main.lua 2>&1 | head -1)
check "and with a relative script path" is "$out" "model beside the script"
out=$(cd "$tmp" && "$bin" -e 'print(pcall(require, "model"))' 2>&1 | head -1)
check "-e alone adds no folder" has "$out" "false"
cat >"$tmp/ret.lua" <<'EOF'
local a, b = ...
io.write(a .. "+" .. b, "\n")
EOF
run "$tmp/ret.lua" 1 2
check "locals from ..." is "$out" "1+2"
run -- "$tmp/args.lua" -v
check "-- ends options: later words go to the script" has "$out" "args	1	-v"
run "$tmp/args.lua" -e x
check "options after the script belong to it" has "$out" "args	2	-e	x"

# ---- -e ----
run -e 'print(6 * 7)'
check "-e prints" is "$out" "42"
check "-e exits 0" is "$rc" 0
run -e 'a = 5' -e 'print(a + 1)'
check "several -e run in order" is "$out" "6"
run -e'print("joined")'
check "-eSTAT form" is "$out" "joined"
run -e 'error("from e")'
check "-e error exits 1" is "$rc" 1
check "-e error message" has "$err" "nnrepl: (command line):1: from e"

# ---- -l ----
mkdir -p "$tmp/lib"
printf 'return {answer = 42}\n' >"$tmp/lib/mymod.lua"
export LUA_PATH="$tmp/lib/?.lua;;"
run -l mymod -e 'print(mymod.answer)'
check "-l mod sets global mod" is "$out" "42"
run -l m=mymod -e 'print(m.answer, mymod)'
check "-l g=mod sets global g" is "$out" "42	nil"
run -lmymod -e 'print(mymod.answer)'
check "-lMOD form" is "$out" "42"
run -l no_such_module_zz -e 'print(1)'
check "-l missing module exits 1" is "$rc" 1
check "-l missing module message" has "$err" "module 'no_such_module_zz' not found"
unset LUA_PATH

# ---- -v, --help ----
run -v
check "-v exits 0" is "$rc" 0
check "-v prints version" matches "$out" '^nnrepl [0-9]+\.[0-9]+\.[0-9]+ \(Lua 5\.4\.[0-9]+\)$'
run -v -e 'print("after v")'
check "-v then -e" matches "$out" $'^nnrepl .*\nafter v$'
for opt in --help -h; do
  run $opt
  check "$opt exits 0" is "$rc" 0
  check "$opt prints usage" has "$out" "usage: nnrepl [options] [script [args]]"
  for o in "-e stat" "-i " "-l mod" "-l g=mod" "-v " "-W " "-h, --help" "-- " "- "; do
    check "$opt lists '$o'" has "$out" "  $o"
  done
done
run --help -e 'print("not run")'
check "--help runs nothing" lacks "$out" "not run"

# ---- bad options ----
run -x
check "unknown option exits 1" is "$rc" 1
check "unknown option named" has "$err" "nnrepl: unrecognized option '-x'"
check "unknown option prints usage" has "$err" "usage: nnrepl"
check "unknown option prints nothing on stdout" is "$out" ""
run --bogus
check "unknown long option exits 1" is "$rc" 1
check "unknown long option named" has "$err" "unrecognized option '--bogus'"
run -e
check "-e without argument exits 1" is "$rc" 1
check "-e without argument message" has "$err" "'-e' needs argument"
run -l
check "-l without argument exits 1" is "$rc" 1
run -ix
check "option with extra letters rejected" is "$rc" 1

# ---- programs on stdin ----
out=$(echo 'print("stdin", 1 + 1)' | "$bin" 2>&1); rc=$?
check "no script, piped stdin runs it" is "$out" "stdin	2"
check "stdin program exits 0" is "$rc" 0
out=$(echo 'print(arg[0], ...)' | "$bin" - p q 2>&1)
check "'-' reads stdin with arguments" is "$out" "-	p	q"
out=$(echo 'error("piped")' | "$bin" - 2>&1); rc=$?
check "stdin error exits 1" is "$rc" 1
check "stdin error message" has "$out" "nnrepl: stdin:1: piped"
out=$(echo 'print("not read")' | "$bin" -e 'print("only e")' 2>&1)
check "-e alone does not read stdin" is "$out" "only e"

# ---- errors ----
printf 'x = = 1\n' >"$tmp/syntax.lua"
run "$tmp/syntax.lua"
check "syntax error exits 1" is "$rc" 1
check "syntax error message" has "$err" "nnrepl: $tmp/syntax.lua:1:"
check "syntax error names the token" has "$err" "near '='"
printf 'local function inner()\n  error("boom")\nend\nlocal function outer() inner() end\nouter()\n' >"$tmp/runtime.lua"
run "$tmp/runtime.lua"
check "runtime error exits 1" is "$rc" 1
check "runtime error message first" matches "$(head -1 <<<"$err")" "^nnrepl: $tmp/runtime.lua:2: boom$"
check "runtime error traceback" has "$err" "stack traceback:"
check "traceback names inner" matches "$err" "runtime.lua:2: in (local|upvalue) 'inner'"
check "traceback names outer" matches "$err" "runtime.lua:4: in (local|upvalue) 'outer'"
check "traceback has the main chunk" has "$err" "runtime.lua:5: in main chunk"
check "error output not on stdout" is "$out" ""
run -e 'error({})'
check "non-string error object" has "$err" "(error object is a table value)"
run -e 'error(setmetatable({}, {__tostring = function() return "custom obj" end}))'
check "error object with __tostring" has "$err" "nnrepl: custom obj"
run "$tmp/does_not_exist.lua"
check "missing script exits 1" is "$rc" 1
check "missing script message" has "$err" "cannot open"
run -e 'os.exit(3)'
check "os.exit status" is "$rc" 3
run -e 'print("before")' -e 'error("stop")' -e 'print("after")'
check "an -e error stops the rest" is "$out" "before"
printf 'error("in script")\n' >"$tmp/err.lua"
out=$(echo 'print("repl ran")' | "$bin" -i "$tmp/err.lua" 2>/dev/null); rc=$?
check "-i with a failing script exits 1" is "$rc" 1
check "-i with a failing script skips the REPL" is "$out" ""

# ---- -i with piped input (the REPL without a terminal) ----
printf 'base = 20\n' >"$tmp/base.lua"
out=$(printf '%s\n' 'base + 1' 'y = 5;' 'y * 2' '7 * 6;' 'function f(a)' '  return a * 3' 'end' 'f(4)' \
  'error("oops")' '"still" .. " here"' 'print("p", 1)' 'return 1, "two", nil' 'nil' \
  'x = {' '  n = 9' '}' 'x.n' '' | "$bin" -i "$tmp/base.lua" 2>"$tmp/err"); rc=$?
err=$(cat "$tmp/err")
check "-i exits 0 at end of input" is "$rc" 0
check "-i sees the script's globals" has "$out" "21"
expected=$'21\n10\n12\nstill here\np\t1\n1\ttwo\tnil\nnil\n9'
check "-i prints expressions only" is "$out" "$expected"
check "-i error message on stderr" has "$err" "stdin:1: oops"
check "-i error traceback" has "$err" "stack traceback:"
out=$(printf 'local z = 1\n' | "$bin" -i 2>&1)
check "-i warns once that a local lasts one input" has "$out" "local"
out=$(printf '(\n' | "$bin" -i 2>&1)
check "-i incomplete input at end reports it" has "$out" "<eof>"
out=$(printf 'setmetatable({}, {__tostring = function() return "TOSTR" end})\n' | "$bin" -i 2>&1)
check "-i prints through __tostring" is "$out" "TOSTR"
out=$(printf 'setmetatable({}, {__tostring = function() error("bad tostring") end})\n1\n' | "$bin" -i 2>&1)
check "-i survives a failing __tostring" has "$out" "bad tostring"
check "-i goes on after a failing __tostring" matches "$out" $'bad tostring.*\n1$'
out=$(printf 'os.exit(4)\nprint("no")\n' | "$bin" -i 2>&1); rc=$?
check "-i os.exit" is "$rc:$out" "4:"

# ---- help() ----
run -e 'help()'
check "help() mentions torch.<TAB>" has "$out" "torch.<TAB>"
check "help() mentions x:<TAB>" has "$out" "x:<TAB>"
check "help() mentions Ctrl-D" has "$out" "Ctrl-D"
check "help() mentions README.md" has "$out" "README.md"

# ---- completion ----
cat >"$tmp/complete.lua" <<'EOF'
local complete = require "nnrepl.complete"
local function show(w) print(w .. " => " .. table.concat(complete(w), " ")) end
calls = 0
local methods = {size = function() end, sum = function() end, note = "x"}
obj = setmetatable({own = 1}, {__index = function() calls = calls + 1; error("side effect") end,
                               __methods = methods})
Base = {greet = function() end, __tostring = function() end}
Base.__index = Base
Derived = setmetatable({extra = function() end}, Base)
Derived.__index = Derived
inst = setmetatable({field = 1}, Derived)
loop = {}; setmetatable(loop, {__index = loop}); loop.selfish = 1
guarded = setmetatable({}, setmetatable({}, {__index = function() calls = calls + 1 end}))
nested = {a = {b = {cdef = 1, cdeg = 2, ["not ident"] = 3, [1] = 4}}}
zzvar_one, zzvar_two = 1, 2
for _, w in ipairs{"zzvar", "pri", "whi", "nested.a.b.cd", "nested.a.b.", "obj.", "obj:",
                   "obj:s", "io.stdout:se", "inst:", "inst.", "inst.__", "loop.s", "guarded.",
                   "string.up", "nope.x", "obj.missing.x", "1.5", "x..y", "obj:size.",
                   ".x", "nested.a:b.c", "a b"} do show(w) end
print("calls", calls)
EOF
run "$tmp/complete.lua"
c() { has "$out" "$1 => $2"$'\n'; }
check "complete globals" c "zzvar" "zzvar_one zzvar_two"
check "complete builtins" c "pri" "print"
check "complete keywords" c "whi" "while"
check "complete nested tables" c "nested.a.b.cd" "nested.a.b.cdef nested.a.b.cdeg"
check "complete skips non-identifier keys" c "nested.a.b." "nested.a.b.cdef nested.a.b.cdeg"
check "complete . follows __methods when __index is a function" c "obj." "obj.note obj.own obj.size obj.sum"
check "complete : lists only functions" c "obj:" "obj:size obj:sum"
check "complete : with prefix" c "obj:s" "obj:size obj:sum"
check "complete userdata methods" c "io.stdout:se" "io.stdout:seek io.stdout:setvbuf"
check "complete walks __index chains" c "inst:" "inst:extra inst:greet"
check "complete . lists fields and methods" c "inst." "inst.extra inst.field inst.greet"
check "complete __ names only after _" c "inst.__" "inst.__index inst.__tostring"
check "complete survives __index cycles" c "loop.s" "loop.selfish"
check "complete ignores a metatable's own __index function" c "guarded." ""
check "complete library tables" c "string.up" "string.upper"
check "complete unknown path" c "nope.x" ""
check "complete missing field" c "obj.missing.x" ""
check "complete number" c "1.5" ""
check "complete bad path" c "x..y" ""
check "complete colon mid-path" c "obj:size." ""
check "complete leading dot" c ".x" ""
check "complete colon before dot" c "nested.a:b.c" ""
check "complete never calls __index functions" has "$out" "calls	0"
if "$bin" -e 'os.exit(type(torch) == "table" and torch.arange ~= nil and 0 or 1)' 2>/dev/null; then
  run -e 'print(table.concat(require("nnrepl.complete")("torch.ara"), " "))'
  check "complete torch.ara" has "$out" "torch.arange"
  run -e 'local x = torch.arange(3); xx = x; print(table.concat(require("nnrepl.complete")("xx:"), " "))'
  check "complete tensor methods" has "$out" "xx:"
fi

# ---- Python habits: a "hint:" line after the error (bindings/hints.c) ----
hint_of() { run -e "$1"; grep -F "hint: " <<<"$err"; }
check "a @ b: matmul" has "$(hint_of 'y = x @ w')" "a @ b is a:matmul(b)"
check "x ** 2: '^'" has "$(hint_of 'y = x ** 2')" "Lua's power is '^'"
check "x += 1" has "$(hint_of 'x += 1')" "Lua has no '+='"
check "a != b: '~='" has "$(hint_of 'if a != b then end')" "is '~='"
check "a Python list" has "$(hint_of 'l = [1, 2]')" "is the table {1, 2}"
check "a slice" has "$(hint_of 'y = x[0:2]')" 'x["0:2"]'
check "a dict" has "$(hint_of 'd = {"a": 1}')" "{a = 1}"
check "a ':' block" has "$(hint_of 'while x > 0:')" "while c do ... end"
run -e 'while x > 0:'
check "the syntax error itself comes first" has "$err" "(command line):1: 'do' expected near ':'"
check "no hint for other syntax errors" is "$(hint_of 'x = = 1')" ""
# Python's builtins called, and its True / False / None read as globals
check "len()" has "$(hint_of 'print(len({1, 2}))')" "Lua's length is #x"
check "range()" has "$(hint_of 'for i in range(3) do end')" "for i = 0, n - 1 do"
check "f-string" has "$(hint_of 'print(f"x")')" "string.format"
check "a missing global that is not a builtin: no hint" is "$(hint_of 'nosuch_fn_zz()')" ""
run -e 'local d = torch.utils.data.DataLoader({1, 2}, {shuffle = True})'
check "True read as a global: an error, not nil" has "$err" "(command line):1: name 'True' is not defined: Python's True is Lua's true"
run -e 'x = None'
check "None: names nil" has "$err" "name 'None' is not defined: Python's None is Lua's nil"
run -e 'True = true; print(True, rawget(_G, "False"), some_undefined_global)'
check "a script may define True; other missing globals stay nil" is "$out" "true	nil	nil"
# a syntax error in a file, and in a module a script requires (through the message handler)
printf 'y = x @ w\n' >"$tmp/at.lua"
run "$tmp/at.lua"
check "a script's syntax error: hint, exit 1" has "$err" "hint: Lua has no '@'"
check "a script's syntax error: exit 1" is "$rc" 1
run -e "package.path = '$tmp/?.lua;' .. package.path; require 'at'"
check "a required module's syntax error: hint once" is "$(grep -c 'hint: ' <<<"$err")" 1
# methods called with '.': C methods name the right call; Lua methods' nil self is named
setup='x = torch.randn(2, 3); m = torch.nn.Linear(3, 2); opt = torch.optim.SGD(m:parameters(), {lr = 0.1}); '
run -e "${setup}x.size(0)"
check "x.size(0)" has "$err" "bad argument #1 to 'size' (tensor expected, got number; a method is called with ':' in Lua: x:size(...))"
run -e "${setup}torch.sum()"
check "torch.sum(): no method hint" has "$err" "bad argument #1 to 'sum' (tensor expected, got no value)"
run -e "${setup}x.sum()"
check "x.sum()" has "$err" "got no value; a method is called with ':' in Lua: x:sum(...)"
for call in m.train m.parameters opt.zero_grad opt.step m.state_dict x.float; do
  name=${call#*.}
  run -e "${setup}${call}()"
  check "$call(): hint names '$name'" has "$err" "hint: '$name' got nil as self: a method is called with ':' in Lua, as obj:$name(...)"
done
run -e "${setup}m.to('cpu')"
check "m.to('cpu')" has "$err" "hint: 'to' got a string as self"
run -e "${setup}m:train(); m:to('cpu'); opt:zero_grad(); x:float(); print(x:sum():item() == x.sum(x):item())"
check "':' calls work, and x.sum(x)" is "$out" "true"
run -e "${setup}local function f(self) return self.missing.field end; f({})"
check "an error in a method called with a table: no hint" lacks "$err" "hint:"
run -e "${setup}local t = {} function t:go() error('inner failure') end t:go()"
check "an error in a method called with ':': no hint" lacks "$err" "hint:"

# ---- out of host memory: dead tensors are collected before an allocation fails ----
# (a limit on the address space; not under the sanitizers, which reserve terabytes of it and
# hold freed memory on purpose)
if [ "${NNREPL_SANITIZED:-0}" != 1 ] && [ -r /proc/self/status ]; then
cat >"$tmp/oom_dead.lua" <<'EOF'
collectgarbage("stop") -- each 256 MB tensor dies at once, but only a collection frees it
for _ = 1, 8 do local _ = torch.empty(2 ^ 26) end
print("ok")
EOF
cat >"$tmp/oom_live.lua" <<'EOF'
local keep = {}
for i = 1, 8 do keep[i] = torch.empty(2 ^ 26) end
EOF
vm=$("$bin" -e 'for l in io.lines("/proc/self/status") do local kb = l:match("^VmSize:%s+(%d+)") if kb then print(kb) end end')
limited() { out=$( (ulimit -v $((vm + 800000)); "$bin" "$1") 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err"); }
limited "$tmp/oom_dead.lua"
check "2 GB of dead tensors within 800 MB of address space: collected when malloc fails" is "$out" "ok"
limited "$tmp/oom_live.lua"
check "2 GB of live tensors: an error" is "$rc" 1
check "which says what it could not allocate" has "$err" "out of memory allocating 268435456 bytes"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
