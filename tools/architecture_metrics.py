"""The package's shape as a newcomer would measure it: import circles, arrows against the layers of
pyproject.toml's import-linter contract, imports inside functions, the longest functions, lines per package.

    python3 tools/architecture_metrics.py [TREE]      (TREE: a checkout; default this one)

The layers are read from this checkout's pyproject.toml, so an older TREE is measured against today's rules.
"""

import ast
import os
import sys
import tomllib
from collections import Counter

import grimp


def layer_ranks(tree: str) -> dict[str, int]:
    """Each top-level name's place in pyproject.toml's "layers" contract, top first (one line: one place)."""
    with open(os.path.join(tree, "pyproject.toml"), "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("id") == "layers")
    return {name.strip(): i for i, line in enumerate(layers) for name in line.split("|")}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def main(tree: str, layers_of: str) -> None:
    sys.path.insert(0, tree)
    rank = layer_ranks(layers_of)
    graph = grimp.build_graph("nvdsl")
    modules = sorted(graph.modules)
    edges = [(m, t) for m in modules for t in graph.find_modules_directly_imported_by(m)]
    cycles = sorted({tuple(sorted((a, b))) for a, b in edges if graph.find_shortest_chain(b, a)})
    sideways_or_up = sorted((a, b) for a, b in edges if top(a) != top(b) and top(a) in rank and top(b) in rank
                            and rank[top(b)] <= rank[top(a)])
    root_imports = sorted(a for a, b in edges if b == "nvdsl" and a != "nvdsl")
    print(f"modules: {len(modules)}, import arrows: {len(edges)}")
    print(f"pairs of modules in an import circle: {len(cycles)}")
    print(f"arrows against the layers (up, or between independent siblings): {len(sideways_or_up)}")
    for a, b in sideways_or_up:
        print(f"  {a} -> {b}")
    print(f"imports of the package root from inside: {root_imports}")
    functions, inner_imports, lines = [], set(), Counter()
    for folder, _, files in os.walk(os.path.join(tree, "nvdsl")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            source = open(path).read()
            package = os.path.relpath(path, os.path.join(tree, "nvdsl")).split(os.sep)[0].removesuffix(".py")
            lines[package] += source.count("\n")
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.append((node.end_lineno - node.lineno + 1, f"{os.path.relpath(path, tree)}:{node.name}"))
                    inner_imports |= {(path, n.lineno) for n in ast.walk(node)
                                      if isinstance(n, (ast.Import, ast.ImportFrom))}
    print(f"imports inside functions: {len(inner_imports)}")
    longest = sorted(functions, reverse=True)
    print("functions over 80 lines: " + (", ".join(f"{where} ({n})" for n, where in longest if n > 80) or "none"))
    print("longest 5: " + ", ".join(f"{where} ({n})" for n, where in longest[:5]))
    print("lines per package: " + ", ".join(f"{p} {n}" for p, n in sorted(lines.items(), key=lambda x: -x[1])))


if __name__ == "__main__":
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main(os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else here, here)
