"""A stand-in for triton while SGLang's modules are imported on a CPU machine.

SGLang imports triton at module level (`sglang/srt/utils/common.py`, reached from
`sglang/__init__.py`) to define GPU kernels; triton is a 1 GB GPU compiler that cannot run a
kernel here, and no SGLang code these tests call runs one. While `imported()` is active, `import
triton...` yields modules whose every attribute is a pass-through decorator or a subclassable
stub; afterwards they are removed again, so the rest of the test session sees no triton.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types


class _Stub(types.ModuleType):
    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []
        self.__spec__ = importlib.machinery.ModuleSpec(name, _Finder, is_package=True)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].isupper():  # classes: subclassed or used in isinstance checks
            value = type(name, (), {})
        else:
            value = _Stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def __call__(self, *args, **kwargs):  # @triton.jit and @triton.jit(...)
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda fn: fn


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stub(spec.name)

    def exec_module(self, module):
        if module.__name__ == "triton":
            module.__version__ = "3.0.0"
            module.cdiv = lambda a, b: -(a // -b)
            module.next_power_of_2 = lambda n: 1 << (n - 1).bit_length() if n > 0 else 1


@contextlib.contextmanager
def imported():
    """Make `import triton` work inside the block (only if triton is not really installed)."""
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        yield
        return
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]
        _forget_in_torch()


def _forget_in_torch() -> None:
    """torch caches whether triton imports (torch.utils._triton); drop what the stand-in made it see."""
    cached = sys.modules.get("torch.utils._triton")
    for value in vars(cached).values() if cached else ():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()
