"""Library plumbing as transformers writes it around a forward, all decided when converting:
- a registry method called with the model (`_REGISTRY.get(self)`: `super().get(...) or {}`), a dict
  comprehension over it filtered by static flags, `if len(collected) > 0:` around a `with lock:` that
  would install hooks (never taken with these flags), and `collected.pop(...)` afterwards;
- a context variable set before the call and reset in `finally`, through the token it returned;
- `**kwargs` edited in place (`kwargs["scale"] = ...`, `_ = kwargs.pop("unused", None)`) and passed on;
- `try`/`except` around imports: one that fails (the handler's value), one that works;
- an assignment expression in a test (`if (pad := W - x.shape[-1]) > 0:`), a configuration object passed
  to a helper, and `isinstance`/`hasattr` of a tensor torch computed.
The gate on the result stays data-dependent."""
import contextvars
import threading

import torch
from torch import nn

W = 8
_LOCK = threading.Lock()


class _Collector:
    """A context variable behind methods of a library class (transformers' CompileableContextVar)."""

    def __init__(self, name):
        self.var = contextvars.ContextVar(name, default=None)

    def set(self, value):
        return self.var.set(value)

    def reset(self, token):
        self.var.reset(token)


_ACTIVE = _Collector("active")


class _Registry(dict):
    def get(self, model):
        return super().get(type(model).__name__) or {}


_REGISTRY = _Registry()


class Config:
    is_causal = True
    scale = 0.5

    def to_dict(self):
        return {"is_causal": self.is_causal, "scale": self.scale}


def fast_path_available():
    try:
        import dycl_module_that_does_not_exist  # noqa: F401
        return True
    except ImportError:
        return False


def tracing():
    try:
        import torch as _torch
        return _torch.jit.is_tracing()
    except Exception:
        return False


def install_hooks(model):
    if getattr(model, "hooked", False):
        return
    with _LOCK:
        model.hooked = True


def scaled(x, scale=1.0):
    return x * scale


def call_with(fn, x, **kwargs):
    if "scale" in kwargs:
        kwargs["scale"] = kwargs["scale"] * 2
    _ = kwargs.pop("unused", None)
    return fn(x, **kwargs)


def causal_flag(config):
    if not getattr(config, "is_causal", True):
        return 0.0
    return config.scale


class LibraryState(nn.Module):
    def __init__(self, record=False):
        super().__init__()
        self.proj = nn.Linear(W, W)
        self.config = Config()
        _REGISTRY[type(self).__name__] = {"hidden": record, "attn": False}

    def forward(self, x):
        flags = _REGISTRY.get(self)
        wanted = {f"out_{k}": flag for k, flag in flags.items()}
        collected = {k.replace("out_", ""): [] for k, v in wanted.items() if v}
        if len(collected) > 0:
            install_hooks(self)
        token = _ACTIVE.set(collected)
        try:
            h = self.proj(self.pad(x))
        finally:
            _ACTIVE.reset(token)
        collected.pop("_layers", None)
        if fast_path_available() or tracing():
            h = h * 0
        h = call_with(scaled, h, scale=causal_flag(self.config), unused=3)
        m = torch.ones_like(h)
        if isinstance(m, (torch.Tensor, dict)) and not hasattr(m, "jax") and len(m.shape) == 2:
            h = h * m
        if h.sum() > 0:
            return h
        return -h

    def pad(self, x):
        if (missing := W - x.shape[-1]) > 0:
            x = nn.functional.pad(x, (0, missing))
        return x[..., :W]


def get_model():
    torch.manual_seed(0)
    return LibraryState().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(3, W - 2 + i % 4, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
