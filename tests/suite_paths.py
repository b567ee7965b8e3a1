"""Where the suite's files are, from any folder of tests/: the tests are grouped in folders by
layer (tests/plan, tests/node, ...), so a test names a fixture or the repository through these,
never by its own file's place."""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent     # tests/: the helpers every folder imports
ROOT = TESTS.parent                         # the repository
FIXTURES = TESTS / "fixtures"
