#!/usr/bin/env bash
# The vision tutorial ports (scripts/tutorials/) end to end on tiny data made here:
# spatial_transformer_tutorial on a tiny MNIST (make_tiny_mnist.lua) for 3 epochs (the test loss
# falls, accuracy rises, the two STN grids are written), dcgan_faces_tutorial on a folder of 16
# JPEG "faces" at small sizes (Loss_D falls, the image grids are written), data_loading_tutorial
# on a 70-row face_landmarks.csv over four images (values and shapes known here); missing data
# gives clear errors.
# Usage: bash tests/interp/test_tutorial_vision.sh build/nnrepl
bin=${1:?usage: test_tutorial_vision.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tut=$root/scripts/tutorials
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- spatial transformer ----
mkdir -p "$tmp/stn"
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/stn" 256 100
out=$(cd "$tmp/stn" && "$bin" "$tut/spatial_transformer_tutorial/main.lua" --epochs 3 2>&1)
check "stn: exit 0" [ $? -eq 0 ]
check "stn: 3 train lines (batch 0 of 4 each epoch)" test "$(count "$out" '^Train Epoch: [1-3] \[0/256 \(0%\)\]	Loss: [0-9]+\.[0-9]{6}$')" -eq 3
tests=$(grep -E '^Test set: ' <<<"$out")
check "stn: 3 test blocks in format" test "$(count "$tests" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \([0-9]+%\)$')" -eq 3
l1=$(sed -nE '1s/.*Average loss: ([0-9.]+),.*/\1/p' <<<"$tests") l3=$(sed -nE '3s/.*Average loss: ([0-9.]+),.*/\1/p' <<<"$tests")
a1=$(sed -nE '1s/.*Accuracy: ([0-9]+)\/.*/\1/p' <<<"$tests") a3=$(sed -nE '3s/.*Accuracy: ([0-9]+)\/.*/\1/p' <<<"$tests")
check "stn: test loss falls ($l1 -> $l3)" less "$l3" "$l1"
check "stn: accuracy rises ($a1 -> $a3)" less "$a1" "$a3"
# 64 test images of 28x28 in make_grid's 8 columns: 8 * 30 + 2 = 242
check "stn: grid sizes printed" has "$out" "Dataset Images: torch.Size([242, 242, 3]), Transformed Images: torch.Size([242, 242, 3])"
shapes=$("$bin" -e "local tv = require 'torchvision'
  local a, b = tv.io.read_image('$tmp/stn/stn_dataset_images.png'), tv.io.read_image('$tmp/stn/stn_transformed_images.png')
  print(a.shape, b.shape)" 2>&1)
check "stn: both grids written ($shapes)" test "$shapes" = "torch.Size([3, 242, 242])	torch.Size([3, 242, 242])"
err=$(cd "$tmp" && "$bin" "$tut/spatial_transformer_tutorial/main.lua" 2>&1)
check "stn: no MNIST: exit 1" [ $? -eq 1 ]
check "stn: no MNIST: says where the files go" has "$err" "nnrepl downloads nothing: put train-images-idx3-ubyte.gz"

# ---- dcgan faces ----
mkdir -p "$tmp/dc/celeba/img_align_celeba"
"$bin" -e "local tv = require 'torchvision'
  local y, x = torch.arange(72):view(72, 1):float(), torch.arange(80):view(1, 80):float()
  for i = 0, 15 do -- a bright disc on a dark ground, 80 x 72: Resize and CenterCrop both act
    local img = (((y - 36) ^ 2 + (x - 40 - i) ^ 2):sqrt():lt(20):float() * 0.8 + 0.1):expand(3, 72, 80)
    tv.utils.save_image(img, string.format('$tmp/dc/celeba/img_align_celeba/%06d.jpg', i))
  end"
out=$(cd "$tmp/dc" && "$bin" "$tut/dcgan_faces_tutorial/main.lua" --dataroot celeba --batch_size 4 --num_epochs 6 \
  --nz 16 --ngf 8 --ndf 8 --workers 0 2>&1)
check "dcgan: exit 0" [ $? -eq 0 ]
check "dcgan: seed line" has "$out" "Random Seed:  999"
check "dcgan: Generator printed" has "$out" "    (0): ConvTranspose2d(16, 64, kernel_size=(4, 4), stride=(1, 1), bias=False)"
check "dcgan: Discriminator printed" has "$out" "    (11): Conv2d(64, 1, kernel_size=(4, 4), stride=(1, 1), bias=False)"
check "dcgan: training starts" has "$out" "Starting Training Loop..."
num='[0-9]+\.[0-9]{4}'
check "dcgan: one line per epoch, in format" \
  test "$(count "$out" "^\[[0-5]/6\]\[0/4\]	Loss_D: $num	Loss_G: $num	D\(x\): $num	D\(G\(z\)\): $num / $num$")" -eq 6
summary=$(grep -E '^Generator and Discriminator Loss' <<<"$out")
check "dcgan: loss summary over 24 iterations ($summary)" matches "$summary" "24 iterations, G $num -> $num, D $num -> $num$"
d0=$(sed -nE 's/.*D ([0-9.]+) -> ([0-9.]+)$/\1/p' <<<"$summary") d1=$(sed -nE 's/.*D ([0-9.]+) -> ([0-9.]+)$/\2/p' <<<"$summary")
check "dcgan: Loss_D falls ($d0 -> $d1)" less "$d1" "$d0"
shapes=$("$bin" -e "local tv = require 'torchvision'
  for _, f in ipairs({'training_images', 'real_images', 'fake_images'}) do io.write(tostring(tv.io.read_image('$tmp/dc/' .. f .. '.png').shape), ' ') end" 2>&1)
# 4 real images of 64 in a row: 4 * 66 + 2 (padding 2), 4 * 69 + 5 (padding 5); the 64 fakes: 8 x 8
check "dcgan: image grids written ($shapes)" \
  test "$shapes" = "torch.Size([3, 68, 266]) torch.Size([3, 74, 281]) torch.Size([3, 530, 530]) "
err=$(cd "$tmp/dc" && "$bin" "$tut/dcgan_faces_tutorial/main.lua" 2>&1)
check "dcgan: no data/celeba: names the folder" has "$err" "cannot list 'data/celeba'"

# ---- data loading ----
mkdir -p "$tmp/dl/data/faces"
"$bin" -e "local tv = require 'torchvision'
  local sizes = {{150, 130}, {140, 200}, {160, 160}, {135, 141}} -- h, w of face1..face4
  local f = assert(io.open('$tmp/dl/data/faces/face_landmarks.csv', 'w'))
  local head = {'image_name'}
  for p = 0, 67 do head[#head + 1] = 'part_' .. p .. '_x'; head[#head + 1] = 'part_' .. p .. '_y' end
  f:write(table.concat(head, ','), '\n')
  for k = 1, #sizes do tv.utils.save_image(torch.rand(3, sizes[k][1], sizes[k][2]), '$tmp/dl/data/faces/face' .. k .. '.jpg') end
  for r = 0, 69 do -- row r: face(r % 4 + 1), point p at ((p + r) % w, (2p + r) % h)
    local k = r % 4 + 1
    local row = {'face' .. k .. '.jpg'}
    for p = 0, 67 do row[#row + 1] = (p + r) % sizes[k][2]; row[#row + 1] = (2 * p + r) % sizes[k][1] end
    f:write(table.concat(row, ','), '\n')
  end
  f:close()"
out=$(cd "$tmp/dl" && "$bin" "$tut/data_loading_tutorial.lua" 2>&1)
check "data: exit 0" [ $? -eq 0 ]
check "data: row 65's image" has "$out" "Image name: face2.jpg"
check "data: landmarks shape" has "$out" "Landmarks shape: (68, 2)"
# row 65, w 200, h 140: point p at (p + 65, 2p + 65)
check "data: first 4 landmarks" has "$out" "First 4 Landmarks: tensor([[65., 65.],
        [66., 67.],
        [67., 69.],
        [68., 71.]], dtype=torch.float64)"
check "data: the first 4 samples' shapes" has "$out" "0 (150, 130, 3) (68, 2)
1 (140, 200, 3) (68, 2)
2 (160, 160, 3) (68, 2)
3 (135, 141, 3) (68, 2)"
# sample 65 is 140 x 200: the shorter side to 256, the other 256 * 200 / 140 = 365.7 -> 365
check "data: the three transforms on sample 65" has "$out" "Rescale: (256, 365, 3) (68, 2)
RandomCrop: (128, 128, 3) (68, 2)
Compose: (224, 224, 3) (68, 2)"
check "data: transformed samples" test "$(count "$out" '^[0-3] torch\.Size\(\[3, 224, 224\]\) torch\.Size\(\[68, 2\]\)$')" -eq 4
check "data: 4 batches of 4" test "$(count "$out" '^[0-3] torch\.Size\(\[4, 3, 224, 224\]\) torch\.Size\(\[4, 68, 2\]\)$')" -eq 4
# make_grid of 4 images of 224: 4 * 226 + 2 wide, 228 high
check "data: the batch's grid" has "$out" "Batch from dataloader: grid torch.Size([3, 228, 906])"
rm "$tmp/dl/data/faces/face_landmarks.csv"
err=$(cd "$tmp/dl" && "$bin" "$tut/data_loading_tutorial.lua" 2>&1)
check "data: no CSV: exit 1" [ $? -eq 1 ]
check "data: no CSV: names it" has "$err" "No such file or directory: 'data/faces/face_landmarks.csv'"

finish
