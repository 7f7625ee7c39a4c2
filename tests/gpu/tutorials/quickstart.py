# Parity of scripts/tutorials/basics/quickstart.lua with the PyTorch tutorial
# beginner_source/basics/quickstart_tutorial.py, PyTorch's side (the model and the steps: _basics.py).
#
#   python3 tests/gpu/tutorials/quickstart.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/quickstart.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/quickstart.py compare DIR
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _basics  # noqa: E402

if __name__ == "__main__":
    _basics.run("quickstart")
