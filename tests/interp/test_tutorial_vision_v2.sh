#!/usr/bin/env bash
# The transforms.v2 / tv_tensors gallery ports and the detection finetuning tutorial
# (scripts/tutorials/vision_v2/) end to end on tiny data made here: an "astronaut.jpg" and a
# two-image COCO folder for the gallery, an 8-image PennFudanPed (make_tiny_pennfudan.lua) for
# torchvision_tutorial with tiny Mask R-CNN inputs and one epoch; values known by hand where the
# draws do not matter (reprs, flipped boxes, wrapped COCO boxes, warm-up learning rates); missing
# data gives clear errors.
# Usage: bash tests/interp/test_tutorial_vision_v2.sh build/nnrepl
bin=${1:?usage: test_tutorial_vision_v2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tut=$root/scripts/tutorials/vision_v2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- the gallery's assets, small ----
mkdir -p "$tmp/assets/coco/images"
"$bin" -e "local tv = require 'torchvision'
  local y, x = torch.arange(512):view(512, 1):float():expand(512, 512), torch.arange(512):view(1, 512):float():expand(512, 512)
  tv.utils.save_image(torch.stack({x / 512, y / 512, ((x - 256) ^ 2 + (y - 200) ^ 2):sqrt():lt(120):float()}),
    '$tmp/assets/astronaut.jpg')
  for i = 1, 2 do tv.io.write_jpeg((torch.rand(3, 48, 64) * 255):to(torch.uint8), '$tmp/assets/coco/images/' .. i .. '.jpg') end"
cat > "$tmp/assets/coco/instances.json" <<'EOF'
{"images": [{"id": 1, "file_name": "1.jpg", "height": 48, "width": 64}, {"id": 2, "file_name": "2.jpg", "height": 48, "width": 64}],
 "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
 "annotations": [
  {"id": 1, "image_id": 1, "category_id": 1, "bbox": [4, 6, 20, 30], "area": 600, "iscrowd": 0, "segmentation": [[4, 6, 24, 6, 24, 36, 4, 36]]},
  {"id": 2, "image_id": 1, "category_id": 2, "bbox": [30, 10, 25, 20], "area": 250, "iscrowd": 0, "segmentation": [[30, 10, 55, 10, 30, 30]]},
  {"id": 3, "image_id": 2, "category_id": 2, "bbox": [10, 10, 30, 30], "area": 900, "iscrowd": 0, "segmentation": [[10, 10, 40, 10, 40, 40, 10, 40]]}]}
EOF

# ---- getting started ----
out=$("$bin" "$tut/plot_transforms_getting_started.lua" --assets "$tmp/assets" 2>&1)
check "start: exit 0" [ $? -eq 0 ]
check "start: the image" has "$out" "type(img) = <class 'torch.Tensor'>, img.dtype = torch.uint8, img.shape = torch.Size([3, 512, 512])"
check "start: RandomCrop plot" has "$out" "plot 1: image torch.Size([3, 224, 224]) torch.uint8"
check "start: classification pipeline gives float32" has "$out" "plot 1: image torch.Size([3, 224, 224]) torch.float32"
bb="<class 'torchvision.tv_tensors._bounding_boxes.BoundingBoxes'>"
check "start: boxes stay BoundingBoxes" has "$out" "$bb $bb"
check "start: the input boxes plotted" test "$(count "$out" '^plot 0: .*, 3 boxes \[15, 10, 370, 510\] \[275, 340, 510, 510\] \[130, 345, 210, 425\]$')" -eq 2
# after RandomResizedCrop to 224 every box lies in the canvas
outb=$(grep -E '^plot 1: image torch.Size\(\[3, 224, 224\]\) torch.uint8, 3 boxes' <<<"$out")
check "start: two transformed box plots" test "$(wc -l <<<"$outb")" -eq 2
check "start: transformed boxes inside 224 x 224" awk_true "$(grep -oE '[0-9]+' <<<"$(sed 's/.*boxes //' <<<"$outb")" | awk '$1 > 224 { bad = 1 } END { print bad ? 0 : 1 }')"
check "start: isinstance" has "$out" "isinstance(img_dp, torch.Tensor) = True"
check "start: img_dp line" matches "$out" '^img_dp\.dtype = torch\.uint8, img_dp\.shape = torch\.Size\(\[3, 256, 256\]\), img_dp\.sum\(\) = tensor\([0-9]+\)$'
check "start: foreign objects pass through" has "$out" "('arbitrary', {'structure': '!'})"
err=$("$bin" "$tut/plot_transforms_getting_started.lua" --assets "$tmp/none" 2>&1)
check "start: no assets: exit 1" [ $? -eq 1 ]
check "start: no assets: names the file" has "$err" "$tmp/none/astronaut.jpg"

# ---- tv_tensors FAQ ----
out=$("$bin" "$tut/plot_tv_tensors.lua" --assets "$tmp/assets" 2>&1)
check "tvt: exit 0" [ $? -eq 0 ]
check "tvt: Image repr" has "$out" "Image([[[[0, 1],
         [1, 0]]]], )"
