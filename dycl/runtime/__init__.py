"""Load and run a converted package. Needs numpy and the package's backend; never torch."""
from .model import CompiledModel, InputError, PackageError, load

__all__ = ["load", "CompiledModel", "InputError", "PackageError"]
