#!/usr/bin/env bash
# The interactive session on a real terminal, driven through tmux: expressions and
# their printed values, multi-line input, ';', errors, Ctrl-C during a loop and at the
# prompt, tab completion, history, Ctrl-D. Every wait polls the screen with a timeout.
# Usage: bash tests/interp/test_repl.sh build/nnrepl
bin=${1:?usage: test_repl.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
sock=nnrepl-test-$$
unset TMUX
tm() { tmux -L "$sock" -f /dev/null "$@"; }
sock_file="${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
trap 'tm kill-server 2>/dev/null; rm -rf "$tmp"; rm -f "$sock_file"' EXIT
passed=0 failed=0 skipped=0
TIMEOUT=${NNREPL_TEST_TIMEOUT:-20} # seconds per wait; generous, so a loaded CI machine does not fail it

if ! command -v tmux >/dev/null; then
  echo "tmux not found"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; echo "--- screen:"; screen | sed 's/^/  | /'; }
screen() { tm capture-pane -p -J -t repl -S - 2>/dev/null; }
# wait_for NAME REGEX: polls the screen until REGEX matches a line
wait_for() {
  local name=$1 re=$2 end=$((SECONDS + TIMEOUT + 1))
  while [ $SECONDS -lt $end ]; do
    screen | grep -qE -- "$re" && { pass; return 0; }
    sleep 0.1
  done
  fail "$name (waited for /$re/)"; return 1
}
# Waits until the cursor sits right after an empty ">>> " or "... " prompt, i.e.
# the line editor is reading (keys typed earlier would be echoed by the terminal).
wait_prompt() {
  local end=$((SECONDS + TIMEOUT + 1)) y x l
  while [ $SECONDS -lt $end ]; do
    read -r y x < <(tm display-message -p -t repl '#{cursor_y} #{cursor_x}')
    l=$(tm capture-pane -p -t repl | sed -n "$((y + 1))p")
    [[ $x == 4 && $l =~ ^(\>\>\>|\.\.\.)\ ?$ ]] && return 0
    sleep 0.05
  done
  fail "prompt ready"; return 1
}
# Literal text; a trailing ';' is escaped from tmux's command parser.
type_text() { local s=$1; [[ $s == *\; ]] && s="${s%;}\\;"; tm send-keys -t repl -l -- "$s"; }
begin() { wait_prompt; type_text "$1"; }  # starts a new line
line() { begin "$1"; tm send-keys -t repl Enter; }
start() { # [extra VAR=value for the environment]
  tm new-session -d -s repl -x 160 -y 50 \
    "exec env -u NO_COLOR NNREPL_HISTORY='$tmp/history' TERM=screen $* '$bin'" || { echo "cannot start tmux"; exit 1; }
  wait_for "banner" '^nnrepl [0-9.]+ .*help\(\) for help, Ctrl-D to exit' &&
    wait_for "first prompt" '^>>> $'
}
# wait_next NAME LINE_RE NEXT_RE: polls until the line after a line matching LINE_RE
# matches NEXT_RE
wait_next() {
  local name=$1 end=$((SECONDS + TIMEOUT + 1))
  while [ $SECONDS -lt $end ]; do
    screen | grep -A1 -E -- "$2" | tail -n 1 | grep -qE -- "$3" && { pass; return 0; }
    sleep 0.1
  done
  fail "$name (waited for /$3/ after /$2/)"; return 1
}
session_alive() { tm has-session -t repl 2>/dev/null; }
wait_exit() {
  local end=$((SECONDS + TIMEOUT + 1))
  while [ $SECONDS -lt $end ]; do session_alive || { pass; return 0; }; sleep 0.1; done
  fail "$1"
}

start

# An expression prints its value.
line '6 * 7 + 1000'
wait_for "expression value" '^1042$'
line 'print("a", 1, nil)'
wait_for "print output" '^a {7}1 {7}nil$' # tab stops
line 'return 1, "two", nil'
wait_for "several values separated by tabs" '^1 {7}two {5}nil$'

# A function over three lines, with continuation prompts, then a call.
line 'function tri(a)'
wait_next "continuation prompt" '^>>> function tri\(a\)$' '^\.\.\. $'
line '  return a * 3'
line 'end'
line 'tri(111)'
wait_for "multi-line definition then call" '^333$'
if screen | grep -qE '^\.\.\.   return a \* 3$'; then pass; else fail "second line shown after '... '"; fi

# A trailing ';' prints nothing (statements and expressions alike).
line 'qq = 5;'
line '4321 + 1;'
line 'qq * 111'
wait_for "statement with ';' ran" '^555$'
if screen | grep -qE '^4322$'; then fail "expression with ';' printed"; else pass; fi
if screen | grep -A1 -E '^>>> qq = 5;$' | tail -1 | grep -qE '^>>> 4321 \+ 1;$'; then pass; else fail "'qq = 5;' printed something"; fi