check "tvt: float Image repr" has "$out" "Image([[[0., 1.],
        [1., 0.]]], requires_grad=True, )"
check "tvt: from PIL" has "$out" "torch.Size([3, 512, 512]) torch.uint8"
check "tvt: BoundingBoxes repr" has "$out" "BoundingBoxes([[ 17,  16, 344, 495],
               [  0,  10,   0,  10]], format=BoundingBoxFormat.XYXY, canvas_size=(512, 512), clamping_mode=soft)"
check "tvt: in-place add_(1):mul_(2)" has "$out" "Image([[[2, 4],
        [4, 2]]], )"
check "tvt: set_return_type reported unsupported" matches "$out" "^tv_tensors.set_return_type\('TVTensor'\) failed: .*set_return_type\('TVTensor'\) is not supported"

# ---- custom transforms and tv_tensors ----
out=$("$bin" "$tut/plot_custom_transforms.lua" 2>&1)
check "custom: exit 0" [ $? -eq 0 ]
check "custom: MyCustomTransform saw the inputs" has "$out" "I'm transforming an image of shape torch.Size([3, 256, 256]) with bboxes = BoundingBoxes([[ 0, 10, 10, 20],"
check "custom: output" has "$out" "Output image shape: torch.Size([3, 224, 224])"
check "custom: label passes" has "$out" "out_label = 3"
# a horizontal flip on a 256-wide canvas: x -> 256 - x
check "custom: flipped boxes of the nested input" has "$out" "The transformed bboxes are:
BoundingBoxes([[246,  10, 256,  20],
               [186,  50, 206,  70]], format=BoundingBoxFormat.XYXY, canvas_size=(256, 256), clamping_mode=soft)"
out=$("$bin" "$tut/plot_custom_tv_tensors.lua" 2>&1)
check "custom tvt: exit 0" [ $? -eq 0 ]
check "custom tvt: repr" has "$out" "MyTVTensor([1, 2, 3])"
check "custom tvt: the kernel ran for F.hflip and RandomHorizontalFlip" test "$(count "$out" '^Flipping!$')" -eq 2

# ---- CutMix / MixUp ----
out=$("$bin" "$tut/plot_cutmix_mixup.lua" 2>&1)
check "mix: exit 0" [ $? -eq 0 ]
check "mix: a sample" matches "$out" "^type\(img\) = <class 'torch.Tensor'>, img.dtype = torch.float32, img.shape = torch.Size\(\[3, 224, 224\]\), label = [0-9]+$"
check "mix: a batch" has "$out" "images.shape = torch.Size([4, 3, 224, 224]), labels.shape = torch.Size([4])
torch.int64"
check "mix: after the DataLoader" has "$out" "After CutMix/MixUp: images.shape = torch.Size([4, 3, 224, 224]), labels.shape = torch.Size([4, 100])"
check "mix: in the collate_fn" has "$out" "images.shape = torch.Size([4, 3, 224, 224]), labels.shape = torch.Size([4, 100])"
check "mix: labels_getter" has "$out" "out['imgs'].shape = torch.Size([4, 3, 224, 224]), out['target']['classes'].shape = torch.Size([4, 100])"

# ---- end-to-end detection transforms ----
out=$("$bin" "$tut/plot_transforms_e2e.lua" --assets "$tmp/assets" --min-size 64 --max-size 96 2>&1)
check "e2e: exit 0" [ $? -eq 0 ]
check "e2e: raw COCO sample" has "$out" "type(target) = <class 'list'>
type(target[0]) = <class 'dict'>
target[0].keys() = dict_keys(['area', 'bbox', 'category_id', 'id', 'image_id', 'iscrowd', 'segmentation'])"
check "e2e: wrapped sample" has "$out" "target.keys() = dict_keys(['boxes', 'masks', 'labels'])
type(target['boxes']) = <class 'torchvision.tv_tensors._bounding_boxes.BoundingBoxes'>
type(target['labels']) = <class 'torch.Tensor'>
type(target['masks']) = <class 'torchvision.tv_tensors._mask.Mask'>"
# XYWH [4, 6, 20, 30] is XYXY [4, 6, 24, 36]
check "e2e: wrapped boxes and masks" has "$out" "plot 0: PIL image 64x48, 2 boxes [4, 6, 24, 36] [30, 10, 55, 30], masks torch.Size([2, 48, 64])"
check "e2e: augmented samples are float Images with boxes and masks" \
  test "$(count "$out" '^plot [01]: image torch\.Size\(\[3, [0-9]+, [0-9]+\]\) torch\.float32, [0-9]+ boxes .*, masks torch\.Size\(\[[0-9]+, [0-9]+, [0-9]+\]\)$')" -eq 2
