import pytest

from isthmus.units import limit, rate_bps, size_bytes, time_ps


def test_strings_and_integers_mean_the_same_quantity():
    assert time_ps("1us") == time_ps(1_000_000) == 1_000_000
    assert rate_bps("40G") == 40_000_000_000
    assert size_bytes("300KB") == 300_000
    assert limit("250pkts") == ("packets", 250)
    assert limit("64KiB") == ("bytes", 65_536)


@pytest.mark.parametrize(
    ("convert", "value", "message"),
    [
        (rate_bps, "10", "missing unit"),
        (rate_bps, "10Gps", "unknown unit 'Gps'"),
        (rate_bps, "-5Gbps", "must not be negative"),
        (rate_bps, 0, "greater than zero"),
        (time_ps, 1.5, "give a string with a unit"),
        (time_ps, -3, "must not be negative"),
        (time_ps, "0.1ps", "whole number"),
        (limit, 250, "'250pkts'"),
    ],
)
def test_bad_quantities_name_the_value_and_the_fix(convert, value, message):
    with pytest.raises(ValueError, match=message):
        convert(value)
