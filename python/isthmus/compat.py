"""What differs between the Python versions Isthmus supports (3.10 and later)."""

import sys

if sys.version_info >= (3, 11):
    import tomllib as toml
else:  # Python 3.10: the same parser, from PyPI
    import tomli as toml

__all__ = ["toml"]
