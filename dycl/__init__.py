"""dycl: compile dynamic PyTorch networks with static deep-learning compilers.

`dycl.load(path)` runs a converted package with numpy and its backend only;
`dycl.convert(...)` (conversion needs torch) lives in `dycl.convert`.
"""
from .runtime import CompiledModel, InputError, load

__version__ = "0.1.0"
__all__ = ["load", "CompiledModel", "InputError", "__version__"]
