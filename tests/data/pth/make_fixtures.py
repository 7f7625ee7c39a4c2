# Writes the PyTorch checkpoints tests/lua/test_load_pth.lua reads (run once with PyTorch; the
# files are committed): every value is a closed form of its position, so the test recomputes it.
#   python3 tests/data/pth/make_fixtures.py tests/data/pth
import collections
import os
import sys

import torch

d = sys.argv[1]
os.makedirs(d, exist_ok=True)


def ar(n, dtype):
    return torch.arange(n).to(dtype)


# a model's state_dict (OrderedDict with _metadata), as nn.Module.state_dict() makes it
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Linear(4, 2))
with torch.no_grad():
    for i, (k, v) in enumerate(m.state_dict().items()):
        if v.is_floating_point():
            v.copy_((ar(v.numel(), torch.float64) * 0.25 - i).reshape(v.shape))
m.state_dict()["1.num_batches_tracked"].fill_(7)
torch.save(m.state_dict(), os.path.join(d, "state_dict.pth"))

# every dtype, shared storage, views with offsets and strides, nested containers, scalars
base = ar(24, torch.float32) * 0.5 - 3
mixed = {
    "f32": base.reshape(4, 6),
    "view_t": base.reshape(4, 6).t(),                 # strides (1, 6), same storage
    "view_off": base[5:17].reshape(3, 4),             # storage offset 5
    "step": base[::3],                                # stride 3
    "f64": ar(5, torch.float64) / 3,
    "f16": ar(6, torch.float16) * 0.125,
    "bf16": ar(6, torch.bfloat16) - 2.5,
    "i64": ar(7, torch.int64) * 1000000007 - 3,
    "i32": ar(5, torch.int32) * -70000,
    "i16": ar(4, torch.int16) * -300,
    "i8": ar(6, torch.int8) - 3,
    "u8": ar(6, torch.uint8) * 40,
    "bool": ar(5, torch.int64) % 2 == 0,
    "scalar": torch.tensor(2.75),
    "empty": torch.zeros(0, 3),
    "param": torch.nn.Parameter(ar(3, torch.float32) + 1),
    "nested": {"list": [1, 2.5, "three", True, None], "tuple": (4, -5), "int_keys": {0: "a", 1: "b"}},
    "big_int": 2 ** 40 + 1,
    "neg_int": -129,
    "float": -0.1,
    "string": "caf\u00e9",
    "bytes": b"\x00\xffab",
    "flag": False,
    "none": None,
    "size": torch.Size([2, 3]),
    "dtype": torch.float16,
}
torch.save(mixed, os.path.join(d, "mixed.pth"))

# an optimizer's state_dict (integer keys, nested dicts, a step tensor)
p = torch.nn.Parameter(ar(4, torch.float32))
opt = torch.optim.Adam([p], lr=0.01)
p.grad = torch.ones(4)
opt.step()
torch.save(opt.state_dict(), os.path.join(d, "adam.pth"))

# a tensor saved from the GPU (location "cuda:0") and one alone
if torch.cuda.is_available():
    torch.save({"w": (ar(6, torch.float32) * 2).cuda()}, os.path.join(d, "cuda.pth"))
torch.save(ar(3, torch.float64) * 1.5, os.path.join(d, "tensor.pth"))

# what the loader must refuse with a clear message: a whole pickled module, the legacy format
torch.save(torch.nn.Linear(2, 2), os.path.join(d, "module.pth"))
torch.save({"x": ar(2, torch.float32)}, os.path.join(d, "legacy.pth"), _use_new_zipfile_serialization=False)
for f in sorted(os.listdir(d)):
    print(f, os.path.getsize(os.path.join(d, f)))
