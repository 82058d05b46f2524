"""How planning reads a repo, on small trees: the subclass search's narrowed text, one parse per file shared by the
planner and its repo model, the constructor walks kept while a registration is placed, source segments cut from
lines found once, a spec's imported names read as the site's module aliases them, and what an owner's pin reads of
a definition."""

import ast
import builtins
import itertools
import re
import symtable

import libcst as cst
import pytest
from libcst.metadata import PositionProvider
from tree_forks import write_tree

from zerojit.codemods.heads import Heads
from zerojit.codemods.lift.plan import _properties
from zerojit.codemods.planner import Planner
from zerojit.codemods.planning import layer_filters
from zerojit.codemods.planning.after_building import _changing, _changing_by_read
from zerojit.codemods.planning.pins import _parameters
from zerojit.codemods.planning.registrations import _imports_as_aliased
from zerojit.codemods.planning.subclasses import direct_subclasses
from zerojit.codemods.repo import RepoModules
from zerojit.codemods.syntax import (
    body_stores,
    definition_digest,
    renaming,
    self_reads,
    signature,
    source_segment,
    stores,
)
from zerojit.codemods.transforms.constructor import StatementLines, nodes, walks_kept
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs
from zerojit.migrate.triton_lifts.specs import MTP_UPDATE

BASES = {
    "pkg/__init__.py": "",
    "pkg/base.py": """
        class Base:
            def __init__(self):
                self.ready = True


        class Other:
            def __init__(self):
                pass


        class Unused:
            pass
        """,
    # the base through an alias, named on a later line of the class statement
    "pkg/aliased.py": """
        from pkg.base import Base as Parent


        class ViaAlias(
            Parent,
        ):
            def __init__(self):
                self.size = 1
        """,
    "pkg/dotted.py": """
        from pkg import base


        class Dotted(base.Base):
            def __init__(self):
                self.size = 2
        """,
    # names the base, but in no class statement
    "pkg/user.py": """
        from pkg.base import Base

        LAYER = Base()
        """,
    "pkg/other_sub.py": """
        from pkg.base import Other


        class OtherSub(Other):
            def __init__(self):
                pass
        """,
}


def test_a_subclass_search_reads_only_class_statements_and_aliases_and_finds_what_the_whole_text_shows(tmp_path):
    """Read by hand off BASES: the aliased and the dotted subclass of Base, OtherSub of Other; `pkg.user` names
    Base only outside a class statement."""
    repo = write_tree(tmp_path / "repo", BASES)
    planner = Planner(repo, [])
    model = planner.repo_model("pkg.base")
    assert sorted(direct_subclasses(planner, model, "pkg.base:Base")) == [
        ("pkg.aliased", "ViaAlias"),
        ("pkg.dotted", "Dotted"),
    ]
    assert direct_subclasses(planner, model, "pkg.base:Other") == [("pkg.other_sub", "OtherSub")]
    assert direct_subclasses(planner, model, "pkg.base:Unused") == []
    assert planner.head_index.naming("Base") == {"pkg.aliased", "pkg.dotted"}  # `Parent` is Base's alias there
    heads = planner.modules["pkg.user"].class_heads
    assert "Base" not in heads and "LAYER" not in heads and not planner.modules["pkg.user"].parsed


def test_a_layer_built_on_a_mixin_of_the_base_without_a_constructor_is_found_through_it(tmp_path):
    """A fork's helpers-only class that lists the base holds no registration; the layers that list it do (two
    levels of such classes too). A subclass of a found layer runs that layer's constructor and is not listed."""
    mixins = {
        "pkg/mixins.py": """
            from pkg.base import Base


            class Helpers(Base):
                def state_dtype(self):
                    return 1


            class MoreHelpers(Helpers):
                pass


            class Layer(Helpers, object):
                def __init__(self):
                    super().__init__()


            class Deeper(MoreHelpers):
                def __init__(self):
                    super().__init__()


            class OnLayer(Layer):
                def __init__(self):
                    super().__init__()


            class NoConstructor(MoreHelpers):
                pass
            """,
    }
    repo = write_tree(tmp_path / "repo", {**BASES, **mixins})
    planner = Planner(repo, [])
    found = sorted(direct_subclasses(planner, planner.repo_model("pkg.base"), "pkg.base:Base"))
    assert found == [
        ("pkg.aliased", "ViaAlias"),
        ("pkg.dotted", "Dotted"),
        ("pkg.mixins", "Deeper"),
        ("pkg.mixins", "Layer"),
    ]


