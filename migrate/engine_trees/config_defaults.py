"""The tree's own config defaults behind a family's stand-in config.

A family's stand-in engine config holds what its legacy code reads (model shapes, the JIT switch). A fork's gate
may read more of it (`vllm_config.parallel_config.tensor_parallel_size`): such a field is the default the tree's
own config class gives it (`tensor_parallel_size: int = Field(default=1, ge=1)`), read from the source with `ast`;
a field whose default is a config of its own (`Field(default_factory=ParallelConfig)`) is that config's
defaults. Both sides of a key check read the same value, and each one read is listed (`read`), so a report can
say at which values the check ran; a constructor's branch on one takes the arm the default picks, as one on a
value the grid sets. A field the class gives no literal default stays missing.
"""

from __future__ import annotations

import ast
import dataclasses
import types
from typing import Any

from zerojit.codemods.repo import import_table

from .sources import EngineSources


@dataclasses.dataclass(frozen=True)
class SubConfig:
    module: str
    name: str


@dataclasses.dataclass(frozen=True)
class Field:
    default: Any  # a literal, a SubConfig (built with its own defaults), or AttributeError (none the tree gives)
    config: SubConfig | None  # the config class it holds, whose defaults stand behind a stand-in's value


class TreeConfigs:
    """The config classes of one tree: each class's fields with a literal default or a config default."""

    def __init__(self, sources: EngineSources, config_class: str):
        self.sources = sources
        self.root = self._class(*config_class.split(":"))
        self.read: set[str] = set()  # "vllm_config.parallel_config.tensor_parallel_size = 1", as read
        self._fields: dict[SubConfig, dict[str, Field]] = {}

    def around(self, stand_in: Any, name: str) -> Any:
        """The stand-in engine config with the tree's defaults behind it (as is where the tree has no config class)."""
        return stand_in if self.root is None else Defaulted(stand_in, self, self.root, name)

    def fields(self, config: SubConfig) -> dict[str, Field]:
        if config not in self._fields:
            self._fields[config] = self._read_fields(config)
        return self._fields[config]

    def _read_fields(self, config: SubConfig) -> dict[str, Field]:
        node = self._definition(config)
        found: dict[str, Field] = {}
        for statement in getattr(node, "body", []):
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                continue
            value = statement.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Field":
                keywords = {k.arg: k.value for k in value.keywords}
                value = keywords.get("default", keywords.get("default_factory"))
            annotation = statement.annotation
            if isinstance(annotation, ast.BinOp):  # `ModelConfig | None`: the config it may hold
                annotation = annotation.left
            typed = self._class(config.module, annotation.id) if isinstance(annotation, ast.Name) else None
            if isinstance(value, ast.Constant):
                found[statement.target.id] = Field(value.value, typed)
            elif isinstance(value, ast.Name) and (sub := self._class(config.module, value.id)) is not None:
                found[statement.target.id] = Field(sub, sub)
            elif typed is not None:
                found[statement.target.id] = Field(AttributeError, typed)
        return found

    def _definition(self, config: SubConfig) -> ast.ClassDef | None:
        tree = self._tree(config.module)
        return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == config.name), None)

    def _class(self, module: str, name: str, depth: int = 0) -> SubConfig | None:
        """Where the class `name` read in `module` is defined (following imports), None if not in the tree."""
        tree = self._tree(module)
        if any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
            return SubConfig(module, name)
        is_package = self.sources.file_of(module).name == "__init__.py"
        source = import_table(tree, module, is_package).get(name)
        if source is None or source[1] is None or depth > 4:
            return None
        return self._class(source[0], source[1], depth + 1)

    def _tree(self, module: str) -> ast.Module:
        path = self.sources.file_of(module)
        return ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else ast.Module([], [])


class Defaulted:
    """A stand-in config whose missing fields are the tree's defaults (`TreeConfigs`); writes go to the stand-in."""

    def __init__(self, stand_in: Any, configs: TreeConfigs, config: SubConfig, path: str):
        object.__setattr__(self, "_zerojit", (stand_in, configs, config, path))

    def __getattr__(self, name: str) -> Any:
        stand_in, configs, config, path = object.__getattribute__(self, "_zerojit")
        if name.startswith("__"):
            raise AttributeError(name)
        field = configs.fields(config).get(name, Field(AttributeError, None))
        if hasattr(stand_in, name):
            value = getattr(stand_in, name)
            if field.config is not None and isinstance(value, types.SimpleNamespace):
                return Defaulted(value, configs, field.config, f"{path}.{name}")
            return value
        if isinstance(field.default, SubConfig):
            return Defaulted(types.SimpleNamespace(), configs, field.default, f"{path}.{name}")
        if field.default is AttributeError:
            raise AttributeError(
                f"{path}.{name}: the key check's stand-in has no {name}, and the tree's {config.name} gives it no "
                "literal default"
            )
        configs.read.add(f"{path}.{name} = {field.default!r}")
        return field.default

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_zerojit")[0], name, value)

    def sub_configs(self) -> dict[str, Any]:
        """Each field of this config that is a config itself, as this object reads it."""
        stand_in, configs, config, _ = object.__getattribute__(self, "_zerojit")
        return {
            name: getattr(self, name)
            for name, field in configs.fields(config).items()
            if field.config is not None and (hasattr(stand_in, name) or isinstance(field.default, SubConfig))
        }
