"""`zerojit`: zero JIT compilation at serving time, planned, warmed, proven and migrated.

plan / warmup / verify / bake / demo take a --preset (a named serving configuration;
`zerojit families` lists them); `bake` builds caches to ship to serving hosts; `migrate`
rewrites an engine repo's legacy warmups onto the contract; `keys diff` checks that
migrated kernels warm what the legacy warmup did.
Machine-readable output with --json goes to stdout; progress and errors go to stderr,
so `--json` output can be piped.

One module per command group (thin: parse options, call a service, render); `app` names
and groups them, `shared` holds the options, consoles and the user-error decorator,
`render` the tables several commands print, `services` what a command does beyond a call.
"""

from .app import app, main

__all__ = ["app", "main"]