@pytest.mark.parametrize(
    "text, names",
    [
        ("class A(Parent):\n    pass\n", True),
        ("class A(\n    Base,  # first\n    Parent,\n):\n    pass\n", True),
        ("class Sub[T: Bound](Parent):\n    pass\n", True),
        ("class A(make('a):'), Parent):\n    pass\n", True),
        ("class A(Base):  # a note\n    layer = Parent()\n", False),  # its body names it
        ('class A(Base):\n    """Wraps a Parent."""\n', False),
        ('"""Our dataclass Holder(Parent) ..."""\n', False),  # `class` inside a longer word starts no statement
    ],
)
def test_a_subclass_search_parses_a_file_only_where_a_class_header_may_name_the_base(text, names):
    """Read by hand: the header ends at a `)` and a `:` that end a line; a name past that is the body's."""
    assert ("Parent" in set(Heads.of(text).words())) is names


def test_the_planner_and_its_repo_model_share_one_parse_of_a_file(tmp_path):
    repo = write_tree(tmp_path / "repo", BASES)
    planner = Planner(repo, [])
    model = planner.repo_model("pkg.base")
    assert model.tree("pkg.aliased") is planner.modules["pkg.aliased"].tree
    assert planner.modules["pkg.dotted"].tree is model.tree("pkg.dotted")
    assert planner.modules["pkg.aliased"].parsed and not planner.modules["pkg.user"].parsed


CHANGERS = {
    "pkg/__init__.py": "",
    "pkg/chain.py": "x.a.b = 1\n",  # one store into both: a scan for both sees one match, at `.a`
    "pkg/annotated.py": "x.a: y.b = 1\n",  # `.b = 1` stores into b too
    "pkg/held.py": "n = self.layer.b\n",  # a later line may store through n
    "pkg/own.py": "self.a = 1\n",  # a class setting its own attribute
    "pkg/plain.py": "x.c += 2\ny = x.a\n",
}


def test_the_modules_that_may_change_some_attributes_are_those_one_scan_for_just_those_finds(tmp_path):
    """Each read's modules are found in one pass for every read of the run; any set of them gives the modules a
    pass for that set alone finds: a store, a line that holds through it, not a class's own attribute."""
    planner = Planner(write_tree(tmp_path / "repo", CHANGERS), [])
    modules = planner.repo_model("pkg.chain")

    def alone(reads):
        read = "|".join(sorted(reads))
        stores = re.compile(rf"\.(?<!\bself\.)(?:{read})\b[\w.\[\]]*\s*(?::[^=\n]*)?[-+*/%&|^@]?=(?!=)")
        held = re.compile(rf"^\s*\w+\s*=\s*\w+(?:\.\w+)+\.(?:{read})[ \t]*$", re.MULTILINE)
        return {m.name for m in planner.modules.values() if stores.search(m.text) or held.search(m.text)}

    by_read = _changing_by_read(planner, modules, frozenset("abc"))
    for reads in (set(c) for n in (1, 2, 3) for c in itertools.combinations("abc", n)):
        assert (
            set().union(*(by_read[r] for r in reads)) == alone(reads) == set(_changing(planner, modules, reads, {})[0])
        )
    assert alone({"b"}) == {"pkg.chain", "pkg.annotated", "pkg.held"} and alone({"a"}) == {"pkg.chain", "pkg.annotated"}


CONSTRUCTOR = """
class Layer(Base):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.size: int = config.size
        if config.gated:
            self.gate, self.norm = make(config), Norm(self.size, eps=config.eps)
        else:
            self.norm = Norm(self.size)
        self._build(lambda x: x.view(-1))
        for name in config.names:
            setattr(self, name, getattr(config, name))
        self.norm.weight.data += 1
"""