check "e2e: one batch of two" matches "$out" '^\[img\.shape for img in imgs\] = \[torch\.Size\(\[3, [0-9]+, [0-9]+\]\), torch\.Size\(\[3, [0-9]+, [0-9]+\]\)\]$'
check "e2e: five losses" test "$(count "$out" '^loss_(classifier|box_reg|mask|objectness|rpn_box_reg) +[0-9]+\.[0-9]{3}$')" -eq 5
err=$("$bin" "$tut/plot_transforms_e2e.lua" --assets "$tmp/none" 2>&1)
check "e2e: no assets: exit 1" [ $? -eq 1 ]
check "e2e: no assets: names the annotations" has "$err" "annotation file $tmp/none/coco/instances.json not found"

# ---- detection finetuning on a tiny PennFudanPed ----
mkdir -p "$tmp/pf"
"$bin" "$root/tests/interp/make_tiny_pennfudan.lua" "$tmp/pf/PennFudanPed" 8
out=$(cd "$tmp/pf" && "$bin" "$tut/torchvision_tutorial.lua" --data PennFudanPed --weights none --epochs 1 --test-size 2 \
  --min-size 48 --max-size 64 --print-freq 1 2>&1)
check "det: exit 0" [ $? -eq 0 ]
check "det: the sample image and mask" has "$out" "Image: torch.Size([3, 48, 64]), Mask: torch.Size([1, 48, 64]), instance ids in the mask: 0, 1"
t='tensor\([0-9]+\.[0-9]{4}, grad_fn=<[A-Za-z0-9]+>\)'
check "det: Faster R-CNN training losses printed" matches "$out" "^\{'loss_classifier': $t, 'loss_box_reg': $t, 'loss_objectness': $t, 'loss_rpn_box_reg': $t\}$"
check "det: inference output printed" matches "$out" "^\{'boxes': tensor\(.*'labels': tensor\(.*'scores': tensor\("
m='[0-9]+\.[0-9]{4} \([0-9]+\.[0-9]{4}\)'
check "det: 3 training lines (6 images, batches of 2)" \
  test "$(count "$out" "^Epoch: \[0\]  \[[0-2]/3\]  eta: [0-9]:[0-9]{2}:[0-9]{2}  lr: [0-9.]{8}  loss: $m  loss_classifier: $m  loss_box_reg: $m  loss_mask: $m  loss_objectness: $m  loss_rpn_box_reg: $m  time: [0-9.]+  data: [0-9.]+(  max mem: [0-9]+)?$")" -eq 3
# warm-up over min(1000, 3 - 1) = 2 steps from 0.005 / 1000: half-way after the first step
check "det: warm-up lr after step 1 (0.005 * 0.5005)" matches "$out" '^Epoch: \[0\]  \[0/3\]  eta: [0-9:]+  lr: 0\.00250[23]  '
check "det: lr 0.005 after the warm-up" matches "$out" '^Epoch: \[0\]  \[2/3\]  eta: [0-9:]+  lr: 0\.005000  '
check "det: epoch total" matches "$out" '^Epoch: \[0\] Total time: [0-9]:[0-9]{2}:[0-9]{2} \([0-9]+\.[0-9]{4} s / it\)$'
check "det: 2 test lines" test "$(count "$out" '^Test:  \[[01]/2\]  eta: ')" -eq 2
check "det: averaged stats" matches "$out" '^Averaged stats: model_time: [0-9.]+ \([0-9.]+\)  evaluator_time: '
check "det: box AP lines" test "$(count "$out" '^ Average Precision  \(AP\) @\[ IoU=(0\.50:0\.95|0\.50     |0\.75     ) \| area=   all \| maxDets=100 \] = [01]\.[0-9]{3}$')" -eq 3
check "det: done" has "$out" "That's it!"
check "det: prediction drawn" matches "$out" '^[0-9]+ detections drawn, written to prediction\.png$'
shape=$("$bin" -e "print(require('torchvision').io.read_image('$tmp/pf/prediction.png').shape)" 2>&1)
check "det: prediction.png loads ($shape)" test "$shape" = "torch.Size([3, 48, 64])"
err=$(cd "$tmp" && "$bin" "$tut/torchvision_tutorial.lua" 2>&1)
check "det: no data: exit 1" [ $? -eq 1 ]
check "det: no data: says what to extract" has "$err" "data/PennFudanPed/PNGImages not found: nnrepl downloads nothing; extract PennFudanPed.zip"
err=$(cd "$tmp/pf" && TORCH_HOME="$tmp/nohub" "$bin" "$tut/torchvision_tutorial.lua" --data PennFudanPed 2>&1)
check "det: no cached weights: exit 1" [ $? -eq 1 ]
check "det: no cached weights: says where the checkpoint goes" has "$err" "put it at $tmp/nohub/hub/checkpoints/fasterrcnn_resnet50_fpn_coco-258fb6c6.pth"

finish
