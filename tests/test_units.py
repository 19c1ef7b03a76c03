"""Quantities as people write them -> base units (bps, picoseconds, bytes)."""

import math

import pytest

from fatpipe.units import (
    UnitError,
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
)


@pytest.mark.parametrize(
    "text, bps",
    [
        ("622Mbps", 622_000_000),
        ("1Gbps", 1_000_000_000),
        ("44.736 Mb/s", 44_736_000),  # DS3, exactly: no binary-float rounding
        ("100 Mbit/s", 100_000_000),
        ("10Gb/s", 10_000_000_000),
        ("9600bps", 9600),
        ("64kbps", 64_000),
        ("64Kbps", 64_000),
        ("1.5Tbps", 1_500_000_000_000),
        ("100mbps", 100_000_000),  # lowercase m is mega for rates: nobody means millibits
        ("2.5 Gbits/s", 2_500_000_000),
        ("622.08Mbps", 622_080_000),
        ("9600", 9600),  # a unitless string is bits per second, like a plain number
        (9600, 9600),
        (1e9, 1_000_000_000),  # TOML writes 1e9 as a float
        ("0.4bps ", None),  # rounds to 0: refused below
    ],
)
def test_rates(text, bps):
    if bps is None:
        with pytest.raises(UnitError):
            parse_rate(text)
    else:
        assert parse_rate(text) == bps
        assert isinstance(parse_rate(text), int)


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("-5Mbps", "a rate must be positive"),
        ("0Mbps", "a rate must be positive"),
        (0, "a rate must be positive"),
        (-1, "a rate must be positive"),
        ("fast", 'expected a rate such as "100Mbps"'),
        ("100 MB/s", "counts bytes"),  # bytes per second: refused, not guessed
        ("100MBps", "counts bytes"),
        ("100 Mhz", "expected a rate"),
        (True, "expected a rate"),
        (float("nan"), "expected a rate"),
        (float("inf"), "expected a rate"),
        ("nan Mbps", "expected a rate"),
        (None, "expected a rate"),
        ([100], "expected a rate"),
        ("1e30Tbps", "too large"),
    ],
)
def test_bad_rates(value, fragment):
    with pytest.raises(UnitError) as info:
        parse_rate(value)
    message = str(info.value)
    assert fragment in message
    assert "is not allowed:" in message
    assert "\n" not in message
    assert info.value.value is value or (isinstance(value, float) and math.isnan(value))


@pytest.mark.parametrize(
    "text, ps",
    [
        ("67ms", 67 * 10**9),
        ("1.5s", 1_500_000_000_000),
        ("250us", 250 * 10**6),
        ("10 µs", 10 * 10**6),  # MICRO SIGN
        ("10 μs", 10 * 10**6),  # GREEK SMALL LETTER MU
        ("100ns", 100_000),
        ("2min", 120 * 10**12),
        ("1h", 3600 * 10**12),
        ("800ps", 800),
        ("0.1s", 10**11),  # exact decimal, not 0.1000000000000000055...
        ("1e-3s", 10**9),
        (0, 0),
        (0.0, 0),
        ("0", 0),
    ],
)
def test_durations(text, ps):
    assert parse_duration(text) == ps


@pytest.mark.parametrize(
    "value, fragment",
    [
        (40, "needs a unit"),
        (1.5, "needs a unit"),
        ("40", "needs a unit"),
        ("-4ms", "must not be negative"),
        ("4 m", "expected a duration"),
        ("4 sec", "expected a duration"),
        ("soon", "expected a duration"),
        (True, "expected a duration"),
        (float("nan"), "expected a duration"),
        (-5, "expected a duration"),
    ],
)
def test_bad_durations(value, fragment):
    with pytest.raises(UnitError) as info:
        parse_duration(value)
    assert fragment in str(info.value)
    assert "units: ps, ns, us" in str(info.value) or "needs a unit" in str(info.value) or "negative" in str(info.value)


