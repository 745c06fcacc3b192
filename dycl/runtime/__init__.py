"""Load and run a converted package. Needs numpy and the package's backend; never torch."""
from .model import CompiledModel, InputError, PackageError, import_host, load
from .signature import Param, RegionSignature

__all__ = ["load", "import_host", "CompiledModel", "InputError", "PackageError", "Param", "RegionSignature"]