def test_walks_kept_give_every_kind_the_nodes_a_fresh_walk_gives_in_the_same_order():
    module = cst.parse_module(CONSTRUCTOR)
    init = module.body[0].body.body[0]
    trees = [module, init, *init.body.body]
    kinds = (cst.Call, cst.Attribute, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign), cst.SimpleStatementLine, cst.If)
    fresh = [[nodes(tree, kind) for kind in kinds] for tree in trees]
    with walks_kept():
        for _ in range(2):  # the second time from what the first walk kept
            assert [[nodes(tree, kind) for kind in kinds] for tree in trees] == fresh
    # super() and its __init__, make, Norm twice, _build, view, setattr, getattr: counted by hand
    assert all(found for found in fresh[0]) and len(fresh[0][0]) == 9


EVERY_STATEMENT = """
class Layer:
    @staticmethod
    @other(
        1,
    )
    def method(x):  # a comment
        a = 1; b = 2  # two on a line
        e = 1; f = (
            2
        )
        if a:
            pass
            # a comment that ends the block

        elif b: c = 3
        else:
            d = \\
                4
        for i in x:
            continue
        else:
            pass
        while x:
            break
        else:
            # a comment alone

            pass
        try:
            y = 1
        except ValueError as e:
            y = 2
        else:
            z = \"\"\"
            text
            \"\"\"
        finally:
            w = 1
        try:
            pass
        except* TypeError:
            pass
        with open(x) as h, open(y) as g:
            pass
        match x:
            case [1, 2]:
                q = 1
            case _:
                r = 2

        async def inner():
            async with z:
                await y
            async for k in z:
                pass

        @dec
        class Inner:
            v = 1
        return (
            a
        )
        # a comment that ends the method
"""


def test_a_methods_statement_lines_are_the_ones_libcst_positions_give_it_alone():
    method = cst.parse_module(EVERY_STATEMENT).body[0].body.body[0]
    alone = cst.Module(body=[method])
    positions = cst.MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = StatementLines(method)
    statements = nodes(method, cst.BaseStatement)
    assert lines.code == alone.code and len(statements) == 34  # counted by hand, the method itself among them
    for statement in statements:
        assert (lines.start(statement), lines.end(statement)) == (
            positions[statement].start.line,
            positions[statement].end.line,
        )


@pytest.mark.release_tree
@pytest.mark.parametrize("family", ["mamba-batch-memcpy", "fla-gdn-mtp-update", "ll-bf16-router-gemm"])
def test_every_method_of_a_construction_class_has_the_statement_lines_libcst_positions_give(family):
    """On vLLM 0.33.0's own classes, every method a registration may go into: each statement, as PositionProvider
    places it on the method alone."""
    tree = vllm_tree("0.33.0")
    for module, name in migration_specs()[family].registration.constructions():
        source = cst.parse_module((tree / (module.replace(".", "/") + ".py")).read_text())
        cls = next(n for n in source.body if isinstance(n, cst.ClassDef) and n.name.value == name)
        for method in (m for m in cls.body.body if isinstance(m, cst.FunctionDef)):
            positions = cst.MetadataWrapper(cst.Module(body=[method]), unsafe_skip_copy=True).resolve(PositionProvider)
            lines = StatementLines(method)
            for statement in nodes(method, cst.BaseStatement):
                found, placed = (lines.start(statement), lines.end(statement)), positions[statement]
                assert found == (placed.start.line, placed.end.line), (module, name, method.name.value)


CONFIG_CLASS = '''
@dataclasses.dataclass
class Config:
    h: int
    k: int

    @property
    def width(self) -> int:
        return 2 * self.h * self.k

    @property
    def told(self) -> int:
        """With a docstring."""
        return self.h + 1

    def method(self) -> int:
        return self.h

    @property
    def two_steps(self) -> int:
        x = self.h
        return x

    @functools.cached_property
    def cached(self) -> int:
        return self.k
'''


def test_a_config_property_the_lift_may_compute_is_a_property_that_returns_one_expression():
    """Only a plain property whose body (a docstring aside) returns one expression: a method, a cached property, a
    property of two statements or a field is read whole."""
    cls = ast.parse(CONFIG_CLASS).body[0]
    wanted = frozenset({"width", "told", "method", "two_steps", "cached", "h"})
    assert _properties(cls, wanted) == (("width", "2 * self.h * self.k"), ("told", "self.h + 1"))
    assert _properties(cls, frozenset({"told"})) == (("told", "self.h + 1"),)


