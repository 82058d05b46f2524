"""Imports run one way: `contract/` (what an engine imports) never imports `migrate/` or `codemods/`, no
module imports itself round a circle, and presentation (rich, matplotlib) stays in the CLI: neither
`contract/` nor `codemods/` imports it. No module runs past 600 lines.

Every import statement counts, at module level or inside a function; only those under
`if TYPE_CHECKING:` are exempt (they never run). `from package import name` is an import
of the submodule when `name` is one, else of the package; the parent packages a submodule
import runs implicitly are not edges (they hold no code that could close a circle here).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Folder -> import package, as pyproject.toml's package-dir maps them.
PACKAGES = {
    "contract": "zerojit.contract",
    "migrate": "zerojit.migrate",
    "codemods": "zerojit.codemods",
    "zerojit": "zerojit",
}
BUNDLED_ENGINE_TREE = "example_tree"  # a legacy vLLM layout shipped as data for the codemods, not zerojit code
RUNTIME = "zerojit.contract"
OFFLINE = ("zerojit.migrate", "zerojit.codemods")
PRESENTATION = ("rich", "matplotlib")  # the CLI's (migrate/cli/) to import
WITHOUT_PRESENTATION = ("contract", "codemods")  # folders that never import it


def modules(root: Path, packages: dict[str, str]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package) for every module under the mapped folders."""
    found = {}
    for folder, package in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            if BUNDLED_ENGINE_TREE in parts:
                continue
            is_package = parts[-1] == "__init__"
            found[".".join((package, *(parts[:-1] if is_package else parts)))] = (path, is_package)
    return found


def _under_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: the whole tree except the bodies of `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            elif isinstance(child, ast.If) and _under_type_checking(child):
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]))
            else:
                visit(child)

    visit(tree)
    return found


def import_graph(root: Path, packages: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    known = modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        package = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
                continue
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.add(submodule if submodule in known else source)
        graph[name] = {target for target in targets if target in known and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if module == RUNTIME or module.startswith(RUNTIME + ".")
        for target in sorted(targets)
        if target.startswith(OFFLINE)
    ]


def presentation_imports(root: Path, folders: tuple[str, ...] = WITHOUT_PRESENTATION) -> list[str]:
    """`module imports library` for every import of a PRESENTATION library that can run in those folders."""
    found = []
    for name, (path, _) in modules(root, {folder: PACKAGES[folder] for folder in folders}).items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [node.module or ""] if node.level == 0 else []  # a relative import stays in the project
            found += [f"{name} imports {target}" for target in targets if target.split(".")[0] in PRESENTATION]
    return sorted(found)


@pytest.fixture(scope="module")
def graph():
    return import_graph(REPO, PACKAGES)


def test_the_runtime_contract_imports_no_offline_tooling(graph):
    assert any(module.startswith(RUNTIME) for module in graph)
    assert layer_violations(graph) == []


def test_no_module_imports_itself_round_a_circle(graph):
    assert circles(graph) == []


def test_the_runtime_and_the_codemods_import_neither_rich_nor_matplotlib():
    assert presentation_imports(REPO) == []


MAX_LINES = 600  # a module past this holds more than one concern: split it where the concerns part


def test_no_module_is_longer_than_one_sitting():
    long = {
        path.relative_to(REPO).as_posix(): lines
        for path, _ in modules(REPO, PACKAGES).values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert len(modules(REPO, PACKAGES)) > 100  # the walk sees the project
    assert long == {}


def write_package(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_see_function_level_imports_and_skip_type_checking_ones(tmp_path):
    write_package(
        tmp_path,
        {
            "contract/__init__.py": "",
            "contract/keys.py": "def f():\n    from zerojit.migrate import cli\n",
            "contract/report.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from zerojit.codemods import x\n",
            "migrate/__init__.py": "",
            "migrate/cli.py": "from . import families\n",
            "migrate/families.py": "def g():\n    from .cli import main\n",
            "codemods/__init__.py": "",
            "codemods/x.py": "from ..contract import keys\n",
        },
    )
    packages = {"contract": "zerojit.contract", "migrate": "zerojit.migrate", "codemods": "zerojit.codemods"}
    built = import_graph(tmp_path, packages)
    assert layer_violations(built) == ["zerojit.contract.keys imports zerojit.migrate.cli"]
    assert circles(built) == [["zerojit.migrate.cli", "zerojit.migrate.families"]]
    assert built["zerojit.codemods.x"] == {"zerojit.contract.keys"}


def test_the_presentation_check_sees_function_level_imports_and_skips_type_checking_ones(tmp_path):
    write_package(
        tmp_path,
        {
            "contract/__init__.py": "",
            "contract/timeline.py": "def draw():\n    import matplotlib.pyplot as plt\n",
            "contract/report.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rich.table import Table\n",
            "codemods/__init__.py": "",
            "codemods/x.py": "from rich import markup\nfrom .richer import y\n",
            "codemods/richer.py": "y = 1\n",
            "migrate/__init__.py": "",
            "migrate/cli.py": "from rich.table import Table\n",
        },
    )
    assert presentation_imports(tmp_path) == [
        "zerojit.codemods.x imports rich",
        "zerojit.contract.timeline imports matplotlib.pyplot",
    ]


def test_the_transforms_never_see_the_planner(graph):
    """Edits apart from analysis: a transform is a libcst command over the operation planning handed it; it
    imports neither the planner nor the planning steps (not even for type hints), which return what they find."""
    transforms = "zerojit.codemods.transforms"
    planning = ("zerojit.codemods.planner", "zerojit.codemods.planning")
    seen = [
        f"{path.name}:{node.lineno} names {name}"
        for path in sorted((REPO / "codemods" / "transforms").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for name in [getattr(node, "id", None) or getattr(node, "arg", None) or getattr(node, "attr", None)]
        if name in ("Planner", "planner", "planning")
    ]
    assert any(module.startswith(transforms) for module in graph)
    assert [
        (m, t) for m, targets in graph.items() if m.startswith(transforms) for t in targets if t.startswith(planning)
    ] == []
    assert seen == []
