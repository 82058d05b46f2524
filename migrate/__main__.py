"""`python -m migrate` runs the zerojit CLI."""

from .cli import app

app(prog_name="zerojit")
