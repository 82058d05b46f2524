"""Compile workers that start once: a forkserver that has imported and configured the backend's DSL.

A spawned worker starts Python and imports its DSL before its first compile (CuTe DSL with
FlashAttention-4: about 9.7 s on an H200 host), which is most of a parallel warmup's cost.
`prepare(setup)` (which `executor.start_workers` calls) starts this process's forkserver with
`setup` (the backend's `configure(arch, cache)`) run in it, in parallel with this process's own
import of the DSL; every worker then forks from it configured (a fork, not an import), and a
later pool with the same setup (the next preset of a bake) forks from the same server. It lives
as long as this process (a CLI command; an engine does not start worker pools).
The server and its workers see no GPU (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES empty): importing
CuTe DSL on a GPU host initializes CUDA, which a forked child can then never use, and a compile-only
worker needs none (it compiles for the configured target exactly as on a CPU-only host, whose
artifacts load on the GPU host). The forkserver serves one setup for the life of the process (multiprocessing keeps one per
process): a pool for another setup (another backend, target or cache; FlyDSL and CuTe DSL never
share a process) spawns its workers as before, and so does every pool when ZEROJIT_WORKER_START=spawn
(the previous design, which bench/variant_warmup.py measures beside this one).
"""

from __future__ import annotations

import base64
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
from collections.abc import Callable
from typing import Any

Setup = tuple[Callable[..., Any], tuple]
_SETUP_ENV = "ZEROJIT_FORKSERVER_SETUP"  # what the forkserver runs as it starts, read by this module's import
_prepared: Setup | None = None
_NO_DEVICE = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}  # compile-only workers need no GPU


def prepare(setup: Setup) -> None:
    """Start the forkserver now with `setup` run in it (once per process; a later, different setup is ignored)."""
    global _prepared
    if _prepared is not None or os.environ.get("ZEROJIT_WORKER_START") == "spawn":
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    server_env = {_SETUP_ENV: base64.b64encode(pickle.dumps(setup)).decode(), **_NO_DEVICE}
    saved = {name: os.environ.get(name) for name in server_env}
    os.environ.update(server_env)  # the server inherits this process's environment as it starts
    try:
        multiprocessing.forkserver.ensure_running()  # returns at once: the server imports on its own
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _prepared = setup


def context(setup: Setup) -> multiprocessing.context.BaseContext:
    """Where workers running `setup` start: forked from the prepared forkserver when it holds this setup, else
    spawned (never forked from this process, which may hold a DSL runtime)."""
    return multiprocessing.get_context("forkserver" if setup == _prepared else "spawn")


def _run_prepared_setup() -> None:
    """In the forkserver, as it imports this module: the setup `prepare` handed over, before any worker forks
    (nothing in the package imports this module at its own import, so the setup may import the package)."""
    encoded = os.environ.pop(_SETUP_ENV, None)  # set only while `prepare` starts the server
    if encoded:
        function, args = pickle.loads(base64.b64decode(encoded))
        function(*args)


_run_prepared_setup()
