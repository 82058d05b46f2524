"""What running an engine tree refuses with, in a module that imports nothing (the CLI names it at start-up)."""


class EngineRunError(RuntimeError):
    """The tree's warmup cannot be run as written (a gate or call this runner cannot follow)."""
