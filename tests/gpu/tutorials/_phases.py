# What the multi-phase parity tests of this folder share (knowledge_distillation_tutorial,
# transfer_learning_tutorial, finetuning_torchvision_models_tutorial): several models trained in
# turn keep their weights in one file under "<phase>.<key>". The Lua side is _phases.lua.
from types import SimpleNamespace


def prefixed(prefix, sd):
    return {prefix + k: v for k, v in sd.items()}


def unprefixed(prefix, d):
    return {k[len(prefix):]: v for k, v in d.items() if k.startswith(prefix)}


def as_model(state):
    """what example_parity.main saves: an object whose state_dict() is the merged phases"""
    return SimpleNamespace(state_dict=lambda: state)
