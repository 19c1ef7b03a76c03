"""Value kinds: what a single field may hold (rates, durations, sizes, numbers, names),
parsed from what a person writes into base units."""

from __future__ import annotations

import json
import math
import re
from typing import Any, List, Optional, Sequence

from ..units import format_size, parse_duration, parse_rate, parse_size, U64_MAX, UnitError
from .schema import U32_MAX, Kind, Scalar, _fail, _num, _toml_literal


class Rate(Scalar):
    """A positive rate; parsed to int bits per second."""

    type_doc = "rate (bit/s)"

    def convert(self, value: Any) -> int:
        return parse_rate(value)


class Duration(Scalar):
    """A duration; parsed to int picoseconds. ``positive`` refuses zero."""

    def __init__(self, positive: bool = True, example: str = "40ms") -> None:
        self.positive = positive
        self.example = example
        self.type_doc = "duration > 0" if positive else "duration >= 0"

    def convert(self, value: Any) -> int:
        ps = parse_duration(value)
        if self.positive and ps == 0:
            raise UnitError(value, f'must be positive, such as "{self.example}"')
        return ps


class Size(Scalar):
    """An amount of data; parsed to int bytes within [minimum, maximum]."""

    def __init__(
        self, minimum: int = 0, maximum: int = U64_MAX, example: Any = "64KiB", why_maximum: str = ""
    ) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.example = example
        #: Why nothing larger makes sense, for the message.
        self.why_maximum = why_maximum
        self.type_doc = "size (bytes)" if minimum == 0 else f"size (bytes) >= {minimum}"
        if maximum != U64_MAX:
            self.type_doc = f"size (bytes), {minimum} to {maximum}"

    def convert(self, value: Any) -> int:
        nbytes = parse_size(value)
        if nbytes < self.minimum:
            at_least = (
                "must be positive"
                if self.minimum == 1
                else f"must be at least {self.minimum} bytes"
            )
            raise UnitError(value, f"{at_least}, such as {_toml_literal(self.example)}")
        if nbytes > self.maximum:
            if self.why_maximum:
                raise UnitError(
                    value, f"must be at most {format_size(self.maximum)} ({self.maximum} bytes): {self.why_maximum}"
                )
            raise UnitError(value, f"must be at most {self.maximum} bytes")
        return nbytes


class Integer(Scalar):
    """A whole number (a TOML integer; never a boolean or a float) within [minimum, maximum]."""

    def __init__(self, minimum: int = 0, maximum: int = U32_MAX, example: int = 10) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.example = example
        self.type_doc = f"integer >= {minimum}"

    def convert(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UnitError(
                value, f"expected a whole number >= {self.minimum}, such as {self.example}"
            )
        if value < self.minimum:
            raise UnitError(value, f"must be at least {self.minimum}")
        if value > self.maximum:
            raise UnitError(value, f"must be at most {self.maximum}")
        return value


class Real(Scalar):
    """A finite number (integer or float, never a boolean) in an open or closed interval.

    ``lower``/``upper`` are bounds (None for none); the ``*_open`` flags exclude them.
    """

    def __init__(
        self,
        lower: Optional[float] = None,
        upper: Optional[float] = None,
        lower_open: bool = True,
        upper_open: bool = True,
        example: float = 1.0,
    ) -> None:
        self.lower, self.upper = lower, upper
        self.lower_open, self.upper_open = lower_open, upper_open
        self.example = example
        # "0 < x < 1", "0 < x", "x <= 10": the interval as a person would write it.
        low = f"{_num(lower)} {'<' if lower_open else '<='} " if lower is not None else ""
        high = f" {'<' if upper_open else '<='} {_num(upper)}" if upper is not None else ""
        self.range_doc = f"{low}x{high}"
        self.type_doc = "number" if lower is None and upper is None else f"number, {self.range_doc}"

    def convert(self, value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise UnitError(value, f"expected a number such as {_num(self.example)}")
        x = float(value)
        too_low = self.lower is not None and (
            x <= self.lower if self.lower_open else x < self.lower
        )
        too_high = self.upper is not None and (
            x >= self.upper if self.upper_open else x > self.upper
        )
        if too_low or too_high:
            raise UnitError(value, f"expected a number x with {self.range_doc}")
        return x


class Boolean(Scalar):
    type_doc = "boolean"

    def convert(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise UnitError(value, "expected true or false")
        return value


#: The longest name, in UTF-8 bytes. Names become file and directory names: runs/<name>
#: (with the staging directory's 18 more bytes while it is written), <capture>.pcap,
#: time_sequence_<flow>.svg, all within a file system's 255-byte names (NAME_MAX); and plot
#: labels, which a megabyte of name made take minutes to draw (issue 23).
MAX_NAME_BYTES = 128


class Name(Scalar):
    """A name for a scenario or flow: printable, no path separators (names become file and
    directory names and plot labels), at most :data:`MAX_NAME_BYTES` bytes of UTF-8."""

    type_doc = "string"
    _BAD = re.compile(r"[\x00-\x1f\x7f/\\]")

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise UnitError(value, 'expected a non-empty string, such as "reno"')
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:  # a file name's undecodable bytes (surrogate escapes)
            raise UnitError(value, "a name must be valid UTF-8 (it is written in JSON and plots)") from None
        if size > MAX_NAME_BYTES:
            raise UnitError(
                value, f"a name of {size} bytes is too long: at most {MAX_NAME_BYTES} (names become file names)"
            )
        # "." and ".." would name the parent directory in runs/<name>.
        if self._BAD.search(value) or value != value.strip() or not value.strip("."):
            raise UnitError(
                value,
                "a name may not contain control characters, / or \\, be only dots, "
                "nor start or end with a space",
            )
        return value


class Choice(Scalar):
    """One of a fixed set of strings."""

    def __init__(self, options: Sequence[str]) -> None:
        self.options = tuple(options)
        self.type_doc = "one of " + ", ".join(json.dumps(o) for o in self.options)

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise UnitError(
                value, "expected one of: " + ", ".join(json.dumps(o) for o in self.options)
            )
        return value


class DurationList(Kind):
    """An array of non-negative durations (one per host pair); parsed to int picoseconds."""

    type_doc = "array of durations >= 0"
    _EXAMPLE = '["10ms", "40ms"]'

    def parse(self, value: Any, path: str) -> List[int]:
        if not isinstance(value, (list, tuple)) or not value:
            raise _fail(path, value, f"expected an array of durations, one per pair, such as {self._EXAMPLE}")
        moment = Duration(positive=False, example="10ms")
        return [moment.parse(v, f"{path}[{i}]") for i, v in enumerate(value)]


class SizeList(Kind):
    """A non-empty array of positive sizes; parsed to int bytes."""

    type_doc = "array of sizes (bytes) >= 1"

    def parse(self, value: Any, path: str) -> List[int]:
        if not isinstance(value, (list, tuple)) or not value:
            raise _fail(path, value, 'expected a non-empty array of sizes, such as ["2KB", "422KB"]')
        size = Size(minimum=1, example="10KB")
        return [size.parse(v, f"{path}[{i}]") for i, v in enumerate(value)]
