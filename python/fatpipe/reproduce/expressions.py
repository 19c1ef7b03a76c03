"""Small arithmetic expressions over a sweep's summary table, for the reproductions' numbers,
findings and figures.

A column is written in braces, ``{flows.standard.goodput_bps}``; a name with ``*`` or ``?``
is every column it matches (``{flows.f*.goodput_bps}``), for the functions that take many
(``min``, ``max``, ``sum``, ``mean``, ``count``). Bare names are variables the caller binds
(a finding's measures). Numbers, ``+ - * / **``, comparisons, ``and``, ``or``, ``not``,
``abs``, and ``bytes``/``rate``/``seconds``, which read a parameter written as a size, rate
or duration (``bytes({flows[*].tcp.rcv_buffer})``), complete the language. Nothing else:
the text is parsed, never executed.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..units import UnitError, parse_duration, parse_rate, parse_size

__all__ = ["ExpressionError", "Expression"]


class ExpressionError(ValueError):
    """An expression that cannot be read or evaluated, in one line."""


_COLUMN = re.compile(r"\{([^{}]+)\}")

_BINARY: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_COMPARE: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


def _parse_each(parse: Callable[[Any], int], scale: float) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if hasattr(value, "map"):
            return value.map(lambda v: parse(v) / scale)
        return parse(value) / scale

    return convert


def _many(args: List[Any]) -> List[Any]:
    """The arguments with column patterns (lists) spread out."""
    out: List[Any] = []
    for a in args:
        out.extend(a if isinstance(a, list) else [a])
    return out


def _rowwise(how: str) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        values = _many(list(args))
        if not values:
            raise ExpressionError(f"{how}() of nothing")
        if how == "count" and not any(hasattr(v, "index") for v in values):
            return len(values)
        if any(hasattr(v, "index") for v in values):
            import pandas as pd

            frame = pd.concat([v if hasattr(v, "index") else pd.Series(v, index=_index_of(values)) for v in values],
                              axis=1)
            # count: per row, the columns with a value. An experiment reading several sweeps
            # has every sweep's columns; a four-flow run has none for flows f5 to f8.
            return getattr(frame, how)(axis=1)
        if how == "mean":
            return sum(values) / len(values)
        return {"min": min, "max": max, "sum": sum}[how](values)

    return apply


def _index_of(values: List[Any]) -> Any:
    return next(v.index for v in values if hasattr(v, "index"))


def _abs(x: Any) -> Any:
    return x.abs() if hasattr(x, "abs") else abs(x)


_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "min": _rowwise("min"),
    "max": _rowwise("max"),
    "sum": _rowwise("sum"),
    "mean": _rowwise("mean"),
    "count": _rowwise("count"),
    "abs": _abs,
    "bytes": _parse_each(parse_size, 1),
    "rate": _parse_each(parse_rate, 1),
    "seconds": _parse_each(parse_duration, 10**12),
}


class Expression:
    """A parsed expression; :meth:`evaluate` against a table and variables."""

    def __init__(self, text: str, where: str = "expression") -> None:
        if not isinstance(text, str) or not text.strip():
            raise ExpressionError(f"{where}: expected an expression such as \"{{flows.a.goodput_bps}}\"")
        self.text = text
        self.where = where
        self.columns: List[str] = []

        def column(match: "re.Match[str]") -> str:
            self.columns.append(match.group(1).strip())
            return f"__column{len(self.columns) - 1}"

        source = _COLUMN.sub(column, text)
        try:
            self.tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError:
            raise ExpressionError(f"{where}: {text!r} is not an expression: {source!r} does not parse") from None
        for node in ast.walk(self.tree):
            if not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call,
                                     ast.Name, ast.Constant, ast.Load, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
                                     *_BINARY, *_COMPARE)):
                raise ExpressionError(f"{where}: {text!r}: {type(node).__name__} is not allowed in an expression")
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS):
                name = node.func.id if isinstance(node.func, ast.Name) else "?"
                raise ExpressionError(
                    f"{where}: {text!r}: {name}() is not a function here; functions: {', '.join(_FUNCTIONS)}")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
                raise ExpressionError(f"{where}: {text!r}: only numbers may be written as constants")

    def names(self) -> List[str]:
        """The variables it uses (not columns, not functions)."""
        called = {n.func.id for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        return sorted({n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)
                       and not n.id.startswith("__column") and n.id not in called})

    def evaluate(self, table: Any = None, variables: Optional[Mapping[str, Any]] = None) -> Any:
        """The value: a pandas Series over ``table``'s rows when it uses columns, else a
        number (or a bool for a comparison)."""
        env: Dict[str, Any] = dict(variables or {})
        for i, name in enumerate(self.columns):
            env[f"__column{i}"] = self._column(table, name)
        return self._eval(self.tree.body, env)

    def _column(self, table: Any, name: str) -> Any:
        if table is None:
            raise ExpressionError(f"{self.where}: {self.text!r}: uses the column {{{name}}}, but there is no table here")
        # A sweep's parameter is a column named as its path, pattern and brackets included
        # (flows[f*].tcp.rcv_buffer): the name itself first, then as a pattern.
        if any(c in name for c in "*?") and name not in table.columns:
            matched = [c for c in table.columns if fnmatch.fnmatchcase(str(c), name)]
            if not matched:
                raise ExpressionError(f"{self.where}: {self.text!r}: no column matches {{{name}}}")
            return [table[c] for c in matched]
        if name not in table.columns:
            close = [str(c) for c in table.columns if str(c).split(".")[-1] == name.split(".")[-1]][:4]
            hint = f"; columns like it: {', '.join(close)}" if close else ""
            raise ExpressionError(f"{self.where}: {self.text!r}: no column {{{name}}}{hint}")
        return table[name]

    def _eval(self, node: ast.AST, env: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ExpressionError(f"{self.where}: {self.text!r}: {node.id} is not defined")
            return env[node.id]
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self._eval(node.left, env), self._eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return ~value if hasattr(value, "index") else not value
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, env) for v in node.values]
            result = values[0]
            for v in values[1:]:
                if isinstance(node.op, ast.And):
                    result = (result & v) if hasattr(result, "index") else (result and v)
                else:
                    result = (result | v) if hasattr(result, "index") else (result or v)
            return result
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, env)
            result: Any = True
            for op, right_node in zip(node.ops, node.comparators):
                right = self._eval(right_node, env)
                this = _COMPARE[type(op)](left, right)
                result = this if result is True else ((result & this) if hasattr(this, "index") else (result and this))
                left = right
            return result
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            args = [self._eval(a, env) for a in node.args]
            try:
                return _FUNCTIONS[node.func.id](*args)
            except UnitError as err:
                raise ExpressionError(f"{self.where}: {self.text!r}: {node.func.id}(): {err}") from None
        raise ExpressionError(f"{self.where}: {self.text!r}: cannot evaluate {type(node).__name__}")
