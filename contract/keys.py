"""Compile keys: the identity of one compiled kernel variant.

A key is a frozen dataclass of plain values. Its canonical JSON (sorted fields, no
whitespace, tuples as lists) is what plans and reports store and diff, and its digest
is a short stable name for the variant across processes and machines.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

_SCALARS = (bool, int, float, str, type(None))


def _check_value(owner: str, name: str, value: Any) -> None:
    if isinstance(value, tuple):
        for item in value:
            _check_value(owner, name, item)
    elif not isinstance(value, _SCALARS):
        raise TypeError(
            f"{owner}.{name}={value!r}: key fields hold bool/int/float/str/None or tuples of them, "
            f"not {type(value).__name__}"
        )


def jsonable(value: Any) -> Any:
    """Plain JSON data for reports: dataclasses become dicts, tuples lists, the rest as is or str()."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value if isinstance(value, _SCALARS) else str(value)


def _as_tuples(value: Any) -> Any:
    """JSON has no tuples: lists read back from canonical JSON become tuples again."""
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


def _none_last(value: Any) -> tuple:
    """A sort position for one field value in which None never meets a number."""
    return (1, ()) if value is None else (0, value)


@dataclasses.dataclass(frozen=True)
class CompileKey:
    """Base of every kernel's compile key; subclass it as a frozen dataclass.

    Example::

        @dataclasses.dataclass(frozen=True)
        class SplitKey(CompileKey):
            num_splits: int
            causal: bool
    """

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_value(type(self).__name__, field.name, getattr(self, field.name))

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CompileKey:
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        missing = sorted(names - set(data))
        if unknown or missing:
            raise ValueError(
                f"{cls.__name__}: JSON does not match the key fields (unknown {unknown}, missing {missing})"
            )
        return cls(**{name: _as_tuples(value) for name, value in data.items()})

    def digest(self) -> str:
        """16 hex digits of SHA-256 over the key type and its canonical JSON."""
        return hashlib.sha256(f"{type(self).__name__}:{self.to_json()}".encode()).hexdigest()[:16]

    def sort_key(self) -> tuple:
        """Total order over keys of one type, even when optional fields are None."""
        return tuple(_none_last(getattr(self, f.name)) for f in dataclasses.fields(self))

    def __lt__(self, other: CompileKey) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({fields})"