SEGMENTS = (
    "def kernel(x_ptr, n: int = 16, *, BLOCK: tl.constexpr = 128):\n    return f(x_ptr,\n             n)  # done\n",
    "x = {'é': 1,\r\n     'ß': [2,\r\n           3]}\r\ny = x['é'] if x else None\rz = (y,\r     x)\n",  # \r\n and a bare \r, non-ASCII
    "class A:\n\tdef m(self):\n\t\treturn (1 +\n\t\t\t2)\n\x0c\ndef after():\n    pass",  # tabs, a form feed, no final newline
)


def test_a_source_segment_is_what_the_standard_library_cuts_for_every_node():
    for source in SEGMENTS:
        placed = [n for n in ast.walk(ast.parse(source)) if getattr(n, "end_lineno", None) is not None]
        assert len(placed) >= 9
        for node in placed:
            for padded in (False, True):
                assert source_segment(source, node, padded=padded) == ast.get_source_segment(
                    source, node, padded=padded
                )
    assert source_segment(SEGMENTS[0], ast.Module(body=[], type_ignores=[])) is None  # a node with no place


def test_a_name_the_spec_imports_is_read_under_the_sites_alias_and_only_that_name_leaves_the_import_line(tmp_path):
    repo = write_tree(
        tmp_path / "repo",
        {
            "vllm/__init__.py": "",
            "vllm/platforms/__init__.py": "current_platform = object()\nother = 1\n",
            "vllm/aliased.py": "from vllm.platforms import current_platform as platform\n",
            "vllm/plain.py": "from vllm.platforms import current_platform\n",
        },
    )
    modules = RepoModules(repo, "vllm")
    spec = MTP_UPDATE.replaced(gate_imports=("from vllm.platforms import current_platform, other",))
    aliased = _imports_as_aliased(modules, spec, "vllm.aliased")
    assert aliased.registration.gate_imports == ("from vllm.platforms import other",)
    code = aliased.registration.code
    assert "if platform.is_rocm() and" in code and "platform.num_compute_units(" in code
    assert "current_platform" not in code
    assert _imports_as_aliased(modules, spec, "vllm.plain") is spec  # imported by its own name: nothing to change


def test_a_function_defined_inside_another_binds_its_name_there_and_keeps_its_own_locals():
    """What a statement binds where it runs, as Python's own scopes say (symtable): a nested `def` binds its name in
    the enclosing function, the names its body and a lambda's bind are theirs."""
    code = (
        "def launch(x, metadata):\n"
        "    if metadata is None:\n"
        "        def num_program(META):\n"
        "            tot = 0\n"
        "            return tot\n"
        "    else:\n"
        "        num_program = metadata.num_program\n"
        "    def grid(META):\n"
        "        width = META['BLOCK']\n"
        "        return (num_program(META), width)\n"
        "    key = lambda kept: kept\n"
        "    (n := 1)\n"
        "    return grid, key, n\n"
    )
    function = ast.parse(code).body[0]
    table = symtable.symtable(code, "launch.py", "exec").get_children()[0]
    assigned = {s.get_name() for s in table.get_symbols() if s.is_assigned() and not s.is_parameter()}
    assert set(body_stores(function)) == assigned == {"num_program", "grid", "key", "n"}
    assert stores(function.body[1]) == ["grid"] and stores(function) == ["launch"]


STEP = """
def step(model, max_num_tokens):
    \"\"\"Warm the first gate.\"\"\"
    gate = pick(model)
    if gate is None:
        logger.debug_once("no gate")
        return
    floor = gate.floor + 1
    logger.info_once("warming %d shapes", len(gate.shapes))
    return warm(gate.size, floor, max_num_tokens)
"""


def _digest(source: str) -> str:
    return definition_digest(ast.parse(source), "step")[1]


@pytest.mark.parametrize(
    "same",
    [
        STEP.replace("gate", "router"),  # a local renamed everywhere
        STEP.replace("floor =", "low =").replace("floor, max", "low, max"),
        STEP.replace('        logger.debug_once("no gate")\n', ""),  # a log line less ...
        STEP.replace("    return warm", '    log.info("done %s", str(model))\n    return warm'),  # ... or more
        STEP.replace("Warm the first gate.", "Warm the gate the step finds first."),
    ],
)
def test_an_owner_pin_reads_past_log_lines_docstrings_and_local_names(same):
    assert _digest(same) == _digest(STEP)


