from pathlib import Path

import pytest

from isthmus.cli import bundled_scenarios


@pytest.fixture
def scenario_path():
    def find(name: str) -> Path:
        return bundled_scenarios()[name]

    return find
