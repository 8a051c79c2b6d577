"""Print pip constraints that pin every dependency of dpsk to its declared floor.

Usage: python .ci/lowest_constraints.py [EXTRA ...] > lowest.txt, then
``pip install -c lowest.txt ".[EXTRA]"``. Every ``name>=X`` requirement of
``[project] dependencies`` (and of the named optional-dependency groups) becomes
``name==X``, so CI tests the oldest versions that pyproject.toml allows.
Requirements without a ``>=`` floor are an error: a floor that nothing tests
is a floor that nobody knows to be true.
"""

import re
import sys
import tomllib
from pathlib import Path

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*>=\s*([0-9][A-Za-z0-9.]*)\s*(?:,.*)?$")


def floors(extras):
    project = tomllib.loads(Path(__file__).resolve().parent.parent.joinpath(
        "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = {}
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        if match is None:
            raise SystemExit(f"no '>=' floor in requirement {requirement!r}")
        name, version = match.groups()
        pins[name.lower()] = version
    return pins


if __name__ == "__main__":
    for name, version in floors(sys.argv[1:]).items():
        print(f"{name}=={version}")