@pytest.mark.parametrize(
    "text, nbytes",
    [
        ("5.2MB", 5_200_000),
        ("64KiB", 65_536),
        ("8MiB", 8 * 2**20),
        ("1GiB", 2**30),
        ("1448B", 1448),
        ("1448 bytes", 1448),
        ("1 byte", 1),
        ("64kB", 64_000),
        ("64KB", 64_000),
        ("1GB", 10**9),
        ("1448", 1448),
        (1448, 1448),
        (5.2e6, 5_200_000),  # a whole float is fine
        (0, 0),
    ],
)
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("-1KB", "must not be negative"),
        (-1, "must not be negative"),
        ("64Kb", "counts bits"),
        ("5 Mb", "counts bits"),
        ("5 mb", "counts bits"),
        ("5 kib", "counts bits"),
        ("5 parsecs", "expected a size"),
        (1448.5, "must be whole"),
        (True, "expected a size"),
        (float("nan"), "expected a size"),
    ],
)
def test_bad_sizes(value, fragment):
    with pytest.raises(UnitError) as info:
        parse_size(value)
    assert fragment in str(info.value)


def test_error_message_shows_value_as_written():
    with pytest.raises(UnitError) as info:
        parse_rate("-5Mbps")
    assert str(info.value) == '"-5Mbps" is not allowed: a rate must be positive, such as "100Mbps"'
    assert info.value.allowed == 'a rate must be positive, such as "100Mbps"'


def test_unit_error_is_value_error():
    with pytest.raises(ValueError):
        parse_size("lots")


@pytest.mark.parametrize(
    "func, value, text",
    [
        (format_rate, 100_000_000, "100Mbps"),
        (format_rate, 44_736_000, "44.736Mbps"),
        (format_rate, 9600, "9.6kbps"),
        (format_rate, 10**10, "10Gbps"),
        (format_duration, 40 * 10**9, "40ms"),
        (format_duration, 0, "0s"),
        (format_duration, 120 * 10**12, "120s"),
        (format_duration, 800, "800ps"),
        (format_size, 8 * 2**20, "8MiB"),
        (format_size, 5_200_000, "5.2MB"),
        (format_size, 1448, "1448 bytes"),
        (format_size, 500_000, "500KB"),
    ],
)
def test_format(func, value, text):
    assert func(value) == text


@pytest.mark.parametrize("value", [100_000_000, 44_736_000, 10**10, 9600])
def test_format_rate_round_trips(value):
    assert parse_rate(format_rate(value)) == value


@pytest.mark.parametrize("value", [40 * 10**9, 1_500_000_000_000, 250 * 10**6, 800])
def test_format_duration_round_trips(value):
    assert parse_duration(format_duration(value)) == value


@pytest.mark.parametrize(
    "parse, text, message",
    [
        # Fractions of a base unit were rounded ("1.5B" to 2 bytes, "0.5bps" to 1 bps, which
        # made a link 61,520 % utilized); the core counts whole units, so they are refused.
        (parse_size, "1.5B", '"1.5B" is not allowed: that is 1.5 bytes, and the core counts whole bytes'),
        (parse_size, "0.1KiB", "that is 102.4 bytes"),
        (parse_rate, "0.5bps", '"0.5bps" is not allowed: that is 0.5 bits per second, and the core counts whole'),
        (parse_rate, "1.0000001kbps", "that is 1000 bits per second"),
        (parse_duration, "0.5ps", "that is 0.5 picoseconds"),
    ],
)
def test_fractions_of_a_base_unit_are_refused_not_rounded(parse, text, message):
    with pytest.raises(UnitError) as err:
        parse(text)
    assert message in str(err.value), str(err.value)


def test_numpy_scalars_are_numbers():
    np = pytest.importorskip("numpy")
    assert parse_rate(np.int64(10_000_000)) == 10_000_000
    assert parse_size(np.int32(1448)) == 1448
    assert parse_duration(np.float64(0.0)) == 0
    assert parse_rate(np.float64(9600.0)) == 9600
    with pytest.raises(UnitError, match="^true is not allowed"):
        parse_rate(np.bool_(True))
