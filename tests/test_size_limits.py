"""No class in graphview/ over 400 lines, no function over 60: a class or function that grows past
them is one that does more than one job, and is split by what it does."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

CLASS_LINES = 400
FUNCTION_LINES = 60


def _sizes(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines, limit) of every class and function in ``tree``, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
            yield name, node.end_lineno - node.lineno + 1, limit
            yield from _sizes(node, f"{name}.")
        else:
            yield from _sizes(node, prefix)


def test_no_class_over_400_lines_and_no_function_over_60():
    too_long = []
    for path in sorted((ROOT / "graphview").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for name, lines, limit in _sizes(ast.parse(path.read_text(encoding="utf-8"))):
            if lines > limit:
                too_long.append(f"{where}: {name} has {lines} lines (at most {limit})")
    assert too_long == []


def test_the_measure_counts_what_it_should():
    code = ("class A:\n"
            "    def f(self):\n" + "        x = 1\n" * 60 +
            "def g():\n"
            "    def h():\n"
            "        pass\n")
    sizes = {name: (lines, limit) for name, lines, limit in _sizes(ast.parse(code))}
    assert sizes == {"A": (62, CLASS_LINES), "A.f": (61, FUNCTION_LINES), "g": (3, FUNCTION_LINES),
                     "g.h": (2, FUNCTION_LINES)}
