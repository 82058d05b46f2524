"""Offline engine-tree machinery: an engine's own source tree run beside stubs, never imported by an engine.

releases.py     release trees from PyPI wheels (vLLM), downloaded once and cached
sources.py      an engine's modules run from its tree; the rest "names only", stubs as given
warmup.py       a tree's warmup run as written (standalone steps, or constructor registrations and the registry)
construction.py a constructor run from the tree on every path it can take (what a migrated layer registers)
equivalence.py  the key-equivalence comparison (legacy vs migrated keys) and its reports

Layering: this room uses `zerojit.contract` and the static repo model (`zerojit.codemods.repo`);
the family rooms' legacy and equivalence modules, the CLI and the pytest plugin use it.
"""
