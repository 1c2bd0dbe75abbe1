"""`.env.example` lists every environment variable the desk reads: the settings' `env(...)`
calls (django-environ) and any `os.environ` read by name in the apps."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The project's packages (every app, config), not the tests or the benches.
APPS = sorted(
    path.parent.name
    for path in ROOT.glob("*/__init__.py")
    if path.parent.name not in ("tests", "bench")
)
# Set by pytest itself, never by whoever runs the desk: the settings only ask whether it is set.
NOT_FOR_THE_EXAMPLE = {"PYTEST_VERSION"}


def _name(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def variables_read(source: str, *, environ_reader: bool = False) -> set[str]:
    """Names read through os.environ.get, os.getenv and os.environ["X"], and, where `env` is
    django-environ's reader (`environ_reader`), env("X"), env.int("X") and the like."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            function = ast.unparse(node.func)
            if re.fullmatch(r"os\.environ\.get|os\.getenv", function) or (
                environ_reader and re.fullmatch(r"env(\.\w+)?", function)
            ):
                found.add(_name(node.args[0]))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and ast.unparse(node.value) == "os.environ"
        ):
            found.add(_name(node.slice))
    return found - {None}


def test_the_example_lists_every_variable_the_desk_reads():
    read = variables_read((ROOT / "config/settings.py").read_text(), environ_reader=True)
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            read |= variables_read(path.read_text())
    example = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M))

    assert {"DATABASE_URL", "LLM_STREAM", "PROMETHEUS_MULTIPROC_DIR"} <= read  # it sees them
    assert sorted(read - NOT_FOR_THE_EXAMPLE - example) == [], "read but not in .env.example"
    assert sorted(example - read) == [], "in .env.example but read nowhere"


def test_the_scan_finds_each_way_of_reading_a_variable():
    source = (
        'A = env("ONE")\nB = env.bool("TWO", default=False)\nC = os.environ.get("THREE")\n'
        'D = os.environ["FOUR"]\nos.environ["FIVE"] = "x"\nE = os.getenv("SIX")\n'
    )

    assert variables_read(source, environ_reader=True) == {"ONE", "TWO", "THREE", "FOUR", "SIX"}
    assert variables_read(source) == {"THREE", "FOUR", "SIX"}
