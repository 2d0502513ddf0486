"""The package layout is the architecture: layers import only downward, no import cycles, small modules,
no two modules with one name. Imports inside functions count as much as those at the top."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "synth"
MAX_LINES = 400

# Each layer and the layers it may import (besides itself). `cli` sits on top and may import anything.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "config": {"core"},
    "records": {"core", "config"},
    "llm": {"core", "config"},
    "testing": {"core", "config", "llm"},
    "life": {"core", "config", "records"},
    "quality": {"core", "config", "records", "life"},
    "eval": {"core", "config", "llm", "records", "life"},
    "engine": {"core", "config", "llm", "records", "life", "quality"},
    "stages": {"core", "config", "llm", "records", "life", "quality", "engine", "eval"},
    "pipeline": {"core", "config", "llm", "records", "life", "quality", "engine", "stages"},
    "release": {"core", "config", "records", "life", "quality"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The synth modules a file imports, anywhere in it except under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    found: set[str] = set()
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("synth"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("synth"):
                continue
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
    return {m for m in found if m in known and m != own}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, known) for name, path in mods.items()}


def layer_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_layers_import_only_downward():
    wrong = []
    for module, targets in graph().items():
        layer = layer_of(module)
        if layer == "cli":
            continue
        assert layer in LAYERS, f"{module}: a module outside the known layers (add its layer to LAYERS)"
        for target in targets:
            other = layer_of(target)
            if other != layer and other not in LAYERS[layer]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles():
    edges = graph()
    # Importing a submodule runs its package's __init__; an import of the package from inside it is not a cycle.
    state: dict[str, int] = defaultdict(int)
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if node.startswith(target + "."):
                continue
            if state[target] == 1:
                cycles.append(path[path.index(target):] + [target])
            elif state[target] == 0:
                visit(target, path + [target])
        state[node] = 2

    for module in sorted(edges):
        if state[module] == 0:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_over_the_size_limit():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_two_modules_share_a_name():
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            by_name[path.stem].append(str(path.relative_to(PACKAGE)))
    same = {stem: paths for stem, paths in by_name.items() if len(paths) > 1}
    assert not same, f"modules sharing a name: {same}"


@pytest.mark.parametrize("package", sorted(LAYERS) + ["cli"])
def test_every_layer_says_what_it_holds_and_may_import(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert doc, f"synth/{package}/__init__.py: no docstring"
    if package not in ("cli", "records", "stages", "eval", "testing"):
        allowed = LAYERS[package]
        assert "May import:" in doc and all(f"synth.{name}" in doc for name in allowed), package


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    """The checker itself can fail: two modules importing each other are reported."""
    pkg = tmp_path / "synth" / "core"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x"""\n')
    (pkg / "a.py").write_text("def f():\n    from synth.core import b\n")
    (pkg / "b.py").write_text("from synth.core import a\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "synth")
    with pytest.raises(AssertionError, match="synth.core.a -> synth.core.b -> synth.core.a"):
        test_no_import_cycles()
