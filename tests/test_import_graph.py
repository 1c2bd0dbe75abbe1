"""The project's own import graph: no cycles, apps that depend one way, a domain free of HTTP.

Every import statement counts, at module level or inside a function: an import in a function
body still ties two modules together, it only hides a cycle until the function runs. What
this cannot see, on purpose: string references (settings paths, the URL map's include("app.urls"),
Celery task names sent by name, "app.Model" foreign keys, related managers such as
`refund.run.tool_calls`) and the receivers Django connects in an AppConfig.ready().

Run as a script, `python tests/test_import_graph.py` prints the graph between layers, each
edge with how many module-to-module imports make it up.
"""

import ast
import sys
from collections import Counter, deque
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "orders", "policies", "tickets", "refunds", "agent", "ops", "desk", "evals")

# The rooms of the house, lowest first: a room is a top-level package (a folder), except the
# MCP server. What lives there, and the module a newcomer reads first. What each may import is
# ALLOWED below; docs/architecture.md is printed from both (`python tests/test_import_graph.py
# --doc`), and test_the_architecture_doc_is_the_map_printed keeps it so.
ROOMS = {
    "config": (
        "settings, the site's URL map (apps mounted by name), the Celery app, the "
        "ApplicationError family and the API's error answers, money, roles, the log context, "
        "the database helpers: everyone's base, importing no app",
        "config.settings",
    ),
    "orders": (
        "the shop's orders as the desk sees them: Customer, Order, OrderLine",
        "orders.models",
    ),
    "policies": (
        "refund policy, its versions and clauses, and the deterministic rules that read orders",
        "policies.rules",
    ),
    "tickets": (
        "Ticket and TicketMessage, their services and selectors, SLA clocks, attachments, the "
        "live desk's changes and notifications: runs hang on tickets and post to them, so these "
        "sit low",
        "tickets.services",
    ),
    "refunds": (
        "proposals, review, execution and reconciliation, the payment adapters; they tell a "
        "ticket what happened through refunds.signals, never by importing tickets",
        "refunds.services",
    ),
    "agent": (
        "runs, tools, the executor, model providers, the step; its tools propose refunds",
        "agent.runtime.run_step",
    ),
    "ops": (
        "running the desk: health, metrics (which read every app's tables), throttling, the "
        "broker's transports, logging, the Celery worker's signal handlers, retention, the HTTP "
        "plumbing the desk's API shares (token authentication, parsers, pagination), the dev "
        "server",
        "ops.health",
    ),
    "desk": (
        "the support desk on top of it all: the ticket pages and API, the whole /api/, the "
        "receivers that post other apps' news on tickets, the demo data; and the order admin, "
        "whose edits go through refunds' services (they lock and rebind the refunds on the order)",
        "desk.urls",
    ),
    "project": (
        "the MCP server, the other door outside clients come in by: like the API it serves the "
        "desk to them (the agent's tools, for agent hosts) and authenticates them with tokens, so "
        "like the API it may reach rest_framework; nothing imports it",
        "agent.mcp.server",
    ),
    "evals": (
        "measures the assistant: runs eval cases through the agent on the desk's demo shop; "
        "nothing imports it",
        "evals.metrics",
    ),
}
DOMAIN = ("orders", "policies", "tickets", "refunds", "agent")
ALLOWED = {
    "config": set(),
    "orders": {"config"},
    "policies": {"config", "orders"},
    "tickets": {"config", "orders"},
    # A refund request points at its ticket: refunds may name the Ticket model (a module, not
    # the whole layer), but tells a ticket news only through refunds.signals.
    "refunds": {"config", "orders", "policies", "tickets.models"},
    "agent": {"config", "orders", "policies", "tickets", "refunds"},
    "ops": {"config", *DOMAIN},
    "desk": {"config", *DOMAIN, "ops"},
    "project": {"config", *DOMAIN, "ops", "desk"},
    "evals": {"config", *DOMAIN, "ops", "desk"},
}
MCP_SERVER = ("agent.mcp", "agent.management.commands.mcp_server")

