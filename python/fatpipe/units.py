"""Quantities as people write them, converted to the core's base units.

The core counts in integers: bits per second, picoseconds and bytes (see
``docs/core-interface.md``). People write ``"622Mbps"``, ``"44.736 Mb/s"``, ``"67ms"`` or
``"64KiB"``. This module turns the second into the first, exactly: the number is parsed as
a decimal fraction (never through a binary float) and scaled, so ``"44.736 Mb/s"`` is
exactly 44 736 000 bps and ``"0.1s"`` exactly 100 000 000 000 ps. A quantity that is not a
whole number of base units (``"1.5B"``, ``"0.5bps"``, ``"0.1ps"``) is refused, never
rounded: the core counts in integers and rounding would change what was asked for.

Conventions, chosen because each matches how the quantity is usually written:

- Rates are bits per second; k/K, M, G, T are powers of 1000 (link rates are decimal: an
  OC-12 is 622.08 Mb/s, gigabit Ethernet is 10^9 bit/s). A plain number is bits per second.
  Byte rates (``"MB/s"``) are refused rather than guessed, because ``Mb`` and ``MB`` differ
  by a factor of 8 and are easy to confuse.
- Durations need a unit (``"40"`` could be seconds or milliseconds); only 0 may be bare.
- Sizes are bytes; KB, MB, GB, TB are powers of 1000 and KiB, MiB, GiB, TiB powers of 1024
  (IEC 80000-13). A plain number is bytes. Lowercase ``b`` (``"Mb"``) means bits and is
  refused in a size.

Every parser raises :class:`UnitError` (a ``ValueError``) whose message says what was given
and what is allowed, on one line.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from fractions import Fraction
from typing import Any, Dict, Optional, Tuple, Union

__all__ = [
    "UnitError",
    "whole_number",
    "describe_value",
    "parse_rate",
    "parse_duration",
    "parse_size",
    "format_rate",
    "format_duration",
    "format_size",
    "PS_PER_S",
    "U64_MAX",
]

#: Picoseconds in one second: the core's time unit.
PS_PER_S = 10**12
#: The core stores rates, times and byte counts as unsigned 64-bit integers.
U64_MAX = 2**64 - 1

Number = Union[int, float]

RATE_EXAMPLES = 'a rate such as "100Mbps", "44.736 Mb/s" or "1Gbit/s"'
RATE_ALLOWED = (
    f"expected {RATE_EXAMPLES} (k, M, G, T are powers of 1000; a plain number is bits per second)"
)
DURATION_ALLOWED = (
    'expected a duration with a unit, such as "40ms", "1.5s", "250us" or "2min" '
    "(units: ps, ns, us, µs, ms, s, min, h)"
)
SIZE_ALLOWED = (
    'expected a size such as "1448B", "64KiB" or "5.2MB" (KB, MB, GB, TB are powers of '
    "1000; KiB, MiB, GiB, TiB powers of 1024; a plain number is bytes)"
)


class UnitError(ValueError):
    """A quantity that cannot be read.

    ``value`` is what was given, ``allowed`` says what would have been accepted. ``str()``
    is ``<value> is not allowed: <allowed>``; the scenario loader prefixes the field path.
    """

    def __init__(self, value: Any, allowed: str) -> None:
        self.value = value
        self.allowed = allowed
        super().__init__(f"{describe_value(value)} is not allowed: {allowed}")


def describe_value(value: Any, limit: int = 60) -> str:
    """Shows a user's value the way they wrote it, on one line, for error messages.

    Strings are double-quoted as in TOML; booleans are ``true``/``false``; tables and long
    arrays are abbreviated so an error message stays one short line.
    """
    value = plain_scalar(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # json.dumps escapes newlines and quotes, which keeps the message on one line.
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, dict):
        return "a table"
    elif isinstance(value, (list, tuple)):
        try:
            text = json.dumps(list(value), ensure_ascii=False)
        except (TypeError, ValueError):
            text = "an array"
    else:
        # TOML dates and times, or arbitrary Python objects passed in a dict.
        text = repr(value).replace("\n", " ")
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


# A decimal number with optional sign, fraction and exponent, then an optional unit. ASCII
# digits only: Python's \d and Fraction() also read fullwidth and Arabic-Indic digits ("１s"
# would be 1 s), which no one types on purpose.
_QUANTITY = re.compile(
    r"^\s*(?P<number>[+-]?(?:(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]*))?|\.(?P<frac2>[0-9]+))(?:[eE](?P<exp>[+-]?[0-9]+))?)"
    r"\s*(?P<unit>\S.*?)?\s*$"
)
#: The most digits a number may have, and the largest exponent (either sign), checked before
#: exact arithmetic: "1e999999999s" would otherwise compute a billion-digit power of ten.
#: Every quantity fits 64 bits in base units (20 digits) and the smallest unit multiplier
#: is 1 (a picosecond, a byte, a bit per second), so 40 of each leave room for leading and
#: trailing zeros and refuse nothing that could be valid.
MAX_DIGITS = 40
MAX_EXPONENT = 40


def _split(text: str) -> Optional[Tuple[Fraction, str]]:
    """Splits ``"44.736 Mb/s"`` into (Fraction(44736, 1000), "Mb/s"); None if malformed.
    Raises :class:`UnitError` for more digits or a larger exponent than any quantity has."""
    if len(text) > 2 * MAX_DIGITS + 40:  # a unit is a few characters
        raise UnitError(text, f"a quantity is at most {MAX_DIGITS} digits and a unit")
    match = _QUANTITY.match(text)
    if match is None:
        return None
    digits = sum(len(match.group(g) or "") for g in ("int", "frac", "frac2"))
    exponent = int(match.group("exp") or 0)
    if digits > MAX_DIGITS or abs(exponent) > MAX_EXPONENT:
        raise UnitError(
            text, f"a number of at most {MAX_DIGITS} digits with an exponent from -{MAX_EXPONENT} to {MAX_EXPONENT}"
        )
    return Fraction(match.group("number")), (match.group("unit") or "")


def whole_number(text: str) -> int:
    """A whole number written in ASCII digits (an optional sign), for command-line values:
    Python's int() also reads fullwidth and Arabic-Indic digits ("１２"). Raises ValueError
    for anything else, and for more than :data:`MAX_DIGITS` digits."""
    if not re.fullmatch(r"[+-]?[0-9]{1,%d}" % MAX_DIGITS, text.strip()):
        raise ValueError(f"{text!r}: not a whole number in ASCII digits")
    return int(text.strip(), 10)


def plain_scalar(value: Any) -> Any:
    """A numpy scalar (``np.int64(10)``, ``np.float64(0.5)``, ``np.bool_(True)``) as the
    Python number or bool it holds; anything else unchanged. Values computed with numpy are
    accepted wherever a TOML number or boolean is."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def _exact(value: Number) -> Fraction:
    """A plain number as an exact fraction. Floats go through their shortest repr, so a
    TOML ``0.1`` means one tenth rather than the nearest binary float."""
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    return Fraction(repr(float(value)))


