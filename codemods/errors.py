"""What the codemod layer refuses with, in a module that imports nothing: the CLI names these errors at start-up
without loading libcst's codemods, pyflakes or ruff (commands that never migrate, such as `zerojit warmup`, never
do)."""


class MigrationError(RuntimeError):
    """The migration cannot be planned or checked; nothing was written. `refusals`: the changes it refused
    (`codemods.findings.Refusal`: a code, the place and why), when that is the reason."""

    def __init__(self, message: str, refusals: tuple = ()):
        super().__init__(message)
        self.refusals = tuple(refusals)


class TransactionError(RuntimeError):
    """The write could not be completed; what was already replaced has been rolled back."""