# Inside agent, its parts, lowest first, and the module a newcomer reads first in each;
# AGENT_ALLOWED says what each may import of the others besides itself (an entry is a part, or
# dotted, one module of it).
AGENT_PARTS = {
    "agent.base": (
        "the app's top-level modules other than those below: the run models, the runs' state "
        "machine (transitions) and reads (run_selectors), errors, the tool context, untrusted "
        "blocks, the answer check, the vocabulary, live notifications",
        "agent.models",
    ),
    "agent.providers": (
        "the model behind one interface: the OpenAI client, the offline planner, the circuit "
        "breaker",
        "agent.providers",
    ),
    "agent.tools": (
        "the tool declarations (registry), their handlers, argument validation, result paging",
        "agent.tools.registry",
    ),
    "agent.executor": (
        "runs one tool call and logs it; the call threads; loop detection's keys",
        "agent.executor.calls",
    ),
    "agent.services": (
        "every write of a run; a run records the tools and prompt versions it starts with, so "
        "it may read the prompt module",
        "agent.services",
    ),
    "agent.runtime": (
        "the step: context and prompt, the step loop, handover, replies, streaming",
        "agent.runtime.run_step",
    ),
    "agent.app": (
        "the app's doors and wiring: API, serializers, URLs, admin, the Celery tasks, the "
        "AppConfig",
        "agent.tasks",
    ),
    "agent.mcp": (
        "the MCP server (the project layer above): it may import any part",
        "agent.mcp.server",
    ),
}
AGENT_SERVICES = ("agent.services",)
AGENT_APP = (
    "agent.api",
    "agent.serializers",
    "agent.urls",
    "agent.admin",
    "agent.tasks",
    "agent.apps",
)
AGENT_PACKAGES = ("agent.providers", "agent.tools", "agent.executor", "agent.runtime")
AGENT_ALLOWED = {
    "agent.base": set(),
    "agent.providers": {"agent.base"},
    "agent.tools": {"agent.base"},
    "agent.executor": {"agent.base", "agent.tools"},
    "agent.services": {"agent.base", "agent.tools", "agent.runtime.prompts"},
    "agent.runtime": {
        "agent.base",
        "agent.providers",
        "agent.tools",
        "agent.executor",
        "agent.services",
    },
    "agent.app": {
        "agent.base",
        "agent.providers",
        "agent.tools",
        "agent.executor",
        "agent.services",
        "agent.runtime",
    },
    "agent.mcp": {
        "agent.base",
        "agent.providers",
        "agent.tools",
        "agent.executor",
        "agent.services",
        "agent.runtime",
        "agent.app",
    },
}

# Modules a part may not import although AGENT_ALLOWED lets it reach their part: the runtime
# asks the offline planner only as a provider, through agent.providers (get_offline_provider),
# and reads what a request asks with agent.vocabulary, never the planner's own modules.
AGENT_FORBIDDEN = {"agent.runtime": ("agent.providers.offline",)}

# Modules that speak HTTP (by a name in their path below the app: `desk.api` and everything in a
# `desk/api/` package); the rest is domain code, which must reach neither an HTTP framework nor
# them.
HTTP_MODULES = {
    "api",
    "authentication",
    "serializers",
    "urls",
    "views",
    "forms",
    "admin",
    "middleware",
    "permissions",
    "pagination",
    "parsers",
    "api_errors",
    "context_processors",
    "throttling",
}
HTTP_FRAMEWORKS = ("rest_framework", "drf_spectacular")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def speaks_http(module: str) -> bool:
    return any(part in HTTP_MODULES for part in module.split(".")[1:])


def layer_of(module: str) -> str:
    if _within(module, MCP_SERVER):
        return "project"
    return module.split(".")[0]


def agent_part_of(module: str) -> str | None:
    """The part of agent a module belongs to (see AGENT_ALLOWED), None outside agent."""
    if not _within(module, ("agent",)):
        return None
    if _within(module, MCP_SERVER):
        return "agent.mcp"
    for part in (*AGENT_PACKAGES, *AGENT_SERVICES):
        if _within(module, (part,)):
            return part
    if _within(module, AGENT_APP):
        return "agent.app"
    return "agent.base"


def project_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Module name -> source file, for every .py file of the packages."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imported_names(
    node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]
) -> list[str]:
    """The dotted names an import statement brings in; `from x import y` names the
    submodule x.y when there is one, else x."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
        for alias in node.names
    ]


def _project_module(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(modules: dict[str, Path]) -> dict[tuple[str, str], int]:
    """(importer, imported) -> line of the first import, between project modules."""
    edges: dict[tuple[str, str], int] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            for name in _imported_names(node, module, is_package, modules):
                target = _project_module(name, modules)
                if target is not None and target != module:
                    edges.setdefault((module, target), node.lineno)
    return edges


def external_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the top-level names of everything it imports."""
    found: dict[str, set[str]] = {}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.setdefault(module, set()).update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.setdefault(module, set()).add(node.module.split(".")[0])
    return found