def _is_plain_number(value: Any) -> bool:
    # bool is a subclass of int in Python; a TOML `true` is never a quantity.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _whole(value: Any, exact: Fraction, unit: str, example: str) -> int:
    """``exact`` base units, which must be whole: the core counts in integers, and rounding
    would change what the user asked for ("1.5B" would become 2 bytes)."""
    if exact.denominator != 1:
        amount = f"{float(exact):.6g}"
        raise UnitError(
            value, f"that is {amount} {unit}, and the core counts whole {unit}; write a whole number, such as {example}"
        )
    return int(exact)


def _check_fits(value: Any, result: int, what: str) -> int:
    if result > U64_MAX:
        raise UnitError(value, f"{what} is too large (the core counts in 64-bit integers)")
    return result


# --------------------------------------------------------------------------------------
# Rates

_RATE_PREFIXES: Dict[str, int] = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    # Lowercase m, g, t are accepted as mega, giga, tera: nobody simulates millibit links,
    # and "100mbps" is a common spelling.
    "m": 10**6,
    "M": 10**6,
    "g": 10**9,
    "G": 10**9,
    "t": 10**12,
    "T": 10**12,
}
_RATE_SUFFIXES = ("bps", "b/s", "bit/s", "bits/s", "bit/sec", "bits/sec")
_RATE_UNITS: Dict[str, int] = {
    prefix + suffix: factor
    for prefix, factor in _RATE_PREFIXES.items()
    for suffix in _RATE_SUFFIXES
}
# Byte rates are recognized only to explain why they are refused.
_BYTE_RATE = re.compile(r"^[kKmMgGtT]?i?(?:B/s|Bps|bytes?/s)$")


