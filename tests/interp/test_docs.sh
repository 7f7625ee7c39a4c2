#!/usr/bin/env bash
# Runs the examples of the documentation (README.md and docs/*.md), each one standalone:
#  * a ```lua block is a script: `nnrepl block.lua` in a fresh folder must exit 0, and its
#    `--> text` comment lines, in order, must each equal a line of what it prints on stdout
#    (lines it prints without a `-->` line are not checked). `-->` alone stands for an
#    empty line.
#  * ```lua nproc=N runs the block with `nnrepl --nproc-per-node N` (the gloo backend; the
#    block is skipped where gloo is not built); output lines then carry "[rankR]: ".
#  * ```lua lua5.4 runs the block with Debian's stock lua5.4, torch.so on LUA_CPATH.
#  * a ```repl block is a session: its `>>> ` and `... ` lines are typed into `nnrepl -i`,
#    and every other non-empty line must come out (stdout and stderr), in order.
#  * a ```c block is a program: built with `cc block.c $(pkg-config --cflags --libs nnrepl)`
#    against a `cmake --install` of the build into a temporary prefix, it must exit 0 and
#    print its `// --> text` lines. Skipped (counted) where that cannot be done: no cc or
#    pkg-config, an incomplete build, or a sanitizer build.
#  * ```lua norun and ```c norun blocks are shown but not run.
# Blocks that need a GPU test torch.cuda.is_available() themselves.
# Usage: bash tests/interp/test_docs.sh build/nnrepl [file.md ...]
bin=${1:?usage: test_docs.sh path/to/nnrepl [file.md ...]}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1 NNREPL_HISTORY=
TIMEOUT=${NNREPL_DOCS_TIMEOUT:-120} # seconds per block
passed=0 failed=0 skipped=0

if [ $# -gt 0 ]; then files=("$@"); else files=("$root/README.md" "$root"/docs/*.md); fi

# Splits the blocks into $tmp/blocks/N; $tmp/index gets "N<TAB>kind<TAB>nproc<TAB>where".
mkdir -p "$tmp/blocks"
awk -v dir="$tmp/blocks" -v index_file="$tmp/index" -v root="$root/" '
  FNR == 1 { fence = 0; capture = 0 }
  !fence && /^```/ {
    fence = 1; capture = 0
    nw = split(substr($0, 4), w, /[ \t]+/)
    lang = w[1]; norun = 0; nproc = 0; stock = 0
    for (i = 2; i <= nw; i++) {
      if (w[i] == "norun") norun = 1
      else if (w[i] == "lua5.4") stock = 1
      else if (w[i] ~ /^nproc=[0-9]+$/) nproc = substr(w[i], 7) + 0
    }
    where = FILENAME
    if (index(where, root) == 1) where = substr(where, length(root) + 1)
    if ((lang == "lua" || lang == "c") && norun) { printf "-\tnorun\t0\t%s:%d\n", where, FNR > index_file; next }
    if (lang == "lua" || lang == "repl" || lang == "c") {
      if (lang == "lua" && stock) lang = "lua5.4"
      n++; capture = 1; out = dir "/" n
      printf "" > out
      printf "%d\t%s\t%d\t%s:%d\n", n, lang, nproc, where, FNR > index_file
    }
    next
  }
  fence && /^```[ \t]*$/ { fence = 0; if (capture) close(out); capture = 0; next }
  capture { print > out }
' "${files[@]}"
[ -f "$tmp/index" ] || : >"$tmp/index"

# expect EXPECTED OUTPUT: every line of EXPECTED equals a line of OUTPUT, in order
# (trailing blanks ignored); otherwise prints the first line that was not found.
expect() {
  awk -v out="$2" '
    function trim(s) { sub(/[ \t\r]+$/, "", s); return s }
    BEGIN { while ((getline line < out) > 0) got[++m] = trim(line) }
    { want = trim($0); found = 0
      while (j < m) if (got[++j] == want) { found = 1; break }
      if (!found) { print "  expected line not printed (in this order): [" want "]"; exit 1 }
    }' "$1"
}

# The C examples build against an installed copy of the build, as a user's program would.
build=$(dirname "$bin") prefix=$tmp/prefix c_ready= c_flags= torch_so=
c_setup() {
  c_ready="cannot install the build"
  [ -f "$build/torch.so" ] && torch_so=$build
  if ldd "$build/libnnrepl.so" 2>/dev/null | grep -q libasan; then c_ready="a sanitizer build"; torch_so=; return; fi
  command -v cc >/dev/null && command -v pkg-config >/dev/null || { c_ready="needs cc and pkg-config"; return; }
  cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || return
  c_flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs nnrepl) || { c_ready="pkg-config nnrepl failed"; return; }
  [ -f "$prefix/lib/lua/5.4/torch.so" ] && torch_so=$prefix/lib/lua/5.4
  c_ready=yes
}

