#!/usr/bin/env python3
"""Checks the layer rule of docs/architecture.md at the include level.

The graph is the one CMakeLists.txt declares: `tokenmill_layer(NAME DEPS...)` links NAME
to DEPS, and the cli executable (src/cli/CMakeLists.txt) to the tm_* libraries it names.
A file of src/LAYER may include "OTHER/..." only where OTHER is LAYER itself or reachable
from it through declared edges. A declared edge that no file of the layer includes is
reported too: the layer links what it does not use (what it reaches through the layers
it does use comes with them).

Usage: python3 tools/check_layers.py [--root DIR]     exit status 1 on any finding
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

LAYER_CALL = re.compile(r"^\s*tokenmill_layer\((\w+)((?:\s+\w+)*)\s*\)", re.M)
CLI_LINK = re.compile(r"target_link_libraries\(tokenmill\s+PRIVATE((?:\s+tm_\w+)+)\s*\)")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(\w+)/', re.M)


def declared_graph(root: pathlib.Path) -> dict[str, list[str]]:
    graph = {name: deps.split() for name, deps in LAYER_CALL.findall((root / "CMakeLists.txt").read_text())}
    cli = CLI_LINK.search((root / "src" / "cli" / "CMakeLists.txt").read_text())
    if cli:
        graph["cli"] = [lib.removeprefix("tm_") for lib in cli.group(1).split()]
    return graph


def reachable(graph: dict[str, list[str]], start: str) -> set[str]:
    seen, stack = set(), list(graph.get(start, []))
    while stack:
        layer = stack.pop()
        if layer not in seen:
            seen.add(layer)
            stack.extend(graph.get(layer, []))
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    graph = declared_graph(args.root)
    src = args.root / "src"
    findings: list[str] = []
    used: dict[str, set[str]] = {layer: set() for layer in graph}
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in graph:
            findings.append(f"{path.relative_to(args.root)}: folder src/{layer} is no declared layer")
            continue
        allowed = reachable(graph, layer) | {layer}
        for included in INCLUDE.findall(path.read_text(errors="replace")):
            if not (src / included).is_dir():
                continue  # a system or third-party header in quotes
            used[layer].add(included)
            if included not in allowed:
                findings.append(f"{path.relative_to(args.root)}: includes {included}/, which layer {layer} may not "
                                f"(it links {', '.join(sorted(allowed - {layer})) or 'nothing'})")
    for layer, deps in graph.items():
        for dep in deps:
            if dep not in used[layer]:
                findings.append(f"CMake: layer {layer} declares {dep}, which none of its files includes")
    for f in findings:
        print(f)
    print(f"check_layers: {len(graph)} layers, {sum(len(d) for d in graph.values())} declared edges, "
          f"{len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