@pytest.mark.parametrize(
    "other",
    [
        STEP.replace("floor, max_num_tokens)", "max_num_tokens, floor)"),  # a local and a parameter swapped
        STEP.replace("warm(gate.size, floor,", "warm(floor.size, gate,"),  # two locals swapped
        STEP.replace("max_num_tokens", "limit"),  # a parameter: callers pass it by name
        STEP.replace("gate.floor + 1", "gate.floor"),
        STEP.replace("    return warm", "    log.append(floor)\n    return warm"),  # not a log line: a list's
        STEP.replace('"warming %d shapes", len(gate.shapes)', '"warming %d shapes", warm_all(gate)'),  # a log that acts
        STEP.replace("def step(model, max_num_tokens):\n", "def step(model, max_num_tokens):\n    global gate\n"),
    ],
)
def test_an_owner_pin_still_tells_code_that_does_otherwise(other):
    assert _digest(other) != _digest(STEP)


CALLER = """
def orchestrate(worker):
    model = worker.get_model()
    if worker.enabled:
        step(model, worker.budget)
    other(model)
"""


def _call_digest(source: str) -> str:
    return definition_digest(ast.parse(source), "orchestrate(step)")[1]


@pytest.mark.parametrize(
    "caller, same",
    [
        (CALLER.replace("    model = ", "    started = now()\n    model = "), True),  # a local added elsewhere
        (CALLER.replace("model =", "layers =").replace("(model", "(layers"), True),  # its local renamed
        (CALLER.replace("    other(model)\n", ""), True),  # another call
        (CALLER.replace("if worker.enabled:", "if worker.enabled and ready():"), True),  # another guard
        (CALLER.replace("step(model, worker.budget)", "step(model, worker.budget * 2)"), False),  # what it passes
        (CALLER.replace("step(model, worker.budget)", "step(worker.get_model(), worker.budget)"), False),
        (CALLER + "    step(model, 1)\n", False),  # a second call
        (CALLER.replace("model = worker.get_model()", "model = worker.model"), False),  # what it passes computed
    ],
)
def test_a_call_pin_tells_what_the_caller_passes_and_nothing_else(caller, same):
    """`orchestrate(step)` pins the calls of `step` in `orchestrate` and the assignments of what they pass, their
    locals numbered among themselves; the rest of the caller may change."""
    assert (_call_digest(caller) == _call_digest(CALLER)) is same
    assert definition_digest(ast.parse(CALLER), "orchestrate(missing)") is None


def test_a_call_pin_finds_a_callee_the_caller_imports_for_itself():
    """A step that imports what it calls (`from m import profiles` in its body) binds it as a local, numbered in the
    digest: the pin still finds the calls by the name they are written with."""
    step = "def step(config):\n    from m import profiles\n    blocks = config.layers // 2\n    run(profiles(blocks))\n"
    digest = definition_digest(ast.parse(step), "step(profiles)")
    assert digest is not None
    assert digest[1] != definition_digest(ast.parse(step.replace("// 2", "// 2 + 1")), "step(profiles)")[1]
    assert (
        digest[1] == definition_digest(ast.parse(step.replace("run(", "other(\n    run(") + ")"), "step(profiles)")[1]
    )


def test_an_owner_pin_tells_a_nested_parameter_that_shadows_a_local_from_one_that_does_not():
    """Both bind the local second and define `bound(cap)`: one returns its parameter (`cap`, its local's name), the
    other the local. Numbered alike, the parameter must be numbered too, or the two would read the same."""
    nested = "    def bound(cap):\n        return {}\n\n    return warm"
    local_named_cap = STEP.replace("floor =", "cap =").replace("floor, max", "cap, max")
    shadows = local_named_cap.replace("    return warm", nested.format("cap"))
    reads_the_local = STEP.replace("    return warm", nested.format("floor"))
    assert _digest(shadows) != _digest(reads_the_local)


def test_an_owner_pin_keeps_the_name_of_a_parameter_the_function_assigns_again():
    capped = STEP.replace("    floor = ", "    max_num_tokens = min(max_num_tokens, 4096)\n    floor = ")
    assert _digest(capped) != _digest(capped.replace("max_num_tokens", "limit"))


