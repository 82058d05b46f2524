"""The construction check: code that changes a built object after its registration read it.

A registration in a constructor (or in the method a spec names) reads the object's attributes
when the object is built. Code of the repo that stores into one of those attributes later, or
calls a method of the class that sets one, leaves the registration with the value it replaced:
the run is refused at that line. Such code is looked for wherever the object stays reachable
(`_reaches`), through whatever holds it there (`_Holders`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..repo import RepoModules
from ..syntax import own_nodes, self_stores, statements
from .subclasses import replacing_subclasses, self_reads, subclasses_of

if TYPE_CHECKING:
    from ..planner import Planner, SourceModule

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def changed_after_building(
    planner: Planner, modules: RepoModules, module: str, name: str, reads: set[str], method: str
) -> list[tuple[SourceModule, ast.AST, str]]:
    """Statements of the repo that build `module.name` (or a subclass) as `x = Class(...)` and then, where code can
    still reach it, store into `x.<attr>` for an attr of `reads` (`self.linear_attn.norm.activation = ...` after
    `self.linear_attn = Class(...)`), or call a method of the class, other than the registration's `method`, that
    sets one (`self.gate.set_out_dtype(...)`): the registration read the value before. Each with the statement and
    what it changes, spelled from what holds the object (`self.linear_attn.norm`)."""
    if not reads:
        return []
    classes = {modules.resolve(module, name)} | {own for _, _, own, _ in subclasses_of(planner, modules, module, name)}
    names = {qualified[1] for qualified in classes}
    node = modules.definition(*modules.resolve(module, name))
    changers = {
        member.name: sorted({attr for attr, _ in self_stores(member)} & reads)
        for member in getattr(node, "body", ())
        if isinstance(member, ast.FunctionDef) and member.name not in ("__init__", method)
    }
    changers = {changer: changed for changer, changed in changers.items() if changed}
    changing, based = _changing(planner, modules, reads, changers)
    pattern = "|".join(map(re.escape, sorted(names)))
    global_names = r"[ \t]+global[ \t]+\w+[\w, \t]*$"
    module_level = re.compile(rf"^(?:\w+\s*(?::[^=\n]*)?=\s*(?:\w+\.)*(?:{pattern})\(|{global_names})", re.MULTILINE)
    attributes = "|".join(map(re.escape, sorted({*reads, *changers})))
    found: dict[tuple, tuple[SourceModule, ast.AST, str]] = {}
    for home in (m for m in planner.modules.values() if any(f"{n}(" in m.text for n in names)):
        spelled = names | {
            alias for n in names if f"{n} as" in home.text for alias in re.findall(rf"\b{n}\s+as\s+(\w+)", home.text)
        }
        # Parsed only where code that changes such an attribute can reach what it builds: the module itself, where
        # it goes through what holds it there (`self.gate.weight`, `gate = self.gate`); any module, for what it
        # builds at the top level or as a `global`; a subclass's method, for what a class of it builds.
        held = _held_where_built(home.text, spelled)
        if not (
            home.name in changing
            and any(_changes_through(home.text, h, attributes) for h in held)
            or module_level.search(home.text)
            or based & set(re.findall(r"class\s+(\w+)", home.class_heads))
        ):
            continue
        nodes = statements(home.tree)  # what builds, and the functions and classes (no expression needed)
        for built in nodes:
            target = _built_into(built)
            if (
                target is None
                or getattr(built.value.func, "id", getattr(built.value.func, "attr", None)) not in spelled
            ):
                continue
            if modules.reference(home.name, built.value.func) not in classes:
                continue
            places = _reaches(planner, modules, home, nodes, built, ast.unparse(target), changing)
            places += [kept for place in places for kept in _kept_on_self(planner, modules, place, changing)]
            for place, scope, after, holders in places:
                changes = holders.changes(scope, place.lines, reads, changers, planner.engine.loader_attributes)
                for statement, changed in changes:
                    if statement.lineno > after:  # each once, however many ways reach it
                        found.setdefault((place.name, statement.lineno, changed), (place, statement, changed))
    return list(found.values())


def _held_where_built(text: str, spelled: set[str]) -> set[str]:
    """What `x = Class(` lines of a module's text build into (`self.gate`), read off the line up to each call."""
    held = set()
    for call in (f"{name}(" for name in spelled):
        at = text.find(call)
        while at >= 0:
            line = re.fullmatch(r"\s*([\w.]+)\s*(?::[^=\n]*)?=\s*(?:\w+\.)*", text[text.rfind("\n", 0, at) + 1 : at])
            held |= {line.group(1)} if line else set()
            at = text.find(call, at + 1)
    return held


