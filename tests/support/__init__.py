"""Plain helpers the tests import (built cases, a small project on disk, a pseudo-terminal, a
browser, scripted production replies); fixtures live in the conftest.py files."""
