"""`zerojit`: zero JIT compilation at serving time, planned, warmed, proven and migrated.

plan / warmup / verify / bake / demo take a --preset (a named serving configuration;
`zerojit families` lists them); `bake` builds caches to ship to serving hosts; `migrate`
rewrites an engine repo's legacy warmups onto the contract; `keys diff` checks that
migrated kernels warm what the legacy warmup did.
Machine-readable output with --json goes to stdout; progress and errors go to stderr,
so `--json` output can be piped.

One module per command group (thin: parse options, call a service, render); `app` names
and groups them, `shared` holds the options, consoles, the user-error decorator and the
environment the CLI reads, `render` what several commands print (and the warmup's progress
bar), `tables` the reports as tables, `plots` the drawings (matplotlib), `services` what a
command does beyond a call. Presentation lives here only: contract/ and codemods/ import
neither rich nor matplotlib (tests/test_import_layers.py).
"""

from .app import app, main

__all__ = ["app", "main"]
