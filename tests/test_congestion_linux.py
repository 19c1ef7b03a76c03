"""Issue 28's Linux algorithms (scenario/congestion_linux.py) as a user meets them: listed by
`fatpipe algorithms` with every parameter and its source, each default's source naming its
Linux file, and bad input refused in one line naming the field. Their behaviour is tested in
the core (crates/fatpipe-core/src/cc/<name>.rs, tests/linux_algorithms.rs)."""

import pytest

from fatpipe.scenario.congestion import CC_ALGORITHMS, PRESETS
from fatpipe.scenario.congestion_linux import LINUX_ALGORITHMS

from test_cli_errors import GOOD, assert_one_line_error, fatpipe, write

NAMES = ("hybla", "illinois", "veno", "yeah", "nv", "cdg", "lp")


def test_each_is_registered_with_a_preset_and_a_linux_source_per_default():
    assert tuple(LINUX_ALGORITHMS) == NAMES
    for name in NAMES:
        assert CC_ALGORITHMS[name] is LINUX_ALGORITHMS[name]
        assert PRESETS[name].algorithm == name
        for f in LINUX_ALGORITHMS[name].table.fields:
            # Every default says where it comes from: the Linux file (or Linux HZ) at least.
            assert "tcp_" + name + ".c" in f.source or "HZ" in f.source, (name, f.key, f.source)


def test_fatpipe_algorithms_lists_them_with_their_parameters():
    proc = fatpipe("algorithms")
    assert proc.returncode == 0, proc.stderr
    for name in NAMES:
        assert f"`{name}`" in proc.stdout or f" {name} " in proc.stdout, name
    for key in ("rtt0", "win_thresh", "theta", "backoff_factor", "reset_period", "threshold_percent", "inference_rtts"):
        assert key in proc.stdout, key


@pytest.mark.parametrize(
    "cc, fragments",
    [
        ('[flows.cc]\nalgorithm = "cdg"\nwindow = 6', ["flows[0].cc.window", "6", "power of two"]),
        ('[flows.cc]\nalgorithm = "nv"\npad_buffer = 20', ["flows[0].cc.pad_buffer", "20", "at most pad"]),
        ('[flows.cc]\nalgorithm = "hybla"\nrtt0 = "0ms"', ["flows[0].cc.rtt0", "must be positive"]),
        ('[flows.cc]\nalgorithm = "illinois"\ntheta = 0', ["flows[0].cc.theta", "0"]),
        ('cc = "lp"\n[flows.tcp]\ntimestamps = false', ["flows[0].tcp.timestamps", "lp", "timestamp option"]),
        ('[flows.cc]\nalgorithm = "lp"\nthreshold_percent = 101', ["flows[0].cc.threshold_percent", "101"]),
    ],
)
def test_bad_parameters_get_one_line(tmp_path, cc, fragments):
    scenario = write(tmp_path, GOOD + cc + "\n")
    assert_one_line_error(fatpipe("validate", scenario), *fragments)