def _changes_through(text: str, held: str, attributes: str) -> bool:
    """Whether a module's text may change one of `attributes` through `held` (`self.gate.weight = ...`,
    `self.gate.set_mode(`), or assigns what it holds to a name or attribute (`gate = self.gate`,
    `w = self.gate.weight`)."""
    at = re.escape(held)
    store = rf"{at}\.(?:{attributes})\b[\w.\[\]]*\s*(?::[^=\n]*)?(?:[-+*/%&|^@]?=(?!=)|\()"
    named = rf"^[ \t]*[\w.]+[ \t]*(?::[^=\n]*)?=[ \t]*{at}\b(?!\s*\()"  # `self.kept = self.gate`; not `f(x=...)`
    return re.search(store, text) is not None or re.search(named, text, re.MULTILINE) is not None


def _built_into(node: ast.AST) -> ast.expr | None:
    """Where `x = Class(...)` (or `x: T = Class(...)`) puts what it builds; None for any other statement."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
        return node.targets[0]
    if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call):
        return node.target
    return None


def _changing(
    planner: Planner, modules: RepoModules, reads: set[str], changers: dict[str, list[str]]
) -> tuple[dict[str, SourceModule], set[str]]:
    """The modules whose text may change such an attribute of an object it holds: a store into `<x>.<read>`
    (annotated too; not `self.<read>`, a class setting its own attribute, whose changers are looked for by name), a
    call of `.<changer>(`, or a name assigned `<x>.<y>.<read>` (`norm = self.linear_attn.norm`), which a later line
    may store through. With the words of the class statements of those that store or call through `self.<name>.`
    (a subclass's method may change what its parent built). Found once a run for a set of attributes."""
    key = ("changing", frozenset(reads), frozenset(changers))
    if key not in modules.memo:
        every = frozenset(reads).union(*map(self_reads, planner.specs))  # each spec's, found together
        names = set().union(*(_changing_by_read(planner, modules, every)[read] for read in reads))
        calls = re.compile(rf"\.(?:{'|'.join(map(re.escape, sorted(changers)))})\(") if changers else None
        if calls is not None:
            names |= {m.name for m in planner.modules.values() if calls.search(m.text)}
        changing = {m.name: m for m in planner.modules.values() if m.name in names}
        stores = _stores(reads)

        def changes(text: str) -> Iterator[re.Match]:
            yield from stores.finditer(text)
            yield from calls.finditer(text) if calls else ()

        # The names the class statements of those that go through `self.<name>.` may name as a base.
        based = {
            word
            for m in changing.values()
            if any(re.search(r"\bself\.\w+$", m.text[max(at.start() - 80, 0) : at.start()]) for at in changes(m.text))
            for bases in re.findall(r"class\s+\w+\s*\(([^)]*)\)", m.class_heads)
            for word in re.findall(r"\w+", bases)
        }
        modules.memo[key] = changing, based
    return modules.memo[key]


def _changing_by_read(planner: Planner, modules: RepoModules, reads: frozenset[str]) -> dict[str, set[str]]:
    """For each of `reads`, the modules that store into `<x>.<read>` or assign a name `<x>.<y>.<read>` (`_changing`).
    The reads of every spec of the run are looked for at once: a pass over the repo's text costs about as much for
    one attribute as for twenty. Stores and line ends apart: one alternation of both scans several times slower."""
    key = ("changing by read", reads)
    if key not in modules.memo:
        found: dict[str, set[str]] = {read: set() for read in reads}
        stores, alone = _stores(reads), {read: _stores({read}) for read in reads}
        ends = re.compile(rf"\.({'|'.join(map(re.escape, sorted(reads)))})[ \t]*$", re.MULTILINE)
        held = re.compile(r"\s*\w+\s*(?::[^=\n]*)?=\s*\w+(?:\.\w+){2,}")
        for m in planner.modules.values():
            if stores.search(m.text):  # a store into one of them: which (an alternation's match may hide another's)
                for read in reads:
                    if alone[read].search(m.text):
                        found[read].add(m.name)
            for at in ends.finditer(m.text):  # a line that ends in one of them, the only match it can hold
                if held.fullmatch(m.text[m.text.rfind("\n", 0, at.start()) + 1 : at.end()]):
                    found[at.group(1)].add(m.name)
        modules.memo[key] = found
    return modules.memo[key]


def _stores(reads: Iterable[str]) -> re.Pattern:
    """A store into `<x>.<read>` for one of `reads`, but not into `self.<read>` (`_changing`)."""
    read = "|".join(map(re.escape, sorted(reads)))
    return re.compile(rf"\.(?<!\bself\.)(?:{read})\b[\w.\[\]]*\s*(?::[^=\n]*)?[-+*/%&|^@]?=(?!=)")


class _Holders:
    """What holds the built object in some code: each spelling with the object-rooted text it stands for (the
    object's own spellings stand for themselves; `norm = self.linear_attn.norm` makes `norm` stand for
    `self.linear_attn.norm`). `roots`: the object's own spellings."""

    def __init__(self, roots: set[str], spellings: dict[str, str] | None = None):
        self.roots = roots
        self.spellings = spellings if spellings is not None else {root: root for root in roots}
        self._parts: dict[int, tuple[ast.AST, list[ast.AST], _Holders]] = {}  # `_in`'s, by the part's identity

    def expanded(self, expression: ast.expr) -> str:
        """The expression's text with a spelling at its start replaced by what it stands for."""
        text = ast.unparse(expression)
        for spelling in sorted(self.spellings, key=len, reverse=True):
            if text == spelling or text.startswith((f"{spelling}.", f"{spelling}[")):
                return self.spellings[spelling] + text[len(spelling) :]
        return text

    def stands_for(self, expression: ast.expr) -> str | None:
        """The object-rooted text an expression stands for (the object, or something it holds); None: neither."""
        text = self.expanded(expression)
        return text if any(text == r or text.startswith((f"{r}.", f"{r}[")) for r in self.roots) else None

    def attribute(self, expression: ast.expr) -> tuple[str, str] | None:
        """(the object's spelling, the attribute of it) an expression goes through (`norm.activation` with `norm`
        standing for `self.linear_attn.norm`: `self.linear_attn`, `norm`); None where it is not the object's."""
        text = self.expanded(expression)
        for root in self.roots:
            if text.startswith(f"{root}.") and (attr := re.match(r"\w+", text[len(root) + 1 :])):
                return root, attr.group()
        return None

    def within(self, nodes: list[ast.AST]) -> _Holders:
        """These holders and the names `nodes` assign what one holds (`y = x`, `y: T = x.norm`, `y := x`, either
        arm of `x if c else None`), to a fixpoint."""
        pairs = [(t.id, value) for t, value in map(_name_and_value, nodes) if isinstance(t, ast.Name) and value]
        holders = _Holders(self.roots, dict(self.spellings))
        grown = True
        while grown:
            grown = False
            for name, value in pairs:
                for text in filter(None, map(holders.stands_for, _arms(value))):
                    if name not in holders.spellings:
                        holders.spellings[name] = text
                        grown = True
        return holders

    def _in(self, part: ast.AST, lines: list[str]) -> tuple[list[ast.AST], _Holders]:
        """A function's (or module's) own nodes and what holds the object there (`kept` and `changes` read both);
        none for a function whose text (`lines`: its module's) names no holder, as it can reach none."""
        if id(part) not in self._parts:  # the part is kept beside them, so its id stays its own
            text = "\n".join(lines[part.lineno - 1 : part.end_lineno]) if isinstance(part, _FUNCTIONS) else None
            nodes = list(own_nodes(part)) if text is None or any(h in text for h in self.spellings) else []
            self._parts[id(part)] = part, nodes, self.within(nodes)
        return self._parts[id(part)][1:]

    def changes(
        self,
        scope: ast.AST,
        lines: list[str],
        reads: set[str],
        changers: dict[str, list[str]],
        loader_attributes: frozenset,
    ) -> Iterator[tuple[ast.AST, str]]:
        """Each assignment of `scope` whose target goes through the object to an attribute of `reads` (but for one of
        the engine's `loader_attributes` set on it: `self.gate.weight.weight_loader = ...`), and each call of a
        `changers` method on it, with what it changes (`self.linear_attn.norm`, `x.mode (through set_mode)`)."""
        for part in dict.fromkeys([scope, *(n for n in ast.walk(scope) if isinstance(n, _FUNCTIONS))]):
            nodes, holders = self._in(part, lines)
            for node in nodes:
                if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    targets = [t for t in targets if getattr(t, "attr", None) not in loader_attributes]
                    went = {holders.attribute(a) for t in targets for a in ast.walk(t) if isinstance(a, ast.Attribute)}
                    yield from ((node, f"{root}.{attr}") for root, attr in sorted(filter(None, went)) if attr in reads)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in changers:
                    if (root := holders.expanded(node.func.value)) in self.roots:
                        changed = ", ".join(f"{root}.{attr}" for attr in changers[node.func.attr])
                        yield node, f"{changed} (through {node.func.attr})"

    def kept(self, scope: ast.AST, lines: list[str]) -> Iterator[tuple[ast.AST, str, str]]:
        """Each `self.<name> = <what a holder holds>` in `scope`, with its function, the name and what it stands
        for (`self.gemm_rs = gemm_rs` keeps the object on the layer, where its other methods reach it)."""
        for part in [n for n in ast.walk(scope) if isinstance(n, _FUNCTIONS)]:
            nodes, holders = self._in(part, lines)
            for target, value in map(_name_and_value, nodes):
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self" and value is not None:
                    for text in filter(None, map(holders.stands_for, _arms(value))):
                        yield part, target.attr, text


def _reaches(
    planner: Planner,
    modules: RepoModules,
    home: SourceModule,
    nodes: list[ast.AST],
    built: ast.stmt,
    held: str,
    changing: dict[str, SourceModule],
) -> list[tuple[SourceModule, ast.AST, int, _Holders]]:
    """Where code can reach the object `built` stores in `held` once it is built, each with the line after which
    that code runs later and what holds the object there:
    - the rest of the building function;
    - for a module-level name (built at the top level, or in a function that declares it `global`: a later call
      finds the object an earlier one built), the whole module, and each module that imports the name or a
      function of the module that returns it (`get_workspace()`), through what it imports;
    - for `self.<name>`, the other methods of the class and every method of its subclasses that run its
      constructor (one that replaces it without running it builds its own, or none)."""
    functions = [n for n in nodes if isinstance(n, _FUNCTIONS)]
    around = [f for f in functions if f.lineno <= built.lineno <= f.end_lineno]
    function = min(around, key=lambda f: f.end_lineno - f.lineno, default=None)  # the innermost
    if function is None or any(isinstance(n, ast.Global) and held in n.names for n in ast.walk(function)):
        accessors = {f.name for f in home.tree.body if isinstance(f, _FUNCTIONS) and _returns(f, held)}
        places = [(home, home.tree, 0, _Holders({held, *(f"{a}()" for a in accessors)}))]
        for other in changing.values():
            if other is not home and any(n in other.text for n in (held, *accessors)):
                roots = set()
                for local, (source, attribute) in modules.imports(other.name).items():
                    found = modules.resolve(source, attribute) if attribute else (source, None)
                    if found == (home.name, held):
                        roots.add(local)
                    elif found[0] == home.name and found[1] in accessors:
                        roots.add(f"{local}()")
                    elif found == (home.name, None):
                        roots |= {f"{local}.{held}", *(f"{local}.{a}()" for a in accessors)}
                places += [(other, other.tree, 0, _Holders(roots))] if roots else []
        return places
    places = [(home, function, built.lineno, _Holders({held}))]
    if held.startswith("self."):
        owner = _class_of(nodes, function)
        others = [m for m in getattr(owner, "body", ()) if isinstance(m, ast.FunctionDef) and m is not function]
        places += [(home, method, 0, _Holders({held})) for method in others]
        if owner is not None:
            places += _in_subclasses(planner, modules, home, owner, held, changing)
    return places


def _in_subclasses(
    planner: Planner,
    modules: RepoModules,
    home: SourceModule,
    owner: ast.ClassDef,
    held: str,
    changing: dict[str, SourceModule],
) -> list[tuple[SourceModule, ast.AST, int, _Holders]]:
    """The methods of the subclasses of `owner` (of `home`) that run its constructor, where `self.<name>` (`held`)
    is what it built. Looked for only where a module that changes such an attribute goes through `held.` and has a
    class statement naming the class among its bases."""
    names_it = re.compile(rf"class\s+\w+\s*\([^)]*\b{re.escape(owner.name)}\b")
    if not any(f"{held}." in m.text and names_it.search(m.class_heads) for m in changing.values()):
        return []
    replacing = {
        (sub_home.name, sub) for sub_home, sub, _ in replacing_subclasses(planner, modules, home.name, owner.name)
    }
    return [
        (sub_home, method, 0, _Holders({held}))
        for sub_home, sub, _, _ in subclasses_of(planner, modules, home.name, owner.name)
        if (sub_home.name, sub.name) not in replacing
        for method in sub.body
        if isinstance(method, ast.FunctionDef)
    ]


def _kept_on_self(
    planner: Planner,
    modules: RepoModules,
    place: tuple[SourceModule, ast.AST, int, _Holders],
    changing: dict[str, SourceModule],
) -> list[tuple[SourceModule, ast.AST, int, _Holders]]:
    """Where a method of `place` keeps what holds the object on its own object (`self.gemm_rs = gemm_rs`): the other
    methods of its class, and of its subclasses that run its constructor, through `self.<name>`."""
    home, scope, _, holders = place
    found = []
    for function, name, stands_for in holders.kept(scope, home.lines):
        owner = _class_of(home.classes, function)
        if owner is None:
            continue
        kept = _Holders(holders.roots, {f"self.{name}": stands_for})
        methods = [m for m in owner.body if isinstance(m, ast.FunctionDef)]
        found += [(home, method, 0, kept) for method in methods]
        found += [
            (sub_home, method, 0, kept)
            for sub_home, method, _, _ in _in_subclasses(planner, modules, home, owner, f"self.{name}", changing)
        ]
    return found


def _class_of(classes: Iterable[ast.AST], function: ast.AST) -> ast.ClassDef | None:
    """The class (of `classes`, or of any nodes) whose body defines `function` (None: it is no method)."""
    return next((c for c in classes if isinstance(c, ast.ClassDef) and function in c.body), None)


def _returns(function: ast.FunctionDef, name: str) -> bool:
    """Whether `function` hands out the module-level `name` (`return name`, or a local that holds it)."""
    nodes = list(own_nodes(function))
    holders = _Holders({name}).within(nodes)
    return any(isinstance(n, ast.Return) and n.value and holders.expanded(n.value) == name for n in nodes)


def _arms(value: ast.expr) -> list[ast.expr]:
    """What an assigned value may be: either arm of a conditional, any operand of `or`/`and`, the value a
    `typing.cast` passes; else the value."""
    if isinstance(value, ast.IfExp):
        return [*_arms(value.body), *_arms(value.orelse)]
    if isinstance(value, ast.BoolOp):
        return [arm for operand in value.values for arm in _arms(operand)]
    if isinstance(value, ast.Call) and ast.unparse(value.func) in ("cast", "typing.cast") and len(value.args) == 2:
        return _arms(value.args[1])
    return [value]


def _name_and_value(node: ast.AST) -> tuple[ast.expr | None, ast.expr | None]:
    """What a single-target assignment (`=`, annotated, `:=`) binds, and its value."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0], node.value
    if isinstance(node, ast.AnnAssign | ast.NamedExpr):
        return node.target, node.value
    return None, None