def find_cycles(edges: dict[tuple[str, str], int]) -> list[list[str]]:
    """One shortest cycle per strongly connected group of modules (Tarjan), as
    [a, b, ..., a]."""
    graph: dict[str, list[str]] = {}
    for source, target in sorted(edges):
        graph.setdefault(source, []).append(target)
        graph.setdefault(target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in graph:
        if node not in index:
            connect(node)
    return [_shortest_cycle(graph, group) for group in groups]


def _shortest_cycle(graph: dict[str, list[str]], group: set[str]) -> list[str]:
    start = min(group)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in graph[node]:
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if successor in group and successor not in came_from:
                came_from[successor] = node
                queue.append(successor)
    raise AssertionError(f"no cycle through {start}")


def _may_import(source: str, target: str) -> bool:
    """An entry of ALLOWED names a whole layer, or (dotted) one module of it."""
    allowed = ALLOWED[layer_of(source)]
    return (
        layer_of(source) == layer_of(target)
        or layer_of(target) in allowed
        or _within(target, tuple(entry for entry in allowed if "." in entry))
    )


def layer_violations(edges: dict[tuple[str, str], int]) -> list[tuple[str, str, int]]:
    return [
        (source, target, line)
        for (source, target), line in sorted(edges.items())
        if not _may_import(source, target)
    ]


def agent_part_violations(edges: dict[tuple[str, str], int]) -> list[tuple[str, str, int]]:
    """Imports between agent's parts against AGENT_ALLOWED."""
    found = []
    for (source, target), line in sorted(edges.items()):
        source_part, target_part = agent_part_of(source), agent_part_of(target)
        if source_part is None or target_part is None or source_part == target_part:
            continue
        allowed = AGENT_ALLOWED[source_part]
        forbidden = _within(target, AGENT_FORBIDDEN.get(source_part, ()))
        if forbidden or (target_part not in allowed and not _within(target, tuple(allowed))):
            found.append((source, target, line))
    return found


def agent_part_graph(edges: dict[tuple[str, str], int]) -> Counter:
    """(part, part) -> how many module-to-module imports cross between agent's parts."""
    parts = ((agent_part_of(source), agent_part_of(target)) for source, target in edges)
    return Counter(
        (source, target)
        for source, target in parts
        if source is not None and target is not None and source != target
    )


def layer_graph(edges: dict[tuple[str, str], int]) -> Counter:
    """(layer, layer) -> how many module-to-module imports cross from one to the other."""
    return Counter(
        (layer_of(source), layer_of(target))
        for source, target in edges
        if layer_of(source) != layer_of(target)
    )


def _where(modules: dict[str, Path], module: str, line: int) -> str:
    return f"{modules[module].relative_to(ROOT)}:{line}"


def floors(allowed: dict[str, set[str]]) -> dict[str, int]:
    """Each room's floor: one above the highest room it may import whole (the lowest is floor
    0). A dotted entry lets one module of a room through and raises no floor."""
    found: dict[str, int] = {}

    def floor(room: str) -> int:
        if room not in found:
            below = {entry for entry in allowed[room] if entry in allowed}
            found[room] = 1 + max((floor(other) for other in below), default=-1)
        return found[room]

    for room in allowed:
        floor(room)
    return found


def _floors_drawn(
    rooms: dict[str, tuple[str, str]],
    allowed: dict[str, set[str]],
    imports: set[tuple[str, str]],
) -> list[str]:
    floor_of = floors(allowed)
    lines = ["```"]
    for level in sorted(set(floor_of.values()), reverse=True):
        here = sorted(room for room in rooms if floor_of[room] == level)
        lines.append(f"floor {level}  " + "   ".join(here))
        for room in here:
            targets = sorted(target for source, target in imports if source == room)
            if targets:
                lines.append(f"          {room} -> " + ", ".join(targets))
    return [*lines, "```", ""]


def _source_of(path: Path) -> str:
    """A module's file, or a package's folder."""
    if path.name == "__init__.py":
        return f"{path.parent.relative_to(ROOT)}/"
    return str(path.relative_to(ROOT))


def _paragraphs(
    rooms: dict[str, tuple[str, str]],
    allowed: dict[str, set[str]],
    modules: dict[str, Path],
    none: str,
) -> list[str]:
    floor_of = floors(allowed)
    lines = []
    for room in sorted(rooms, key=lambda room: (floor_of[room], room)):
        what, start = rooms[room]
        whole = sorted(entry for entry in allowed[room] if entry in allowed)
        single = sorted(entry for entry in allowed[room] if entry not in allowed)
        may = ", ".join(whole) or none
        if single:
            may += "; of the rest only " + ", ".join(f"`{entry}`" for entry in single)
        lines += [
            f"**{room}** (floor {floor_of[room]}): {what}.",
            f"May import: {may}. Start at `{_source_of(modules[start])}`.",
            "",
        ]
    return lines


def render_architecture(modules: dict[str, Path], edges: dict[tuple[str, str], int]) -> str:
    """docs/architecture.md: the floors, the imports between rooms, and a paragraph a room;
    then the same for the parts inside agent."""
    lines = [
        "# Architecture",
        "",
        "Printed by `python tests/test_import_graph.py --doc` from the map in",
        "`tests/test_import_graph.py`, which fails the suite on an import against it; a test",
        "fails while this file differs from what the map prints. Do not edit it by hand.",
        "",
        "## Floors",
        "",
        "A room is a top-level package (a folder), except the MCP server. A room may import",
        "only rooms on floors below its own; the arrows are the imports the code makes today.",
        "",
        *_floors_drawn(ROOMS, ALLOWED, set(layer_graph(edges))),
        "## Rooms",
        "",
        *_paragraphs(ROOMS, ALLOWED, modules, none="no other room"),
        "## Inside agent",
        "",
        "The agent room has parts of its own, held to the same rule (each may import what the",
        "agent room may, besides the parts it names).",
        "",
        *_floors_drawn(AGENT_PARTS, AGENT_ALLOWED, set(agent_part_graph(edges))),
        *_paragraphs(AGENT_PARTS, AGENT_ALLOWED, modules, none="no other part"),
    ]
    return "\n".join(lines)


ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"


# --- Tests -------------------------------------------------------------------------------------

MODULES = project_modules()
EDGES = import_graph(MODULES)


def test_no_project_module_imports_itself_back():
    cycles = find_cycles(EDGES)

    described = [
        "\n".join(
            [" -> ".join(cycle)]
            + [f"    {_where(MODULES, a, EDGES[a, b])} imports {b}" for a, b in pairwise(cycle)]
        )
        for cycle in cycles
    ]
    assert cycles == [], "import cycles:\n" + "\n".join(described)


def test_apps_depend_one_way():
    violations = layer_violations(EDGES)

    described = [
        f"{_where(MODULES, source, line)}: {source} ({layer_of(source)}) imports "
        f"{target} ({layer_of(target)})"
        for source, target, line in violations
    ]
    assert violations == [], "imports against the layering:\n" + "\n".join(described)


def test_domain_code_imports_no_http_layer():
    externals = external_imports(MODULES)
    offenders = []
    for module in MODULES:
        if speaks_http(module) or _within(module, MCP_SERVER):
            continue
        offenders += [
            f"{module} imports {name}"
            for name in sorted(externals.get(module, ()))
            if name in HTTP_FRAMEWORKS
        ]
        offenders += [
            f"{module} imports {target}"
            for (source, target) in EDGES
            if source == module and speaks_http(target)
        ]

    assert offenders == [], "domain code reaching HTTP:\n" + "\n".join(sorted(offenders))


def test_the_agent_parts_depend_one_way():
    violations = agent_part_violations(EDGES)

    described = [
        f"{_where(MODULES, source, line)}: {source} ({agent_part_of(source)}) imports "
        f"{target} ({agent_part_of(target)})"
        for source, target, line in violations
    ]
    assert violations == [], "imports against agent's parts:\n" + "\n".join(described)


def test_every_agent_module_has_a_part_and_every_package_exists():
    packages = {module for module in MODULES if _within(module, AGENT_PACKAGES)}

    assert {part for part in AGENT_PACKAGES if part in packages} == set(AGENT_PACKAGES)
    assert {agent_part_of(module) for module in MODULES if module.startswith("agent")} == set(
        AGENT_ALLOWED
    )


def test_the_checker_names_an_import_against_the_agent_parts():
    edges = {
        ("agent.tools.registry", "agent.runtime.run_step"): 3,
        ("agent.providers.breaker", "agent.executor.pool"): 4,
        ("agent.services", "agent.runtime.prompts"): 5,
        ("agent.services", "agent.runtime.run_step"): 6,
        ("agent.runtime.run_step", "agent.services"): 7,
        ("agent.mcp.server", "agent.runtime.prompts"): 8,
        ("agent.context", "agent.tools.registry"): 9,
        ("agent.tools.reads", "orders.selectors"): 10,
    }

    assert agent_part_violations(edges) == [
        ("agent.context", "agent.tools.registry", 9),
        ("agent.providers.breaker", "agent.executor.pool", 4),
        ("agent.services", "agent.runtime.run_step", 6),
        ("agent.tools.registry", "agent.runtime.run_step", 3),
    ]


def test_the_checker_names_the_runtime_reading_the_offline_planner():
    edges = {
        ("agent.runtime.small_model", "agent.providers.offline.planner"): 3,
        ("agent.runtime.small_model", "agent.providers"): 4,
        ("agent.runtime.small_model", "agent.vocabulary.requests"): 5,
        ("agent.providers", "agent.providers.offline.planner"): 6,
    }

    assert agent_part_violations(edges) == [
        ("agent.runtime.small_model", "agent.providers.offline.planner", 3),
    ]


def test_the_checker_sees_a_cycle_hidden_in_a_function_body(tmp_path):
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "services.py").write_text("from shop import tasks\n")
    (package / "tasks.py").write_text("def run():\n    from . import services\n")
    (package / "models.py").write_text("import shop.services\n")

    modules = project_modules(tmp_path, ("shop",))
    edges = import_graph(modules)

    assert edges == {
        ("shop.services", "shop.tasks"): 1,
        ("shop.tasks", "shop.services"): 2,
        ("shop.models", "shop.services"): 1,
    }
    assert find_cycles(edges) == [["shop.services", "shop.tasks", "shop.services"]]