gloo=1
"$bin" -e 'os.exit(torch.distributed.is_gloo_available() and 0 or 1)' 2>/dev/null || gloo=0
norun=0
while IFS=$'\t' read -r n kind nproc where; do
  if [ "$kind" = norun ]; then norun=$((norun + 1)); continue; fi
  block=$tmp/blocks/$n work=$tmp/work$n
  mkdir -p "$work"
  if [ "$kind" = repl ]; then
    sed -nE 's/^(>>>|\.\.\.)( |$)//p' "$block" >"$work/input"
    grep -vE '^(>>>|\.\.\.)( |$)' "$block" | grep -vE '^[[:space:]]*$' >"$work/expected"
    (cd "$work" && timeout "$TIMEOUT" "$bin" -i <"$work/input" >"$work/out" 2>&1)
    rc=$?
    : >"$work/err"
  elif [ "$kind" = c ]; then
    [ -z "$c_ready" ] && c_setup
    if [ "$c_ready" != yes ]; then skipped=$((skipped + 1)); echo "skip $where ($c_ready)"; continue; fi
    sed -nE 's|^[[:space:]]*// --> ?||p' "$block" >"$work/expected"
    cp "$block" "$work/example.c"
    # shellcheck disable=SC2086
    if ! cc -o "$work/example" "$work/example.c" $c_flags -pthread -Wl,-rpath,"$prefix/lib" >"$work/err" 2>&1; then
      failed=$((failed + 1)); echo "FAIL $where (c block does not build)"; sed 's/^/  | /' "$work/err" | tail -n 20; continue
    fi
    (cd "$work" && timeout "$TIMEOUT" ./example >"$work/out" 2>"$work/err" </dev/null)
    rc=$?
  else
    sed -nE 's/^[[:space:]]*--> ?//p' "$block" >"$work/expected"
    cp "$block" "$work/example.lua"
    cmd=("$bin")
    if [ "$kind" = lua5.4 ]; then
      [ -z "$c_ready" ] && c_setup
      if ! command -v lua5.4 >/dev/null || [ -z "$torch_so" ]; then
        [ "$c_ready" = "a sanitizer build" ] && why="a sanitizer build" || why="needs lua5.4 and torch.so"
        skipped=$((skipped + 1)); echo "skip $where ($why)"; continue
      fi
      cmd=(env "LUA_CPATH=$torch_so/?.so;;" lua5.4)
    fi
    if [ "$nproc" -gt 0 ]; then
      if [ $gloo -eq 0 ]; then skipped=$((skipped + 1)); echo "skip $where (needs the gloo backend)"; continue; fi
      cmd+=(--nproc-per-node "$nproc")
    fi
    (cd "$work" && timeout "$TIMEOUT" "${cmd[@]}" example.lua >"$work/out" 2>"$work/err" </dev/null)
    rc=$?
  fi
  if [ $rc -eq 0 ] && why=$(expect "$work/expected" "$work/out"); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $where ($kind block, exit $rc)"
    [ $rc -eq 0 ] && echo "$why"
    echo "  --- output:"; tail -n 30 "$work/out" | sed 's/^/  | /'
    [ -s "$work/err" ] && { echo "  --- stderr:"; tail -n 15 "$work/err" | sed 's/^/  | /'; }
  fi
done <"$tmp/index"

echo "$norun blocks marked norun (shown, not run)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