def parse_rate(value: Any) -> int:
    """Parses a link or sending rate into bits per second (a positive int).

    >>> parse_rate("622Mbps"), parse_rate("44.736 Mb/s"), parse_rate(9600)
    (622000000, 44736000, 9600)
    """
    value = plain_scalar(value)
    if _is_plain_number(value):
        if not math.isfinite(value):
            raise UnitError(value, RATE_ALLOWED)
        bps = _exact(value)
    elif isinstance(value, str):
        parts = _split(value)
        if parts is None:
            raise UnitError(value, RATE_ALLOWED)
        number, unit = parts
        if unit == "":
            # "9600" in quotes means the same as the plain number 9600: bits per second.
            unit = "bps"
        if unit not in _RATE_UNITS:
            if _BYTE_RATE.match(unit):
                raise UnitError(
                    value,
                    f'rates are in bits per second and "{unit}" counts bytes; write '
                    'e.g. "Mbps" or "Mb/s" (1 byte = 8 bits)',
                )
            raise UnitError(value, RATE_ALLOWED)
        bps = number * _RATE_UNITS[unit]
    else:
        raise UnitError(value, RATE_ALLOWED)
    if bps <= 0:
        raise UnitError(value, 'a rate must be positive, such as "100Mbps"')
    return _check_fits(value, _whole(value, bps, "bits per second", '"9600bps" or "44.736Mbps"'), "the rate")


# --------------------------------------------------------------------------------------
# Durations

_DURATION_UNITS: Dict[str, int] = {
    "ps": 1,
    "ns": 10**3,
    "us": 10**6,
    "\u00b5s": 10**6,  # MICRO SIGN, what most keyboards type
    "\u03bcs": 10**6,  # GREEK SMALL LETTER MU, what some editors substitute
    "ms": 10**9,
    "s": 10**12,
    "min": 60 * 10**12,
    "h": 3600 * 10**12,
}


def parse_duration(value: Any) -> int:
    """Parses a duration into picoseconds (an int >= 0). A unit is required except for 0.

    >>> parse_duration("67ms"), parse_duration("10 µs"), parse_duration(0)
    (67000000000, 10000000, 0)
    """
    value = plain_scalar(value)
    if _is_plain_number(value):
        if value == 0:
            return 0
        if math.isfinite(value) and value > 0:
            raise UnitError(
                value,
                f'a duration needs a unit, such as "{value}ms" or "{value}s" '
                "(only 0 may be written without one)",
            )
        raise UnitError(value, DURATION_ALLOWED)
    if not isinstance(value, str):
        raise UnitError(value, DURATION_ALLOWED)
    parts = _split(value)
    if parts is None:
        raise UnitError(value, DURATION_ALLOWED)
    number, unit = parts
    if unit == "":
        if number == 0:
            return 0
        raise UnitError(
            value,
            'a duration needs a unit, such as "40ms" or "1.5s" (only 0 may be written without one)',
        )
    if unit not in _DURATION_UNITS:
        raise UnitError(value, DURATION_ALLOWED)
    if number < 0:
        raise UnitError(value, 'a duration must not be negative, such as "40ms"')
    ps = _whole(value, number * _DURATION_UNITS[unit], "picoseconds", '"1.5ns" or "40ms"')
    return _check_fits(value, ps, "the duration")


