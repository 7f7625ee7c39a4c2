#!/usr/bin/env bash
# scripts/examples/vae (pytorch/examples vae/main.py) end to end on a tiny MNIST made here
# (64 training and 32 test images of 10 bar patterns, IDX files): the flags, the printed lines'
# format and arithmetic (the epoch's average is the mean of the logged per-image losses when
# every batch is logged; the first loss is near 784 ln 2, the sigmoid's 0.5 everywhere), the
# loss falling over the epochs, the images written (their grid sizes), the same seed giving the
# same run, and the errors for a bad flag and for missing data.
# Usage: bash tests/interp/test_example_vae.sh build/nnrepl
bin=${1:?usage: test_example_vae.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
main=$root/scripts/examples/vae/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# image i: class i % 10, a bright bar 4 rows high at rows 2k+2..2k+5 over columns 4..23
"$bin" -e "
  local function idx(path, n, label)
    local f = assert(io.open(path, 'wb'))
    if label then
      f:write(string.pack('>I4I4', 2049, n))
      for i = 0, n - 1 do f:write(string.char(i % 10)) end
    else
      f:write(string.pack('>I4I4I4I4', 2051, n, 28, 28))
      for i = 0, n - 1 do
        local k = i % 10
        for r = 0, 27 do
          for c = 0, 27 do
            f:write(string.char((r >= 2 * k + 2 and r < 2 * k + 6 and c >= 4 and c < 24) and 255 or 0))
          end
        end
      end
    end
    f:close()
  end
  os.execute('mkdir -p $tmp/data/MNIST/raw')
  for _, s in ipairs({{'train', 64}, {'t10k', 32}}) do
    idx('$tmp/data/MNIST/raw/' .. s[1] .. '-images-idx3-ubyte', s[2])
    idx('$tmp/data/MNIST/raw/' .. s[1] .. '-labels-idx1-ubyte', s[2], true)
  end" || { echo "cannot make the dataset"; exit 1; }

run() { # folder, then flags: runs main.lua in the folder (results/ goes there)
  local d=$1; shift
  mkdir -p "$d" && (cd "$d" && "$bin" "$main" --data-root "$tmp/data" --no-accel "$@" 2>"$d/err")
}

out=$(run "$tmp/a" --batch-size 16 --epochs 3 --log-interval 1)
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/a/err"
check "device line" has "$out" "Using device: cpu"
check "train line format" matches "$out" $'^Train Epoch: 1 \\[0/64 \\(0%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "train line at batch 3" matches "$out" $'^Train Epoch: 3 \\[48/64 \\(75%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "4 train lines an epoch" [ "$(count "$out" '^Train Epoch: 2 ')" -eq 4 ]
check "epoch lines" [ "$(count "$out" '^====> Epoch: [123] Average loss: [0-9]+\.[0-9]{4}$')" -eq 3 ]
check "test lines" [ "$(count "$out" '^====> Test set loss: [0-9]+\.[0-9]{4}$')" -eq 3 ]
first=$(sed -nE 's/^Train Epoch: 1 \[0\/64 .*Loss: ([0-9.]+)$/\1/p' <<<"$out")
check "first loss near 784 ln 2 = 543.4 ($first)" close "$first" 543.4 30
for e in 1 3; do
  mean=$(sed -nE "s/^Train Epoch: $e .*Loss: ([0-9.]+)\$/\\1/p" <<<"$out" | awk '{ s += $1 } END { if (NR) printf "%.4f", s / NR }')
  avg=$(sed -nE "s/^====> Epoch: $e Average loss: ([0-9.]+)\$/\\1/p" <<<"$out")
  check "epoch $e average $avg = mean of its batches $mean" close "$avg" "$mean" 0.001
  eval "avg$e=\$avg"
done
check "loss falls: epoch 3 average $avg3 < 0.9 * epoch 1's $avg1" less "$avg3" "$(awk -v a="$avg1" 'BEGIN { print 0.9 * a }')"
tests=$(sed -nE 's/^====> Test set loss: ([0-9.]+)$/\1/p' <<<"$out" | tr '\n' ' ')
check "test loss falls ($tests)" less "$(cut -d' ' -f3 <<<"$tests")" "$(cut -d' ' -f1 <<<"$tests")"
for e in 1 2 3; do
  check "files of epoch $e" test -s "$tmp/a/results/reconstruction_$e.png" -a -s "$tmp/a/results/sample_$e.png"
done
shapes=$("$bin" -e "local io = require('torchvision').io
  print(io.read_image('$tmp/a/results/reconstruction_3.png').shape, io.read_image('$tmp/a/results/sample_3.png').shape)" 2>&1)
check "image grids: 2 rows of 8, 8 of 8 ($shapes)" test "$shapes" = "torch.Size([3, 62, 242])	torch.Size([3, 242, 242])"

again=$(run "$tmp/b" --batch-size 16 --epochs 3 --log-interval 1)
check "the same seed, the same run" test "$again" = "$out"
other=$(run "$tmp/c" --batch-size 16 --epochs 1 --log-interval 2 --seed 2)
check "another seed, another first loss" test -n "$other" -a "$(grep -m1 '^Train' <<<"$other")" != "$(grep -m1 '^Train' <<<"$out")"
check "--log-interval 2: batches 0 and 2" test "$(count "$other" '^Train Epoch: 1 \[(0|32)/64 ')" -eq 2 -a "$(count "$other" '^Train')" -eq 2

# on a GPU machine, the accelerator: the same lines, the same files
if [ "$("$bin" -e 'print(torch.cuda.is_available())' 2>/dev/null)" = true ]; then
  gpu=$(mkdir -p "$tmp/g" && cd "$tmp/g" && "$bin" "$main" --data-root "$tmp/data" --batch-size 16 --epochs 2 2>"$tmp/g/err")
  rc=$?
  check "cuda: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || cat "$tmp/g/err"
  check "cuda: device line" has "$gpu" "Using device: cuda"
  check "cuda: epoch and test lines" [ "$(count "$gpu" '^====> (Epoch: [12] Average|Test set) loss: [0-9]+\.[0-9]{4}$')" -eq 4 ]
  check "cuda: files" test -s "$tmp/g/results/reconstruction_2.png" -a -s "$tmp/g/results/sample_2.png"
else
  echo "skipped: the CUDA run (no GPU)"
fi

run "$tmp/d" --bogus >/dev/null
rc=$?
check "bad flag: exit 2" [ "$rc" -eq 2 ]
check "bad flag: message" grep -qF "unrecognized arguments: --bogus" "$tmp/d/err"
help=$("$bin" "$main" --help)
check "help lists the flags" matches "$help" '--batch-size N.*'
check "help: --data-root" has "$help" "--data-root DIR"
(cd "$tmp/d" && "$bin" "$main" --data-root "$tmp/none" >/dev/null 2>"$tmp/d/err")
rc=$?
check "missing data: exit non-zero" [ "$rc" -ne 0 ]
check "missing data: message" grep -qF "MNIST: download=true, but nnrepl downloads nothing: put train-images-idx3-ubyte.gz" "$tmp/d/err"

finish
