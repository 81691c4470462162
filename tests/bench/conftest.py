import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bench: benchmark smoke tests (seconds-long runs of bench/)")
