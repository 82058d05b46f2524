"""The migration's edits, one libcst codemod per spec operation, each in a module of its own (no family knowledge).

Names are resolved semantically: `FullyQualifiedNameProvider` says what a name or attribute
refers to whatever the import form (module aliases, aliased names, relative imports, imports
inside functions), `ScopeProvider` says what is bound where. So a local, a parameter, a
keyword argument or an attribute of another object that merely shares a name is never
touched. An edit that cannot be made safely is refused (a `Refusal`: the operation, the place and why),
never guessed. Imports go through libcst's `AddImportsVisitor` / `RemoveImportsVisitor`.

Each operation is a frozen dataclass registered under its name (`base.operation`);
`command(context)` makes the codemod, and `pipeline.apply` runs a file's operations in
order, then deletes private helpers the change left without a caller and locals it left
unread (when their value is pure). Every module of this package is imported here, so a new
transform registers itself by being a file in it.
"""

import importlib
import pkgutil

from .adopt_contract import AdoptContract
from .base import OPERATIONS, AnchorError, Note, Operation
from .insert_registration import InsertRegistration
from .pipeline import FileEdit, apply
from .remove_dead_helper import RemoveHelpers
from .remove_dead_local import RemoveDeadLocals
from .remove_legacy_call import RemoveLegacyCalls
from .rename_kernel import RenameKernel

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "OPERATIONS",
    "AdoptContract",
    "AnchorError",
    "FileEdit",
    "InsertRegistration",
    "Note",
    "Operation",
    "RemoveDeadLocals",
    "RemoveHelpers",
    "RemoveLegacyCalls",
    "RenameKernel",
    "apply",
]
