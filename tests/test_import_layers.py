"""The Python package's imports point down its layers and close no circle
(docs/architecture.md), checked on grimp's import graph. TYPE_CHECKING imports are
annotations, not dependencies, and are left out."""

from __future__ import annotations

import grimp
import networkx as nx
from grimp import Layer

# Top first. A module imports only from layers below its own (or its own layer, where
# the modules of a layer may depend on each other).
LAYERS = [
    ("isthmus.entry",),
    ("isthmus.cli",),
    ("isthmus.emulate",),
    ("isthmus.bench", "isthmus.sweep", "isthmus.studies"),
    ("isthmus.experiments",),
    ("isthmus.report", "isthmus.query"),
    ("isthmus.report_interactive", "isthmus.compare"),
    ("isthmus.rl",),
    ("isthmus.scenario",),
    ("isthmus.control",),
    ("isthmus.predict", "isthmus.learning"),
    ("isthmus.results",),
    ("isthmus.metrics", "isthmus.network_metrics", "isthmus.run_files"),
    ("isthmus.simulation",),
    (
        "isthmus.portmap",
        "isthmus.flows",
        "isthmus.workload",
        "isthmus.link_traces",
        "isthmus.transport",
    ),
    ("isthmus.topology", "isthmus.queues"),
    ("isthmus.parameter_docs",),
    ("isthmus.declared",),
    ("isthmus.arguments", "isthmus.inputs", "isthmus.fields", "isthmus.registry"),
    ("isthmus.units", "isthmus.wire"),
]

# Inside the control plane: apps on the plane, the plane on its commands and seam.
CONTROL_LAYERS = [
    ("apps",),
    ("forecasts",),
    ("plane",),
    ("seam",),
    ("commands",),
    ("paths", "loop_free", "demands", "mcf", "provision", "events"),
    ("routing",),
]

KNOWN_UPWARD: set[tuple[str, str]] = set()
"""Imports that still point up, each with its reason; the list only shrinks."""


def _graph() -> grimp.ImportGraph:
    graph = grimp.build_graph("isthmus", cache_dir=None, exclude_type_checking_imports=True)
    for importer, imported in KNOWN_UPWARD:
        graph.remove_import(importer=importer, imported=imported)
    return graph


def _layers(spec: list[tuple[str, ...]]) -> list[Layer]:
    return [Layer(*modules, independent=False) for modules in spec]


def _routes(dependencies) -> list[str]:
    return [
        f"{d.importer} -> {d.imported} (via {sorted(route.heads)} ... {sorted(route.tails)})"
        for d in dependencies
        for route in d.routes
    ]


def test_every_top_level_module_has_a_layer():
    graph = _graph()
    top = {m for m in graph.modules if m.count(".") == 1 and m != "isthmus._core"}
    placed = {module for layer in LAYERS for module in layer}
    assert top - placed == set(), "give these modules a layer in LAYERS"
    assert placed - top == set(), "LAYERS names modules that do not exist"


def test_imports_point_down_the_layers():
    graph = _graph()
    illegal = graph.find_illegal_dependencies_for_layers(layers=_layers(LAYERS), containers=set())
    assert _routes(illegal) == []


def test_the_control_plane_imports_point_down_its_layers():
    graph = _graph()
    control = {m.rsplit(".", 1)[1] for m in graph.find_children("isthmus.control")}
    assert control == {module for layer in CONTROL_LAYERS for module in layer}
    illegal = graph.find_illegal_dependencies_for_layers(
        layers=_layers(CONTROL_LAYERS), containers={"isthmus.control"}
    )
    assert _routes(illegal) == []


def test_no_import_circle():
    graph = _graph()
    imports = nx.DiGraph()
    for module in graph.modules:
        imports.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            imports.add_edge(module, imported)
    circles = [sorted(c) for c in nx.strongly_connected_components(imports) if len(c) > 1]
    assert circles == []


def test_the_checks_catch_an_upward_import_and_a_circle():
    graph = _graph()
    graph.add_import(importer="isthmus.units", imported="isthmus.simulation")
    illegal = graph.find_illegal_dependencies_for_layers(layers=_layers(LAYERS), containers=set())
    assert any(d.importer == "isthmus.units" for d in illegal)
    imports = nx.DiGraph(
        (m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)
    )
    assert any(len(c) > 1 for c in nx.strongly_connected_components(imports))