# Pairs of definitions `f`, written by hand, each with whether they do the same.
PAIRS = {
    "a closure read, against a local of the inner function": (
        "def f(n):\n    floor = 1\n    def one(m):\n        lo = m\n        hi = min(m, n)\n        return warm(lo, hi, floor)\n",
        "def f(n):\n    floor = 1\n    def one(m):\n        lo = m\n        hi = min(m, n)\n        return warm(lo, hi, hi)\n",
        False,
    ),
    "an inner parameter, against an inner local": (
        "def f():\n    c = 3\n    def g(c):\n        x = 1\n        y = 2\n        return c\n    return g\n",
        "def f():\n    c = 3\n    def g(c):\n        x = 1\n        y = 2\n        return y\n    return g\n",
        False,
    ),
    "a module name read, where an inner function binds that name": (
        "def f(x):\n    def g():\n        torch = 1\n    return torch.zeros(x)\n",
        "def f(x):\n    def g():\n        numpy = 1\n    return numpy.zeros(x)\n",
        False,
    ),
    "a comprehension variable that is also a module name read": (
        "def f(xs):\n    a = [cfg for cfg in xs]\n    return cfg.size\n",
        "def f(xs):\n    a = [c for c in xs]\n    return c.size\n",
        False,
    ),
    "a class body's names (attributes)": (
        "def f():\n    class Cfg:\n        block_m = 128\n        block_n = 64\n    return Cfg.block_m\n",
        "def f():\n    class Cfg:\n        block_n = 128\n        block_m = 64\n    return Cfg.block_m\n",
        False,
    ),
    "a match capture, against the local it shadows": (
        "def f(v):\n    x = 0\n    match v:\n        case [x]:\n            pass\n    return x\n",
        "def f(v):\n    y = 0\n    match v:\n        case [x]:\n            pass\n    return y\n",
        False,
    ),
    "a log line that consumes the iterator the loop reads": (
        "def f(model):\n    shapes = iter(model.shapes)\n    logger.info('%s', list(shapes))\n    for s in shapes:\n        warm(s)\n",
        "def f(model):\n    shapes = iter(model.shapes)\n    for s in shapes:\n        warm(s)\n",
        False,
    ),
    "a log line that binds": (
        "def f(n):\n    logger.debug('%d', (n := n * 2))\n    warm(n)\n",
        "def f(n):\n    warm(n)\n",
        False,
    ),
    "a private name a nested class's method reads (mangled: the module's `_C__x`)": (
        "def f():\n    __x = 1\n    class C:\n        def m(self):\n            return __x\n    return C().m()\n",
        "def f():\n    __y = 1\n    class C:\n        def m(self):\n            return __y\n    return C().m()\n",
        False,
    ),
    "a scope read by name (`locals()`)": (
        "def f():\n    x = 1\n    return locals()\n",
        "def f():\n    y = 1\n    return locals()\n",
        False,
    ),
    "a nested function's name (its `__name__`)": (
        "def f():\n    def add_one(t):\n        return t + 1\n    return add_one.__name__\n",
        "def f():\n    def sub_one(t):\n        return t + 1\n    return sub_one.__name__\n",
        False,
    ),
    "a `finally` that only logs, against one that passes": (
        "def f(g):\n    try:\n        return g()\n    finally:\n        logger.info('done')\n",
        "def f(g):\n    try:\n        return g()\n    finally:\n        pass\n",
        True,
    ),
    "a comprehension variable renamed": (
        "def f(xs):\n    return [warm(c) for c in xs]\n",
        "def f(xs):\n    return [warm(cfg) for cfg in xs]\n",
        True,
    ),
    "a class imported under an alias": (
        "def f(m):\n    from a.b import Gate\n    return isinstance(m, Gate)\n",
        "def f(m):\n    from a.b import Gate as G\n    return isinstance(m, G)\n",
        True,
    ),
    "a match capture renamed": (
        "def f(v):\n    match v:\n        case [x]:\n            return x\n",
        "def f(v):\n    match v:\n        case [y]:\n            return y\n",
        True,
    ),
    "a closure renamed where it is bound and read": (
        "def f(n):\n    floor = 1\n    def one(m):\n        return warm(m, floor)\n    return one\n",
        "def f(n):\n    low = 1\n    def one(m):\n        return warm(m, low)\n    return one\n",
        True,
    ),
}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_an_owner_pin_matches_two_definitions_exactly_when_they_do_the_same(pair):
    first, second, same = PAIRS[pair]
    digest = {source: definition_digest(ast.parse(source), "f")[1] for source in (first, second)}
    assert (digest[first] == digest[second]) == same


