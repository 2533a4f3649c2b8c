"""The package's shape as a newcomer would measure it: import circles, arrows against the layers of
pyproject.toml's import-linter contract, imports inside functions, the longest functions, lines per package.

    python3 tools/architecture_metrics.py [TREE]      (TREE: a checkout; default this one)
"""

import ast
import os
import sys
from collections import Counter

import grimp

# The layers of the "layers" contract, top to bottom (a module's rank is its top-level name's).
LAYERS = [["testing"], ["kernels"], ["tasks"], ["jit", "hopper"], ["frontend", "compiler", "runtime", "interpreter"],
          ["layouts"], ["arguments", "options"], ["target"], ["signature"], ["dtypes", "errors", "version"]]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def main(tree: str) -> None:
    sys.path.insert(0, tree)
    graph = grimp.build_graph("nvdsl")
    modules = sorted(graph.modules)
    edges = [(m, t) for m in modules for t in graph.find_modules_directly_imported_by(m)]
    cycles = sorted({tuple(sorted((a, b))) for a, b in edges if graph.find_shortest_chain(b, a)})
    sideways_or_up = sorted((a, b) for a, b in edges if top(a) != top(b) and top(a) in RANK and top(b) in RANK
                            and (RANK[top(b)] < RANK[top(a)] or (RANK[top(b)] == RANK[top(a)])))
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
    main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))))
