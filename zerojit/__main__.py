"""`python -m zerojit` runs the zerojit CLI."""

from zerojit.migrate.cli import main

main()
