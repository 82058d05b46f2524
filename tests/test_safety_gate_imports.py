"""The safety gate's import half: a name a migration newly imports from the repo's own modules must be there once
it is written. pyflakes reads one file, so an import of a name an older release lacks passes it and fails only when
the engine imports the module (0.29.0's ll_bf16 has no one-token kernel object; the registration imports it)."""

from tree_forks import write_tree

from zerojit.codemods.gate import check_imports

TREE = {
    "eng/__init__.py": "",
    "eng/ops/__init__.py": "from eng.ops.gemm import *\n",
    "eng/ops/gemm.py": "import triton\n\nif triton:\n    gemm_kernel = object()\n\n\ndef _helper():\n    pass\n",
    "eng/ops/lazy.py": "def __getattr__(name):\n    return name\n",
    "eng/ops/sub/__init__.py": "",
    "eng/ops/sub/norm.py": "",
    "eng/layers.py": "import os\n\n\nclass Linear:\n    pass\n",
}


def _found(root, after, before=None):
    """What the gate says of eng/layers.py changed to `after` (from the tree's text, or `before`)."""
    path = root / "eng/layers.py"
    changes = [(path, before if before is not None else path.read_text(), after)]
    return [f.what for f in check_imports(root, changes)]


def test_a_new_import_of_a_name_the_module_does_not_bind_is_refused_at_its_line(tmp_path):
    write_tree(tmp_path, TREE)
    text = "import os\n\n\nclass Linear:\n    def __init__(self):\n        from eng.ops.gemm import c1_kernel\n"
    found = check_imports(tmp_path, [(tmp_path / "eng/layers.py", TREE["eng/layers.py"], text)])
    assert [(f.line, f.what) for f in found] == [
        (6, "imports c1_kernel from eng.ops.gemm, which neither defines nor imports it")
    ]


def test_names_bound_anywhere_at_module_level_submodules_and_other_libraries_pass(tmp_path):
    write_tree(tmp_path, TREE)
    imports = (
        "from eng.ops.gemm import gemm_kernel, _helper\n"  # bound inside an `if`, and a function
        "from eng.ops import gemm_kernel as k, sub\n"  # through a star import; a subpackage
        "from .ops.sub import norm\n"  # relative, a submodule
        "from eng.ops.lazy import anything\n"  # a module `__getattr__`
        "from torch import nothing_checked\n"
        "from eng import ops\n"  # a subpackage of a package that binds nothing
        "import eng.ops.sub.norm\n"
    )
    assert _found(tmp_path, imports + TREE["eng/layers.py"]) == []


def test_a_name_the_same_migration_adds_to_another_module_passes_and_a_missing_module_does_not(tmp_path):
    write_tree(tmp_path, TREE)
    gemm, layers = tmp_path / "eng/ops/gemm.py", tmp_path / "eng/layers.py"
    added = "from eng.ops.gemm import gemm_dispatch\n" + TREE["eng/layers.py"]
    changes = [(gemm, TREE["eng/ops/gemm.py"], TREE["eng/ops/gemm.py"] + "\n\ndef gemm_dispatch():\n    pass\n")]
    assert check_imports(tmp_path, [*changes, (layers, TREE["eng/layers.py"], added)]) == []
    assert _found(tmp_path, added) == ["imports gemm_dispatch from eng.ops.gemm, which neither defines nor imports it"]
    assert _found(tmp_path, "import eng.ops.gone\n") == ["imports eng.ops.gone, which the migrated tree does not have"]


def test_an_import_the_file_had_before_is_not_the_migrations_to_judge(tmp_path):
    write_tree(tmp_path, TREE)
    old = "from eng.ops.gemm import never_there\n" + TREE["eng/layers.py"]
    assert _found(tmp_path, old + "\n\nX = 1\n", before=old) == []