# An error prints its message and the session goes on.
line 'error("kaboom")'
wait_for "error message" 'stdin:1: kaboom$'
wait_for "error traceback" '^stack traceback:'
if tm capture-pane -p -e -t repl -S - | grep -qF $'\e[31mstdin:1: kaboom'; then pass; else fail "error shown in red"; fi
line '5000 + 1'
wait_for "line after an error" '^5001$'
line 'nosuchfunction_zz()'
wait_for "runtime error message" "attempt to call a nil value \(global 'nosuchfunction_zz'\)"
line 'x = = 1'
wait_for "syntax error message" "unexpected symbol near '='"
line '5000 + 2'
wait_for "line after a syntax error" '^5002$'
line 'y = x @ w'
wait_for "a Python habit's hint" "^hint: Lua has no '@'"
line 'x = torch.ones(2); x.sum()'
wait_for "a method called with '.'" "a method is called with ':' in Lua: x:sum"
line 'm = torch.nn.Linear(2, 2); m.train()'
wait_for "a Lua method called with '.' (a tail call)" "^hint: 'train' got nil as self"

# Ctrl-C interrupts a running loop and the prompt comes back.
line 'print("looping"); while true do end'
wait_for "loop started" '^looping$'
sleep 0.2
tm send-keys -t repl C-c
wait_for "loop interrupted" 'interrupted!'

line '321 + 1'
wait_for "prompt works after interrupt" '^322$'
# The Lua hook must not linger: the next loop runs to its end.
line 'n = 0; for i = 1, 100000 do n = n + i end; return n'
wait_for "no stale interrupt" '^5000050000$'

# Ctrl-C at the prompt drops the typed line.
begin 'garbage_zz +'
tm send-keys -t repl C-c
sleep 0.2
line '11 + 11'
wait_for "prompt after Ctrl-C on a line" '^22$'
if screen | grep -q "garbage_zz + 11"; then fail "Ctrl-C kept the line"; else pass; fi
# ... and in the middle of a multi-line input.
line 'for zzi = 1, 3 do'
wait_next "continuation before Ctrl-C" '^>>> for zzi = 1, 3 do$' '^\.\.\. $'
tm send-keys -t repl C-c
sleep 0.2
line '7 * 7'
wait_for "Ctrl-C abandons a multi-line input" '^49$'

# Tab completion: a global table, a userdata's methods, __methods, a tensor library.
line 'zzcomp = {alphabet = 1, alpine = 2, beta = 3}'
begin 'zzcomp.alph'
tm send-keys -t repl Tab
sleep 0.2
tm send-keys -t repl Enter
wait_for "TAB completes a table field" '^>>> zzcomp\.alphabet$'
begin 'zzcomp.al'
tm send-keys -t repl Tab
sleep 0.2
tm send-keys -t repl Tab
wait_for "TAB TAB lists the matches" 'zzcomp\.alphabet +zzcomp\.alpine'
tm send-keys -t repl C-u
line 'm = {frobnicate = function() return 99 end}; obj = setmetatable({}, {__index = function(_, k) return m[k] end, __methods = m})'
begin 'obj:frob'
tm send-keys -t repl Tab
sleep 0.2
type_text '()'
tm send-keys -t repl Enter
wait_for "TAB follows __methods" '^>>> obj:frobnicate\(\)$'
wait_for "completed method call runs" '^99$'
begin 'io.stdout:setv'
tm send-keys -t repl Tab
sleep 0.2
type_text '("no")'
tm send-keys -t repl Enter
wait_for "TAB completes userdata methods" '^>>> io\.stdout:setvbuf\("no"\)$'
if "$bin" -e 'os.exit(type(torch) == "table" and torch.arange ~= nil and 0 or 1)' </dev/null >/dev/null 2>&1; then
  begin 'torch.ar'
  tm send-keys -t repl Tab
  sleep 0.2
  tm send-keys -t repl Tab
  wait_for "torch.ar<TAB> offers torch.arange" 'torch\.arange'
  tm send-keys -t repl C-u
  line 'zzt = torch.arange(3)'
  begin 'zzt:nume'
  tm send-keys -t repl Tab
  sleep 0.2
  type_text '()'
  tm send-keys -t repl Enter
  wait_for "x:<TAB> completes tensor methods" '^>>> zzt:numel\(\)$'
else
  echo "skip: torch.arange not linked yet"; skipped=$((skipped + 2))
fi
# TAB at the start of a line indents.
line 'function g()'
wait_prompt
tm send-keys -t repl Tab
type_text 'return 5'
tm send-keys -t repl Enter
line 'end'
wait_for "TAB indents a body" '^\.\.\.   return 5$'
line 'g()'
wait_for "indented function works" '^5$'

# help()
line 'help()'
wait_for "help() prints" 'torch\.<TAB>'

# History is saved to NNREPL_HISTORY as lines are entered.
end=$((SECONDS + TIMEOUT))
while [ $SECONDS -lt $end ] && ! grep -q 'tri(111)' "$tmp/history" 2>/dev/null; do sleep 0.1; done
if grep -q 'tri(111)' "$tmp/history" 2>/dev/null; then pass; else fail "history file written"; fi

# Ctrl-D at the prompt ends the session.
wait_prompt
tm send-keys -t repl C-d
wait_exit "Ctrl-D exits"

# A new session recalls the history with the Up arrow; NO_COLOR turns colour off.
start NO_COLOR=1
wait_prompt
tm send-keys -t repl Up
wait_for "Up recalls the last entry" '^>>> help\(\)$'
tm send-keys -t repl C-u
line 'error("plain")'
wait_for "error with NO_COLOR" 'stdin:1: plain$'
wait_prompt
if tm capture-pane -p -e -t repl -S - | grep -F 'stdin:1: plain' | grep -qF $'\e['; then fail "NO_COLOR output has escapes"; else pass; fi
tm send-keys -t repl C-d
wait_exit "Ctrl-D exits the second session"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