WARM = "def warm(size, floor, limit=8192, *, cta=1):\n    pass\n"
CALLS = {  # the call of `warm` (above) in `f`, two ways, and whether both say the same
    "by name instead of by position": ("warm(n, 1, n * 2)", "warm(size=n, floor=1, limit=n * 2)", True),
    "by name in another order": ("warm(n, 1, cta=2)", "warm(cta=2, floor=1, size=n)", True),
    "a default passed or left out": ("warm(n, 1)", "warm(n, 1, 8192)", False),
    "two arguments swapped": ("warm(n, 1)", "warm(1, n)", False),
    "a call among the arguments, moved": ("warm(n, next(it))", "warm(floor=next(it), size=n)", False),
    "a name the callee does not take": ("warm(n, 1)", "warm(n, 1, ctas=2)", False),
    "a keyword-only argument by position": ("warm(n, 1, 8, cta=2)", "warm(n, 1, 8, 2)", False),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_an_owner_pin_reads_a_call_to_a_repo_function_the_same_by_position_or_by_name(call):
    """The callee's parameters (as the planner finds them in the repo) bind each argument: passed by position or by
    name, in any order, it says the same, where every argument only reads."""
    warm = ast.parse(WARM).body[0]
    first, second, same = CALLS[call]
    digests = [
        definition_digest(
            ast.parse(f"def f(n, it):\n    return {source}\n"),
            "f",
            lambda definition, func: signature(warm) if ast.unparse(func) == "warm" else None,
        )[1]
        for source in (first, second)
    ]
    assert (digests[0] == digests[1]) == same


UNITS = """
    import functools


    def plain(a, b):
        pass


    @functools.cache
    def cached(a, b):
        pass


    class Unit:
        @staticmethod
        def static(a, b):
            pass

        @classmethod
        def made(cls, a, b):
            pass

        def method(self, a, b):
            pass
    """
REPO_CALLS = {  # a call in a step of the tree above, two ways, and whether both say the same
    "an undecorated function": ("plain(x, y)", "plain(b=y, a=x)", True),
    "a cached function (the cache keys the two apart)": ("cached(x, y)", "cached(a=x, b=y)", False),
    "a static method on its class": ("Unit.static(x, y)", "Unit.static(a=x, b=y)", True),
    "a class method on its class": ("Unit.made(x, y)", "Unit.made(a=x, b=y)", True),
    "a plain method on its class, its self passed first": ("Unit.method(u, x, y)", "Unit.method(u, a=x, b=y)", True),
    "a plain method on its class, its self not passed": ("Unit.method(x, y)", "Unit.method(a=x, b=y)", False),
}


@pytest.mark.parametrize("call", list(REPO_CALLS))
def test_an_owner_pin_reads_a_repo_call_by_name_only_where_the_callee_binds_it_as_python_does(tmp_path, call):
    """The planner gives the digest the parameters of a repo function or of a method called on its class; of a
    decorated one, none (a decorator may tell the two apart, as `functools.cache` does)."""
    first, second, same = REPO_CALLS[call]
    step = "from pkg.units import Unit, cached, plain\n\n\ndef step(u, x, y):\n    {}\n\n\nclass Holder:\n    {}\n"
    digests = []
    for source in (first, second):
        repo = write_tree(tmp_path / str(len(digests)), {"pkg/__init__.py": "", "pkg/units.py": UNITS})
        (repo / "pkg/step.py").write_text(step.format(source, f"made = {source}"))
        planner = Planner(repo, [])
        tree = planner.modules["pkg.step"].tree
        digests.append(definition_digest(tree, "step", _parameters(planner, "pkg.step"))[1])
        assert definition_digest(tree, "Holder", _parameters(planner, "pkg.step"))  # a call in a class body
    assert (digests[0] == digests[1]) == same


def test_self_reads_names_what_a_registration_reads_off_self_by_attribute_or_by_name():
    """`getattr(self, "x", default)` and `hasattr(self, "x")` read x as `self.x` does; only `self.x` and a
    `getattr` without a default need the object to have it."""
    code = ast.parse(
        'w = getattr(self, "weight", None)\nif hasattr(self, "bias") and self.tp_size > 1:\n'
        '    register(getattr(self, "scale"), getattr(other, "gain"), getattr(self, name))\nself.out = 1\n'
    )
    assert self_reads(code) == {"weight", "bias", "tp_size", "scale"}
    assert self_reads(code, required=True) == {"tp_size", "scale"}


def test_an_owner_pin_is_the_same_where_a_newer_python_adds_an_empty_field():
    """Python 3.12 gave every `def` a `type_params` field that code without type parameters leaves empty: the same
    definition parsed there pins the same digest as here."""
    tree = ast.parse(STEP)
    newer = type("FunctionDef", (ast.FunctionDef,), {"_fields": (*ast.FunctionDef._fields, "type_params")})
    step = tree.body[0]
    fields = {name: getattr(step, name) for name in ast.FunctionDef._fields}
    tree.body[0] = ast.copy_location(newer(**fields, type_params=[]), step)
    assert tree.body[0]._fields[-1] == "type_params"
    assert definition_digest(tree, "step")[1] == _digest(STEP)


@pytest.mark.parametrize(
    "condition, values",
    [
        ("getattr(SELF, 'weight', None).shape[1] % 8 == 0", {"@self.weight.shape[1]"}),
        ("isinstance(SELF.weight, torch.Tensor) and SELF.weight.dim() == 2", {"@self.weight", "@self.weight.dim()"}),
        ("SELF.input_size >= 64 and SELF.tier[0]", {"@self.input_size", "@self.tier[0]"}),
        ("vllm.ops.is_available() and config is not None", set()),
    ],
)
def test_a_condition_reads_each_value_of_the_layer_as_far_as_it_reads_it(condition, values):
    """What the registration's checks and the search's filters are compared on: a filter of the layer's
    `weight.shape[1]` and a check of it test one value; one of `weight.dtype` another."""
    expression = ast.parse(condition, mode="eval").body
    for node in ast.walk(expression):
        if isinstance(node, ast.Name) and node.id == "SELF":
            node.id = "@self"  # the canonical name of the layer under construction
    assert layer_filters._layer_values(expression) == values


CODE = (
    "layer is not None",
    "kda_layer is not None",
    "layer is None",
    "a < b",
    "b < a",
    "a < a",
    "x < y",
    "len(layer) > n",
    "size(layer) > n",
    "len(kv) > n",
    "layer.num_spec > 0",
    "kv.num_spec > 0",
    "layer.num_spec > layer.x",
    "self.dtypes.add(dtype)",
    "self.dtypes.add(quant_dtype)",
    "self.kinds.add(dtype)",
    "x = f(y)",
    "z = f(y)",
    "y = f(y)",
)


def _numbered(text: str) -> str:
    """The code with its names numbered in order of first use (builtins kept): two pieces of code read alike under
    a one-to-one renaming exactly when these agree."""
    tree = ast.parse(text)
    order: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not hasattr(builtins, node.id):
            node.id = order.setdefault(node.id, f"v{len(order)}")
    return ast.dump(tree)


@pytest.mark.parametrize("entry", CODE)
def test_code_reads_as_other_code_under_a_renaming_exactly_when_their_names_correspond_one_to_one(entry):
    """An intended difference or an insert_after names a local the tree spells otherwise: taken only for code that
    is the same once each of its names is renamed, one to one, builtins never; checked against numbering the
    names."""
    for written in CODE:
        renamed_as = renaming(entry, written)
        alike = _numbered(entry) == _numbered(written) and entry != written
        assert (renamed_as is not None) == alike, (entry, written)
        if renamed_as:
            renamed = ast.parse(entry)
            for node in ast.walk(renamed):
                if isinstance(node, ast.Name):
                    node.id = renamed_as.get(node.id, node.id)
            assert ast.unparse(renamed) == written
