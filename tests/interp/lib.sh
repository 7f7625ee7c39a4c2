# The check harness the tests in this folder share: source it after setting $root, run checks,
# end with `finish` (prints "N passed, M failed"; its status is the test's).
passed=0 failed=0

check() { # name, then a command that succeeds when the check passes
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
has() { grep -qF -- "$2" <<<"$1"; }                  # text, fixed string
lacks() { ! grep -qF -- "$2" <<<"$1"; }
matches() { grep -qE -- "$2" <<<"$1"; }              # text, extended regex
count() { grep -cE -- "$2" <<<"$1"; }                # lines of text matching the regex
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; } # a <= b
awk_true() { awk "BEGIN { exit !($1) }"; }

# "cuda" when the nnrepl at $1 sees a GPU, else "cpu": what a port that picks its device prints
device_of() { "$1" -e 'io.write(torch.cuda.is_available() and "cuda" or "cpu")'; }
# the device part a tensor's print gets on that device: "" on the CPU, ", device='cuda:0'" on a GPU
device_suffix() { [ "$(device_of "$1")" = cuda ] && echo ", device='cuda:0'"; }

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
