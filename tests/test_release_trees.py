"""vllm_tree's cache of release trees: a wheel already in the cache is unpacked once, whole or not at all."""

import zipfile

import pytest

from zerojit.migrate.engine_trees.releases import vllm_tree

VERSION = "0.0.1"


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROJIT_CACHE", str(tmp_path))
    folder = tmp_path / "wheels"
    folder.mkdir()
    return folder


def wheel(folder, files):
    path = folder / f"vllm-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_a_wheel_in_the_cache_is_unpacked_to_its_python_files_and_nothing_is_left_beside_the_tree(wheels):
    wheel(wheels, {"vllm/__init__.py": "", "vllm/a.py": "x = 1\n", "vllm/lib.so": "elf", "other/b.py": ""})
    tree = vllm_tree(VERSION)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == [
        "vllm/__init__.py",
        "vllm/a.py",
    ]
    assert [p.name for p in tree.parent.iterdir()] == [tree.name]


def test_a_tree_an_interrupted_run_left_without_its_package_is_unpacked_again(wheels):
    wheel(wheels, {"vllm/__init__.py": "", "vllm/a.py": ""})
    broken = wheels.parent / "trees" / f"vllm-{VERSION}" / "vllm"
    broken.mkdir(parents=True)
    (broken / "a.py").write_text("half")
    tree = vllm_tree(VERSION)
    assert (tree / "vllm/__init__.py").is_file() and (tree / "vllm/a.py").read_text() == ""


def test_a_truncated_wheel_is_removed_with_an_error_that_says_so_and_leaves_no_staging_folder(wheels):
    path = wheel(wheels, {"vllm/__init__.py": "", "vllm/a.py": "x = 1\n" * 100})
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(RuntimeError, match="not a whole wheel"):
        vllm_tree(VERSION)
    assert not path.exists() and list((wheels.parent / "trees").iterdir()) == []
