"""Paths of real test inputs (importable from any test: pytest puts tests/ on sys.path)."""

import pathlib

DATA = pathlib.Path(__file__).parent / "data"
CONFIG_DIR = DATA / "config"
DEBIAN_PYTHON = "/usr/bin/python3"


def read_config(name):
    """Text of a real config file in tests/data/config (sources: its README.md)."""
    return (CONFIG_DIR / name).read_text()
