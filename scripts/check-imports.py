#!/usr/bin/env python3
"""Fails when a Rust file of the workspace imports a file that imports it
back, directly or through others (a cycle of `use` between files, parent
modules included).

Each crate's files are read as text: a path `crate::a::b::Item`,
`super::...` or, in a module file, `child::...` names the file of its
longest module prefix. Test modules (`#[cfg(test)] mod tests`) are left
out: a test may look at its parent. Prints the cycles found and exits 1,
or prints nothing and exits 0.

    python3 scripts/check-imports.py
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATE_SOURCES = [ROOT / "src"] + sorted((ROOT / "crates").glob("*/src"))


def module_path(src: Path, file: Path) -> str:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts in (["lib"], ["main"]):
        return "crate"
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(["crate"] + parts)


def code_of(file: Path) -> str:
    text = file.read_text()
    cut = text.find("#[cfg(test)]\nmod tests")
    text = text if cut < 0 else text[:cut]
    # Comments name files too; only code imports.
    return re.sub(r"//[^\n]*", "", text)


def imports(src: Path) -> dict:
    files = sorted(src.rglob("*.rs"))
    modules = {module_path(src, f): f for f in files}
    # A file's own declared modules live beside it or in its folder.
    edges = {}
    for file in files:
        me = module_path(src, file)
        parent = me.rsplit("::", 1)[0] if me != "crate" else "crate"
        text = code_of(file)
        deps = set()

        def resolve(path):
            for k in range(len(path), 0, -1):
                candidate = "::".join(path[:k])
                if candidate in modules:
                    if candidate not in (me, "crate"):
                        deps.add(modules[candidate])
                    return

        for m in re.finditer(r"\bcrate((?:::\w+)+)", text):
            resolve(["crate"] + m.group(1).split("::")[1:])
        for m in re.finditer(r"(?<!pub\()\bsuper\b((?:::\w+)*)", text):
            resolve(parent.split("::") + [p for p in m.group(1).split("::") if p])
        for candidate, child_file in modules.items():
            if candidate.rsplit("::", 1)[0] == me and candidate != me:
                child = candidate.rsplit("::", 1)[1]
                if re.search(r"(?<![\w:])" + child + r"::", text):
                    deps.add(child_file)
        edges[file] = deps
    return edges


def cycles(edges: dict) -> list:
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return found


def main() -> int:
    failed = False
    for src in CRATE_SOURCES:
        edges = imports(src)
        for component in cycles(edges):
            failed = True
            names = sorted(str(f.relative_to(ROOT)) for f in component)
            print("import cycle: " + " <-> ".join(names))
            for f in sorted(component):
                back = sorted(str(d.relative_to(ROOT)) for d in edges[f] if d in component)
                print(f"  {f.relative_to(ROOT)} imports {', '.join(back)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
