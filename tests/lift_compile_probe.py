"""A lifted tree's registrations compiled for real: run in a child process (Triton's LLVM stays out of pytest).

    python lift_compile_probe.py MIGRATED_TREE CACHE_DIR

Builds each built-in lift's layers for its equivalence's `example` configuration from the migrated tree (their
registrations as the tree wrote them), runs the tree's own registry warmup on Triton's compile-only driver for
sm_90 with its disk cache in CACHE_DIR, and prints, per lift, how many variants Triton compiled and how many it loaded from the cache, with the cubins' sizes.
"""

import json
import sys
from pathlib import Path

import triton

from zerojit.contract.backends import triton as triton_backend
from zerojit.migrate.families import equivalence_adapter
from zerojit.migrate.triton_lifts.equivalence import ARCH
from zerojit.migrate.triton_lifts.specs import EQUIVALENCES

if __name__ == "__main__":
    tree, cache = Path(sys.argv[1]), Path(sys.argv[2])
    triton_backend.configure(ARCH, cache)
    counted = triton.knobs.compilation.listener
    seen: dict = {}

    def listen(*, src, metadata, metadata_group, times, cache_hit):
        counted(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)
        entry = seen.setdefault(current, {"compiled": 0, "loaded": 0, "cubin_bytes": []})
        entry["loaded" if cache_hit else "compiled"] += 1
        entry["cubin_bytes"] += [Path(p).stat().st_size for p in metadata_group.values() if p.endswith(".cubin")]

    triton.knobs.compilation.listener = listen
    for current in EQUIVALENCES:
        adapter = type(equivalence_adapter(current))(migrated_tree=tree)
        adapter.migrated.registered_keys(adapter.example)
    print(json.dumps(seen))