# --------------------------------------------------------------------------------------
# Sizes

_SIZE_UNITS: Dict[str, int] = {
    "B": 1,
    "byte": 1,
    "bytes": 1,
    "KB": 10**3,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
# Units that count bits (or are ambiguous lowercase spellings): explained, not guessed.
_BIT_SIZE = re.compile(r"^[kKmMgGtT]?(?:i?b|bits?)$")


def parse_size(value: Any) -> int:
    """Parses an amount of data into bytes (an int >= 0).

    >>> parse_size("5.2MB"), parse_size("64KiB"), parse_size("1448 bytes"), parse_size(1448)
    (5200000, 65536, 1448, 1448)
    """
    value = plain_scalar(value)
    if _is_plain_number(value):
        if not math.isfinite(value):
            raise UnitError(value, SIZE_ALLOWED)
        exact = _exact(value)
        if exact.denominator != 1:
            raise UnitError(
                value,
                'a plain number of bytes must be whole; for fractions use a unit, such as "5.2MB"',
            )
        size = exact
    elif isinstance(value, str):
        parts = _split(value)
        if parts is None:
            raise UnitError(value, SIZE_ALLOWED)
        number, unit = parts
        if unit == "":
            unit = "B"
        if unit not in _SIZE_UNITS:
            if _BIT_SIZE.match(unit):
                raise UnitError(
                    value,
                    f'sizes are in bytes and "{unit}" counts bits; write "B", "KB", "MB" '
                    '(powers of 1000) or "KiB", "MiB" (powers of 1024)',
                )
            raise UnitError(value, SIZE_ALLOWED)
        size = number * _SIZE_UNITS[unit]
    else:
        raise UnitError(value, SIZE_ALLOWED)
    if size < 0:
        raise UnitError(value, 'a size must not be negative, such as "64KiB"')
    return _check_fits(value, _whole(value, size, "bytes", '"1448B" or "1.5KB"'), "the size")


# --------------------------------------------------------------------------------------
# Formatting for messages and reports


def _compact(x: float) -> str:
    """Up to 6 significant digits, no trailing zeros: 44.736, 100, 0.5."""
    return f"{x:.6g}"


def format_rate(bps: int) -> str:
    """``100000000`` -> ``"100Mbps"``; the inverse of :func:`parse_rate` for round values."""
    for factor, prefix in ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k")):
        if bps >= factor:
            return f"{_compact(bps / factor)}{prefix}bps"
    return f"{bps}bps"


def format_duration(ps: int) -> str:
    """``40000000000`` -> ``"40ms"``; picks the largest unit that keeps the number >= 1."""
    if ps == 0:
        return "0s"
    for factor, unit in ((PS_PER_S, "s"), (10**9, "ms"), (10**6, "us"), (10**3, "ns")):
        if ps >= factor:
            return f"{_compact(ps / factor)}{unit}"
    return f"{ps}ps"


def format_size(nbytes: int) -> str:
    """``8388608`` -> ``"8MiB"``, ``500000`` -> ``"500KB"``, ``1448`` -> ``"1448 bytes"``.

    Binary units are used only when they are exact, so the text reads back to the same
    number of bytes wherever possible.
    """
    for factor, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    if nbytes >= 10_000:  # below that, the exact byte count reads best ("1448 bytes")
        for factor, unit in ((10**9, "GB"), (10**6, "MB"), (10**3, "KB")):
            if nbytes >= factor:
                return f"{_compact(nbytes / factor)}{unit}"
    return f"{nbytes} bytes"
