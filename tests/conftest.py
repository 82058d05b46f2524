import pytest

from contract import clear_missed_registrations


@pytest.fixture(autouse=True)
def fresh_missed_ledger():
    """Missed registrations are process-wide; each test starts from an empty ledger."""
    clear_missed_registrations()
    yield
    clear_missed_registrations()

pytest_plugins = ["pytester"]
