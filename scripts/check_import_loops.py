#!/usr/bin/env python3
"""Finds import loops between the source files of each crate under crates/.

For every crate, the module tree is read from its roots (`src/lib.rs`,
`src/main.rs`, `src/bin/*.rs`) by following `mod` declarations (`foo.rs`,
`foo/mod.rs`, a non-mod-rs parent's `parent/foo.rs`, `#[path]`, inline
`mod x { ... }`). Every `use` statement (grouped `use crate::{a::B, c}`,
multi-line, inside functions too) and every path written in code
(`crate::x::Y`, `super::Y`, `self::x::Y`) is resolved to the file that
defines the item: the deepest module the path names, then, when the item is
not defined in that module's file but imported or re-exported there
(`pub use child::Item`, globs), the file it comes from. That gives one edge
`file -> file` per name.

Not counted: items and modules under `#[cfg(test)]` (test-only code and
`mod tests` files), paths into other crates, and edges from a module to its
own descendants (a parent re-exporting or using a child is the usual
facade; a child importing an item defined in its parent file is an edge).

Prints every strongly connected component of more than one file with the
names that tie it and exits 1; otherwise prints `no import loops in N files`
and exits 0.

    python3 scripts/check_import_loops.py [REPO_ROOT]

REPO_ROOT defaults to the directory above this script's. Python 3 standard
library only.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
RAW_STRING = re.compile(r'b?r(#*)"')
CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ATTRIBUTES = r"((?:#\s*\[[^\]]*\]\s*)*)"
VISIBILITY = r"(?:pub\s*(?:\([^)]*\))?\s*)?"
MOD_DECL = re.compile(ATTRIBUTES + VISIBILITY + r"\bmod\s+(" + IDENT + r")\s*;")
INLINE_MOD = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")
USE = re.compile(r"(?<![\w$])use\s+")
PATH_ATTR = re.compile(r'\bpath\s*=\s*"([^"]*)"')
INLINE_PATH = re.compile(
    r"(?<![\w$:])(?:crate|super|self)(?:\s*::\s*" + IDENT + r")+"
)
TOKEN = re.compile(r"::|[{},*]|" + IDENT + r"|\S")


def is_ident_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def strip(text: str) -> str:
    """`text` with comments and string and char literals blanked (newlines and
    offsets kept)."""
    out = list(text)
    n = len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
            continue
        if c in "rb" and (i == 0 or not is_ident_char(text[i - 1])):
            m = RAW_STRING.match(text, i)
            if m:
                close = '"' + m.group(1)
                end = text.find(close, m.end())
                end = n if end < 0 else end + len(close)
                blank(i, end)
                i = end
                continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
            continue
        if c == "'":
            if text.startswith("\\", i + 1):
                j = text.find("'", i + 3)
                j = n if j < 0 else j
                blank(i, j + 1)
                i = j + 1
                continue
            if i + 2 < n and text[i + 2] == "'" and text[i + 1] != "'":
                blank(i, i + 3)
                i += 3
                continue
        i += 1
    return "".join(out)


def matching(text: str, open_at: int) -> int:
    """The offset just past the brace closing the one at `open_at`."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


def item_end(text: str, start: int) -> int:
    """The end of the item starting at `start`: its `;`, or its body's `}`."""
    depth = 0
    k = start
    while k < len(text):
        c = text[k]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth <= 0:
            return k + 1
        elif c == "{" and depth <= 0:
            return matching(text, k)
        k += 1
    return len(text)


def skip_attributes(text: str, k: int) -> int:
    while True:
        while k < len(text) and text[k].isspace():
            k += 1
        if not text.startswith("#", k):
            return k
        b = text.find("[", k)
        depth = 0
        for j in range(b, len(text)):
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    k = j + 1
                    break
        else:
            return len(text)


class Source:
    """One file: its cleaned text (comments, literals and `#[cfg(test)]`
    items blanked), its inline modules and its `mod` declarations."""

    def __init__(self, path: Path):
        self.path = path
        self.raw = path.read_text(encoding="utf-8")
        clean = strip(self.raw)
        self.test_decls: list[tuple[int, str]] = []
        chars = list(clean)
        for m in CFG_TEST.finditer(clean):
            start = skip_attributes(clean, m.end())
            end = item_end(clean, start)
            decl = MOD_DECL.match(clean, start)
            if decl and decl.end() == end:
                self.test_decls.append((start, decl.group(2)))
            for k in range(m.start(), end):
                if chars[k] != "\n":
                    chars[k] = " "
        self.text = "".join(chars)
        # Inline modules: (start, end, name), outer ones first.
        self.inline = [
            (m.start(), matching(self.text, m.end() - 1), m.group(1))
            for m in INLINE_MOD.finditer(self.text)
        ]

    def scope(self, pos: int) -> tuple[str, ...]:
        """The inline modules around `pos`, outermost first."""
        return tuple(name for a, b, name in self.inline if a <= pos < b)

    def mod_decls(self):
        """(offset, name, #[path] value or None) of each `mod name;`."""
        for m in MOD_DECL.finditer(self.text):
            attrs = self.raw[m.start(1) : m.end(1)]
            p = PATH_ATTR.search(attrs)
            yield m.start(2), m.group(2), p.group(1) if p else None

    def defines(self, name: str) -> bool:
        pattern = (
            r"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+"
            + re.escape(name)
            + r"\b|\bmacro_rules!\s*"
            + re.escape(name)
            + r"\b"
        )
        return re.search(pattern, self.text) is not None


