"""An engine release's own modules, run from its source tree beside named stubs.

Key equivalence runs the engine's pre-migration code (and, to check a migration, the
migrated tree's registration gates) instead of a re-implementation. Only the modules a
family names as real are executed from the tree. A module named in `stubs` gets exactly
the attributes given (the facts under test: platform, config, TP size, ...). Every other
module of the engine package is "names only": importing it and any name from it works,
constructing and calling its placeholders works, but a placeholder used in a decision
(`if`, `and`, `==`, arithmetic, iteration) raises `NamesOnlyUsed`, so a stub the key
logic depends on can never pass silently: the family must list it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any


class NamesOnlyUsed(RuntimeError):
    """Engine code decided something from a module the family runs as names only."""


def _refuse(what: str):
    def refuse(self: Any, *args: Any) -> Any:
        raise NamesOnlyUsed(
            f"{object.__getattribute__(self, '_zerojit_name')} was used in a decision ({what}); "
            "the family must stub it with a value"
        )

    return refuse


class _PlaceholderMeta(type):
    """Class-level attribute reads on a placeholder class give placeholders too."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{cls._zerojit_name}.{name}")

    def __getitem__(cls, item: Any) -> Any:
        """A generic placeholder subscripted (`Base["Key"]`) is still that placeholder."""
        return cls

    # Without these, `x in Placeholder` would iterate by __getitem__ forever.
    __iter__ = _refuse("iteration")
    __contains__ = _refuse("membership")


class _Placeholder(metaclass=_PlaceholderMeta):
    _zerojit_name = "placeholder"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{object.__getattribute__(self, '_zerojit_name')}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return placeholder(f"{object.__getattribute__(self, '_zerojit_name')}(...)")

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    __bool__ = _refuse("truth value")
    __eq__ = _refuse("==")
    __lt__ = __le__ = __gt__ = __ge__ = _refuse("ordering")
    __iter__ = _refuse("iteration")
    __len__ = _refuse("len")
    __int__ = __index__ = __float__ = _refuse("number")
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = _refuse("arithmetic")
    __hash__ = object.__hash__

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """An engine class built on a placeholder base is real code: it decides like any object."""
        super().__init_subclass__(**kwargs)
        if "_zerojit_name" not in cls.__dict__:
            for name in (
                "__bool__",
                "__eq__",
                "__lt__",
                "__le__",
                "__gt__",
                "__ge__",
                "__iter__",
                "__len__",
                "__int__",
                "__index__",
                "__float__",
                "__add__",
                "__radd__",
                "__sub__",
                "__rsub__",
                "__mul__",
                "__rmul__",
                "__truediv__",
                "__floordiv__",
                "__getattr__",
                "__call__",
            ):
                if name not in cls.__dict__ and not any(
                    name in base.__dict__ for base in cls.__mro__[1:-1] if not issubclass(base, _Placeholder)
                ):
                    setattr(cls, name, _plain(name))


def _plain(name: str) -> Any:
    """What a plain object does for `name`: object's own slot, else truthy / no such attribute / unsupported."""
    default = object.__dict__.get(name)
    if default is not None:
        return default

    def missing(self: Any, *args: Any) -> Any:
        if name == "__bool__":
            return True
        if name == "__getattr__":
            raise AttributeError(args[0])
        raise TypeError(f"{type(self).__name__} does not support {name}")

    return missing


# Attributes read in one chain off a placeholder, past which engine code is walking it in a loop (`while kernel is
# not None: kernel = getattr(kernel, "fn", None)`, which would never end): real chains stay far below.
DEEPEST_READ = 64


def placeholder(name: str) -> type:
    """A stand-in class for `name`: callable, subclassable, attribute-rich, refusing decisions."""
    depth = name.replace("(...)", "").count(".")  # attribute reads (and the module's own dots); calls add none
    if depth > DEEPEST_READ:
        raise NamesOnlyUsed(
            f"{name[:120]}... was read {depth} attributes deep, a loop over a names-only value; "
            "the family must run its module from the tree or stub it"
        )
    parent, _, last = name.rpartition(".")
    return _PlaceholderMeta(last, (_Placeholder,), {"_zerojit_name": name, "__module__": parent})