def test_every_room_is_described_with_a_module_to_start_at():
    assert set(ROOMS) == set(ALLOWED)
    assert set(AGENT_PARTS) == set(AGENT_ALLOWED)
    starts = [start for _what, start in [*ROOMS.values(), *AGENT_PARTS.values()]]
    assert [start for start in starts if start not in MODULES] == []


def test_the_architecture_doc_is_the_map_printed():
    assert ARCHITECTURE_DOC.read_text() == render_architecture(MODULES, EDGES), (
        "docs/architecture.md differs from the map: run python tests/test_import_graph.py --doc"
    )


def test_the_checker_names_an_import_against_the_layering():
    edges = {
        ("refunds.services", "tickets.services"): 7,
        ("refunds.services", "tickets.models"): 8,
        ("agent.tools", "refunds.services"): 3,
        ("desk.receivers", "refunds.signals"): 4,
    }

    assert layer_violations(edges) == [("refunds.services", "tickets.services", 7)]


if __name__ == "__main__":
    if sys.argv[1:] == ["--doc"]:
        ARCHITECTURE_DOC.write_text(render_architecture(MODULES, EDGES))
        print(f"wrote {ARCHITECTURE_DOC.relative_to(ROOT)}")
        sys.exit(0)
    for (source, target), count in sorted(layer_graph(EDGES).items()):
        print(f"{source:>8} -> {target:<8} {count:3d}")
    print("\ninside agent:")
    for (source, target), count in sorted(agent_part_graph(EDGES).items()):
        print(f"{source:>16} -> {target:<16} {count:3d}")
    for cycle in find_cycles(EDGES):
        print("cycle:", " -> ".join(cycle))
    for source, target, line in layer_violations(EDGES):
        print(f"against the layering: {_where(MODULES, source, line)} imports {target}")
    for source, target, line in agent_part_violations(EDGES):
        print(f"against agent's parts: {_where(MODULES, source, line)} imports {target}")
    violations = layer_violations(EDGES) or agent_part_violations(EDGES)
    sys.exit(1 if find_cycles(EDGES) or violations else 0)
