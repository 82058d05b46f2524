"""zerojit: zero JIT compilation at serving time.

One import package over the repo's three folders (setuptools `package-dir`):
zerojit.contract  the warmup contract and its runtime (what an engine imports at init);
zerojit.migrate   kernel families (plug-ins, entry-point group `zerojit.families`) and the CLI;
zerojit.codemods  the libcst migration of legacy warmups.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("zerojit")
except PackageNotFoundError:  # imported from a source checkout that was never installed
    __version__ = "0+unknown"
