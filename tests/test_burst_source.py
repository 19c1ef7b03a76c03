"""The paced (NetSpec burst mode) application of document 000, from scenarios."""

import pytest

from fatpipe.scenario import ScenarioError, load_scenario

PATH = {"bottleneck_rate": "622Mbps", "rtt": "67ms"}


def flow(**keys):
    return load_scenario({"duration": "2s", "topology": PATH, "flows": [keys]})["flows"][0]


def test_burst_keys_make_a_burst_source():
    source = flow(burst_size="64KB", burst_period="10ms", burst_carry_over=True)["source"]
    assert source == {
        "kind": "burst", "start_ps": 0, "stop_ps": None, "burst_bytes": 64_000,
        "period_ps": 10 * 10**9, "carry_over": True,
    }
    assert flow()["source"]["kind"] == "bulk"


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"burst_size": "64KB"}, "flows[0].burst_period: missing; required with burst_size"),
        ({"burst_period": "10ms"}, "flows[0].burst_period: set without burst_size"),
        ({"burst_size": "64KB", "burst_period": "10ms", "bytes": "1MB"}, "flows[0].bytes: not allowed with burst_size"),
        ({"burst_size": "64KB", "burst_period": "0ms"}, "flows[0].burst_period"),
    ],
)
def test_burst_errors(keys, message):
    with pytest.raises(ScenarioError) as err:
        flow(**keys)
    assert str(err.value).startswith(message), str(err.value)


def test_failed_cycles_are_counted_when_the_buffer_is_smaller_than_a_burst():
    pytest.importorskip("fatpipe._core")
    import fatpipe

    def run(snd_buffer):
        return fatpipe.run({
            "duration": "2s", "topology": PATH,
            "flows": [{"burst_size": "64KB", "burst_period": "10ms", "tcp": {"snd_buffer": snd_buffer}}],
            "output": {"plots": False},
        }).summary["flows"][0]

    fits, too_small = run("5209300B"), run("32KB")
    assert fits["bursts"] == too_small["bursts"] == 201
    assert fits["failed_burst_cycles"] == 0
    assert too_small["failed_burst_cycles"] > 150
    # Document 000 eq. 4.3: offered load = burst size x 8 / period = 51.2 Mb/s, and a
    # burst that fits is carried: the transmitted rate matches it within 1%.
    assert fits["offered_load_bps"] == pytest.approx(64_000 * 8 / 0.010)
    assert fits["transmitted_throughput_bps"] == pytest.approx(fits["offered_load_bps"], rel=0.01)
