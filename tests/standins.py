"""Stand-in modules for imports that third-party model code makes but never uses on the tested paths.

PyPI's torchvision wheel (pulled in by timm) is built against the CUDA build of
torch; beside the CPU build pinned here, `import torchvision` fails with
"operator torchvision::nms does not exist". The third-party model code under
test (the DyCL subjects, timm) imports torchvision (and the subjects h5py) at
module level for data loading, pretrained encoders and `FrozenBatchNorm2d`
only; none of it is on the paths these tests convert. A stand-in lets those
modules import; using any of its names raises, so a test can never pass
through it by accident.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

__all__ = ["ensure_importable"]


class _UnavailableType(type):
    def __getattr__(cls, name: str):  # `InterpolationMode.NEAREST` in a module-level table: another stand-in
        if name.startswith("__"):
            raise AttributeError(name)
        return _unavailable(f"{cls.__qualname__}.{name}", cls.__module__)


class _Unavailable(metaclass=_UnavailableType):
    """A name from the stand-in: a class (so isinstance checks work) that cannot be used."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__qualname__} comes from the {type(self).__module__} stand-in "
                           "(the real module cannot be imported here)")


def _unavailable(qualname: str, module: str) -> type:
    return _UnavailableType(qualname.rpartition(".")[2], (_Unavailable,), {"__module__": module,
                                                                           "__qualname__": qualname})


class _StandinModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _unavailable(name, self.__name__)
        setattr(self, name, value)
        return value


class _StandinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, top: str):
        self.top = top

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.top or fullname.startswith(self.top + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StandinModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        parent, _, child = module.__name__.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


def ensure_importable(*tops: str) -> None:
    """Import each top-level module for real, or install a stand-in for it (and its submodules)."""
    for top in tops:
        if any(isinstance(f, _StandinFinder) and f.top == top for f in sys.meta_path):
            continue
        try:
            importlib.import_module(top)
            continue
        except Exception:
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]
        sys.meta_path.insert(0, _StandinFinder(top))
