"""The package imports only what it declares: a module that happens to be installed
beside it (a dependency of a dependency, a test extra) is missing on a user's machine."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "isthmus"


def declared() -> tuple[set[str], set[str]]:
    """Distributions the package requires, and those its extras add (normalised names)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {_normal(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in requirements}

    extras = set().union(*map(names, project["optional-dependencies"].values()))
    return names(project["dependencies"]), extras


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every absolute import in `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_every_import_is_the_standard_library_the_package_or_a_declared_dependency():
    required, extras = declared()
    distributions = metadata.packages_distributions()
    undeclared = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for module in imported_modules(path):
            if module in sys.stdlib_module_names or module in ("isthmus", "__future__"):
                continue
            owners = {_normal(d) for d in distributions.get(module, [module])}
            if not owners & (required | extras):
                undeclared.setdefault(module, path.relative_to(ROOT).as_posix())
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
