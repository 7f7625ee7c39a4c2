# Parity of scripts/tutorials/basics/optimization.lua with the PyTorch tutorial
# beginner_source/basics/optimization_tutorial.py, PyTorch's side (the model and the steps: _basics.py).
#
#   python3 tests/gpu/tutorials/optimization.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/optimization.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/optimization.py compare DIR
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _basics  # noqa: E402

if __name__ == "__main__":
    _basics.run("optimization")