def is_names_only(value: Any) -> bool:
    """A placeholder: a names-only module's name, or what constructing, calling or reading it gave."""
    return isinstance(value, (_Placeholder, _PlaceholderMeta))


class _NamesOnlyModule(types.ModuleType):
    sources: EngineSources | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        qualified = f"{self.__name__}.{name}"
        if self.sources is not None and (qualified in self.sources.stubs or qualified in self.sources.real_modules):
            return importlib.import_module(qualified)  # `from vllm import envs`: the submodule the family gives
        value = placeholder(qualified)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves the engine package's imports: real from the tree, stubbed, or names only."""

    def __init__(self, sources: EngineSources):
        self.sources = sources

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        sources = self.sources
        if name in sources.real_modules:
            file = sources.file_of(name)
            package = file.name == "__init__.py"
            return importlib.util.spec_from_file_location(
                name, file, submodule_search_locations=[str(file.parent)] if package else None
            )
        if name in sources.stubs or sources.in_package(name):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        attrs = self.sources.stubs.get(spec.name)
        module = types.ModuleType(spec.name) if attrs is not None else _NamesOnlyModule(spec.name)
        if isinstance(module, _NamesOnlyModule):
            module.sources = self.sources
        module.__dict__.update(attrs or {})
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class EngineSources:
    """Modules of one engine tree (`root` holds the top-level package), loaded on demand.

    Everything the engine imports lives in sys.modules only inside `installed()` (engine
    code imports some names at call time), so nothing leaks between trees or into tests.
    Engine modules decide some things at import (`if current_platform.is_cuda(): import ...`),
    so loaded modules are kept per `variant` (the facts the stubs give at import, e.g. the
    arch); `functools.cache`s in them are cleared on each install, since they may hold a
    previous configuration's facts.
    """

    def __init__(
        self,
        root: Path,
        package: str,
        real_modules: tuple[str, ...],
        stubs: dict[str, dict[str, Any]],
        names_only: tuple[str, ...] = (),
    ):
        """`names_only`: other top-level packages the engine imports whose modules are names only here."""
        self.root = Path(root)
        self.package = package
        self.packages = (package, *names_only)
        self.real_modules = set(real_modules)
        self.stubs = stubs
        missing = [name for name in real_modules if not self.file_of(name).exists()]
        if not (self.root / package / "__init__.py").is_file():
            raise FileNotFoundError(f"{self.root} holds no {package}/ package (an engine tree's root was expected)")
        if missing:
            raise FileNotFoundError(f"the tree at {self.root} has no module {', '.join(missing)}")
        self._loaded: dict[Hashable, dict[str, types.ModuleType]] = {}

    def file_of(self, name: str) -> Path:
        """The source file of module `name` in this tree (a package's `__init__.py`)."""
        base = self.root / Path(*name.split("."))
        return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")

    def in_package(self, name: str) -> bool:
        return name.partition(".")[0] in self.packages

    def _ours(self, name: str) -> bool:
        return self.in_package(name) or name in self.stubs

    @contextlib.contextmanager
    def installed(self, variant: Hashable = None) -> Iterator[None]:
        saved = {name: module for name, module in sys.modules.items() if self._ours(name)}
        for name in saved:
            del sys.modules[name]
        loaded = self._loaded.setdefault(variant, {})
        sys.modules.update(loaded)
        finder = _Finder(self)
        sys.meta_path.insert(0, finder)
        for module in loaded.values():
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
        try:
            yield
        finally:
            sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if self._ours(n)]:
                module = sys.modules.pop(name)
                if name in self.real_modules or name in self.stubs or isinstance(module, _NamesOnlyModule):
                    loaded[name] = module
            sys.modules.update(saved)

    def module(self, name: str) -> types.ModuleType:
        """Import `name` (inside `installed()`)."""
        return importlib.import_module(name)