def parse_use_tree(tree: str) -> list[tuple[list[str], str | None]]:
    """The paths a use tree names, each with its alias; a glob ends in `*`."""
    toks = TOKEN.findall(tree)
    out: list[tuple[list[str], str | None]] = []

    def parse(i: int, prefix: list[str]) -> int:
        segs = list(prefix)
        if i < len(toks) and toks[i] == "::":
            segs.append("::")
            i += 1
        while i < len(toks):
            t = toks[i]
            if t == "{":
                i += 1
                while i < len(toks) and toks[i] != "}":
                    i = parse(i, segs)
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                return i + 1
            if t == "*":
                out.append((segs + ["*"], None))
                return i + 1
            if t in (",", "}"):
                return i
            segs.append(t)
            i += 1
            if i < len(toks) and toks[i] == "::":
                i += 1
                continue
            alias = None
            if i + 1 < len(toks) and toks[i] == "as":
                alias = toks[i + 1]
                i += 2
            out.append((segs, alias))
            return i
        return i

    i = 0
    while i < len(toks):
        j = parse(i, [])
        i = max(j, i + 1)
    return out


class Crate:
    """One crate root's module tree."""

    def __init__(self, root: Path, sources: dict[Path, Source]):
        self.root = root
        self.sources = sources
        self.modules: dict[tuple[str, ...], Path] = {}
        self.files: dict[Path, tuple[str, ...]] = {}
        self.test_files: set[Path] = set()
        # (module path, segments, alias, offset) of every use in each file.
        self.uses: dict[Path, list] = {}
        self.walk(root, (), mod_rs=True, test=False)
        self.by_layout: list[Path] = []

    def place_by_layout(self, src: Path) -> None:
        """Files no readable `mod` declares (a macro may declare them) take
        the module path of their place under `src`."""
        paths = sorted(src.rglob("*.rs"), key=lambda p: (len(p.parts), p))
        for path in paths:
            if path in self.files or path in self.test_files:
                continue
            if path in crate_roots(src):
                continue
            parts = list(path.relative_to(src).with_suffix("").parts)
            mod_rs = parts[-1] == "mod"
            if mod_rs:
                parts.pop()
            if tuple(parts[:-1]) not in self.modules:
                continue
            self.by_layout.append(path)
            self.walk(path, tuple(parts), mod_rs, test=False)

    def source(self, path: Path) -> Source:
        if path not in self.sources:
            self.sources[path] = Source(path)
        return self.sources[path]

    def walk(self, path: Path, module: tuple[str, ...], mod_rs: bool, test: bool):
        if test:
            self.test_files.add(path)
        else:
            if path in self.files:
                return
            self.modules[module] = path
            self.files[path] = module
        src = self.source(path)
        for a, b, name in src.inline:
            if not test:
                self.modules[module + src.scope(a) + (name,)] = path
        base = path.parent if mod_rs else path.parent / path.stem
        decls = [(pos, name, p, test) for pos, name, p in src.mod_decls()]
        decls += [(pos, name, None, True) for pos, name in src.test_decls]
        for pos, name, attr, is_test in decls:
            inner = src.scope(pos)
            if attr is not None:
                d = path.parent if not inner else base.joinpath(*inner)
                target = d / attr
                child_mod_rs = target.name == "mod.rs"
            else:
                d = base.joinpath(*inner)
                target = d / f"{name}.rs"
                child_mod_rs = False
                if not target.is_file():
                    target = d / name / "mod.rs"
                    child_mod_rs = True
            if target.is_file():
                self.walk(target, module + inner + (name,), child_mod_rs, test or is_test)
        if not test:
            self.uses[path] = self.read_uses(src, module)

    @staticmethod
    def read_uses(src: Source, module: tuple[str, ...]):
        uses = []
        for m in USE.finditer(src.text):
            end = src.text.find(";", m.end())
            end = len(src.text) if end < 0 else end
            for segs, alias in parse_use_tree(src.text[m.end() : end]):
                uses.append((module + src.scope(m.start()), segs, alias, m.start(), end))
        return uses

    def absolute(self, cur: tuple[str, ...], segs: list[str]):
        """The module a path starts from and the segments after it, or None
        for paths outside this crate."""
        if not segs or segs[0] in ("::", "$"):
            return None
        head = segs[0]
        if head == "crate":
            return (), segs[1:]
        if head == "self":
            return cur, segs[1:]
        if head == "super":
            base, k = cur, 0
            while k < len(segs) and segs[k] == "super":
                base, k = base[:-1], k + 1
            return base, segs[k:]
        if cur + (head,) in self.modules:
            return cur, segs
        return None

    def resolve(self, cur, segs, seen=None):
        """(file, name) a path's item is defined in, or None."""
        start = self.absolute(cur, segs)
        if start is None:
            return None
        module, rest = start
        rest = [s for s in rest if s != "self"]
        while rest and module + (rest[0],) in self.modules:
            module, rest = module + (rest[0],), rest[1:]
        if not rest or rest[0] == "*":
            name = module[-1] if module else "crate"
            return self.modules.get(module), name
        return self.defining(module, rest[0], seen or set()), rest[0]

    def module_named(self, cur, segs):
        """The module a glob's path names, or None."""
        start = self.absolute(cur, segs)
        if start is None:
            return None
        target = start[0] + tuple(s for s in start[1] if s != "self")
        return target if target in self.modules else None

    def bound(self, segs, alias):
        """The name a use path binds."""
        if alias:
            return alias
        if segs[-1] == "self" and len(segs) > 1:
            return segs[-2]
        return segs[-1]

    def has(self, module, name) -> bool:
        """Whether `module` defines or imports `name`."""
        path = self.modules[module]
        if self.sources[path].defines(name):
            return True
        return any(
            scope == module and self.bound(segs, alias) == name
            for scope, segs, alias, _, _ in self.uses.get(path, [])
        )

    def defining(self, module, name, seen):
        """The file defining `name` as seen from `module`, following the
        module's imports and re-exports (None: from another crate)."""
        path = self.modules.get(module)
        if path is None or (module, name) in seen:
            return path
        seen.add((module, name))
        if self.sources[path].defines(name):
            return path
        globs = []
        for scope, segs, alias, _, _ in self.uses.get(path, []):
            if scope != module:
                continue
            bound = self.bound(segs, alias)
            if bound == "*":
                globs.append(segs[:-1])
            elif bound == name:
                found = self.resolve(module, segs, seen)
                return found[0] if found else None
        for segs in globs:
            target = self.module_named(module, segs)
            if target is not None and self.has(target, name):
                return self.defining(target, name, seen)
        return path

    def edges(self):
        """(from file, to file, name) of every import in this tree."""
        for path, module in self.files.items():
            src = self.sources[path]
            text = list(src.text)
            found = []
            for scope, segs, _, start, end in self.uses[path]:
                found.append((scope, segs))
                for k in range(start, end):
                    if text[k] != "\n":
                        text[k] = " "
            code = "".join(text)
            for m in INLINE_PATH.finditer(code):
                before = code[max(0, m.start() - 16) : m.start()].replace(" ", "")
                if before.endswith("(in"):
                    continue  # pub(in crate::x)
                segs = [s.strip() for s in m.group(0).split("::")]
                found.append((module + src.scope(m.start()), segs))
            for scope, segs in found:
                target = self.resolve(scope, segs)
                if target is None or target[0] is None:
                    continue
                to, name = target
                if to == path or to in self.test_files or to not in self.files:
                    continue
                below = self.files[to]
                if below[: len(module)] == module and len(below) > len(module):
                    continue  # a module's use of its own descendant
                yield path, to, name


