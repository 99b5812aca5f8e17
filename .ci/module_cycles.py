#!/usr/bin/env python3
"""No import circle in any crate: each crate's modules, joined by what their non-test code
names of each other (`use crate::a::B`, `super::b`, `self::c`, a child module by its name,
re-exports followed to the module that defines the item), must form no cycle. A module's
use of its own ancestors (the root's error type, a folder's `mod.rs`) is not counted.

Prints each crate's modules in dependency order (leaves first), or each cycle found and
exits 1. Reads files as text: `#[cfg(test)]` blocks at a file's end, `tests.rs` and
`proptests.rs` are left out. Usage: `.ci/module_cycles.py [CRATES_DIR]`."""

import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def code_of(text):
    """The file without its test module (by convention, `#[cfg(test)]` then `mod`)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]":
            rest = [l.strip() for l in lines[i + 1 : i + 3] if l.strip()]
            if rest and rest[0].startswith(("mod ", "pub mod ", "pub(crate) mod ")):
                if rest[0].rstrip().endswith("{"):
                    return "\n".join(lines[:i])
    return "\n".join(lines)


def strip_comments(text):
    """The code without comments, and every string and character literal emptied."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == "r" and re.match(r'r#*"', text[i:]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif ch == "'" and re.match(r"'(\\[^']+|[^'\\])'", text[i:]):
            out.append("' '")
            i += len(re.match(r"'(\\[^']+|[^'\\])'", text[i:]).group(0))
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d as e}}` -> [a::b, a::c::d]."""
    tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, text):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in filter(None, parts):
            if "{" in part:
                head, _, inner = part.partition("{")
                walk(prefix + head, inner[: inner.rindex("}")])
            else:
                out.append(prefix + part)

    walk("", tree)
    return out


def crate_modules(src):
    """Module path ('' for the root, 'a::b') -> file."""
    modules = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs") or name in ("tests.rs", "proptests.rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            modules["::".join(rel)] = os.path.join(root, name)
    return modules


def resolve(segments, modules, exports, seen=None):
    """The module a path (segments from the crate root) names: its longest module
    prefix, or through a `pub use` of that module the module that defines the item."""
    seen = seen or set()
    for n in range(len(segments), -1, -1):
        module = "::".join(segments[:n])
        if module in modules:
            rest = segments[n:]
            if rest and (module, rest[0]) in exports and (module, rest[0]) not in seen:
                seen.add((module, rest[0]))
                return resolve(exports[(module, rest[0])] + rest[1:], modules, exports, seen)
            return module
    return None


def absolute(module, path, modules):
    """A path as written in `module` -> segments from the crate root, or None."""
    parts = path.split("::")
    own = module.split("::") if module else []
    if parts[0] == "crate":
        return parts[1:]
    if parts[0] == "self":
        return own + parts[1:]
    if parts[0] == "super":
        base = own
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        return base + parts
    child = "::".join(own + [parts[0]])
    if child in modules:
        return own + parts
    return None


def check(crate, src):
    modules = crate_modules(src)
    texts = {m: strip_comments(code_of(open(f, encoding="utf-8").read())) for m, f in modules.items()}
    uses = {}
    exports = {}
    for module, text in texts.items():
        paths = []
        for match in USE.finditer(text):
            public = match.group(0).lstrip().startswith("pub")
            for path in expand(match.group(1)):
                segments = absolute(module, path, modules)
                if segments is None:
                    continue
                paths.append(segments)
                if public and segments:
                    name = path.split("::")[-1]
                    if name not in ("*", "self"):
                        exports[(module, name)] = segments
        body = USE.sub("", text)
        for match in PATH.finditer(body):
            segments = absolute(module, match.group(1) + match.group(2), modules)
            if segments is not None:
                paths.append(segments)
        uses[module] = paths
    edges = {m: set() for m in modules}
    for module, paths in uses.items():
        for segments in paths:
            target = resolve(segments, modules, exports)
            # A module's own items, and an ancestor's own (the root's error type, a
            # folder's shared types in its mod.rs): not an arrow between two modules.
            if target is None or target == module or target == "":
                continue
            if module.startswith(target + "::"):
                continue
            edges[module].add(target)
    return modules, edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    crates = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "crates")
    failed = False
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        if not os.path.isdir(src):
            continue
        _, edges = check(crate, src)
        found = cycles(edges)
        for component in found:
            failed = True
            arrows = [f"{a} -> {b}" for a in component for b in sorted(edges[a]) if b in component]
            print(f"{crate}: import circle among {', '.join(component)}: {'; '.join(arrows)}")
        if not found:
            count = sum(len(e) for e in edges.values())
            print(f"{crate}: {len(edges)} modules, {count} arrows, no circle")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