def crate_roots(src: Path) -> list[Path]:
    roots = [src / "lib.rs", src / "main.rs"]
    roots += sorted((src / "bin").glob("*.rs")) if (src / "bin").is_dir() else []
    roots += sorted((src / "bin").glob("*/main.rs")) if (src / "bin").is_dir() else []
    return [r for r in roots if r.is_file()]


def strongly_connected(nodes, graph):
    """Tarjan's algorithm, iterative."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                out.append(sorted(component))
    return out


def main() -> int:
    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    repo = repo.resolve()
    sources: dict[Path, Source] = {}
    graph: dict[Path, dict[Path, set[str]]] = defaultdict(lambda: defaultdict(set))
    analysed: set[Path] = set()
    tests: set[Path] = set()
    for src in sorted(repo.glob("crates/*/src")):
        for i, root in enumerate(crate_roots(src)):
            crate = Crate(root, sources)
            if i == 0:
                crate.place_by_layout(src)
                if crate.by_layout:
                    print(
                        f"note: {len(crate.by_layout)} files of {src.relative_to(repo)} "
                        "placed by their path (no `mod` declaration read)",
                        file=sys.stderr,
                    )
            analysed.update(crate.files)
            tests.update(crate.test_files)
            for a, b, name in crate.edges():
                graph[a][b].add(name)
        for path in sorted(src.rglob("*.rs")):
            if path not in analysed and path not in tests:
                rel = path.relative_to(repo)
                print(f"warning: {rel} is not reached from a crate root", file=sys.stderr)
    loops = [c for c in strongly_connected(sorted(analysed), graph) if len(c) > 1]
    if not loops:
        print(f"no import loops in {len(analysed)} files")
        return 0
    for component in loops:
        members = set(component)
        print(f"import loop of {len(component)} files:")
        for a in component:
            for b in sorted(graph[a]):
                if b in members:
                    names = ", ".join(sorted(graph[a][b]))
                    print(f"  {a.relative_to(repo)} -> {b.relative_to(repo)}: {names}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
