"""ReplayDB keeps a switch's latest snapshots in time order and splits them as Diolkos
does."""

import numpy as np
import pytest

from isthmus.predict import ReplayDB, split_rows


def snapshots(n, ports=3):
    return np.arange(n * ports, dtype=float).reshape(n, ports)


def test_keeps_only_the_latest_capacity_snapshots_oldest_first():
    db = ReplayDB(capacity=5, columns=["p0", "p1", "p2"], switch="leaf0")
    data = snapshots(8)
    for t, row in enumerate(data):
        db.add(10 * t, row)
    assert len(db) == 5 and db.full
    np.testing.assert_array_equal(db.times, [30, 40, 50, 60, 70])
    np.testing.assert_array_equal(db.values, data[3:])
    np.testing.assert_array_equal(db.latest(2), data[6:])
    np.testing.assert_array_equal(db.latest(100), data[3:])  # fewer stored: all of them


def test_extend_matches_add_and_wraps_around():
    one, many = ReplayDB(4, 3), ReplayDB(4, 3)
    data = snapshots(7)
    for t, row in enumerate(data):
        one.add(t, row)
    many.extend(np.arange(3), data[:3])
    many.extend(np.arange(3, 7), data[3:])
    np.testing.assert_array_equal(one.values, many.values)
    np.testing.assert_array_equal(one.times, many.times)


@pytest.mark.parametrize("late", [5.0, 4.0])  # equal to the newest, or older
def test_refuses_a_snapshot_not_after_the_newest(late):
    db = ReplayDB(10, 2, switch="leaf0")
    db.add(4.0, [1, 2])
    db.add(5.0, [3, 4])
    with pytest.raises(
        ValueError,
        match=rf"'leaf0': snapshot time {late:g} is not after .* 5; add snapshots in strictly increasing time order",
    ):
        db.add(late, [5, 6])
    assert len(db) == 2


def test_a_batch_out_of_order_is_refused_whole():
    db = ReplayDB(10, 1)
    with pytest.raises(ValueError, match="snapshot time 2 is not after the previous time 3"):
        db.extend([1, 3, 2], [[1], [2], [3]])
    assert len(db) == 0


def test_split_is_diolkos_first_test_then_train_then_validation():
    db = ReplayDB(100, 2)
    data = snapshots(10, 2)
    db.extend(np.arange(10), data)
    test, train, validation = db.split()
    np.testing.assert_array_equal(test, data[:2])
    np.testing.assert_array_equal(train, data[2:8])
    np.testing.assert_array_equal(validation, data[8:])
    cut = split_rows(14772)
    assert (cut.test.stop, cut.train.stop) == (2954, 11818)  # 20% / 60% / 20%, rounded
    custom = db.split(fractions=(0.1, 0.7, 0.2))
    assert [len(s) for s in custom] == [1, 7, 2]


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda: ReplayDB(0, 2),
            r"capacity must be a whole number ≥ 1, got 0; pass e.g. capacity=",
        ),
        (lambda: ReplayDB(5, []), r"columns is empty; give a count or names"),
        (lambda: ReplayDB(5, 2).add(0, [1, 2, 3]), r"snapshot has 3 variables .* give rows of 2"),
        (
            lambda: ReplayDB(5, 2).add(0, [1, np.nan]),
            r"snapshot: row 0 column 1 is nan; fill or drop",
        ),
        (
            lambda: ReplayDB(5, 2).extend([0, 1], [[1, 2]]),
            r"times has 2 entries but snapshots has 1 rows",
        ),
        (lambda: ReplayDB(5, 2).add(float("nan"), [1, 2]), r"times must be finite"),
        (lambda: ReplayDB(5, 2).split(), r"holds 0 snapshots; a split needs at least 3"),
        (
            lambda: split_rows(10, (0.2, 0.6, 0.3)),
            r"fractions must sum to 1, got .* pass e.g. fractions=",
        ),
        (lambda: split_rows(10, (0.5, 0.5)), r"fractions must be three positive shares"),
        (lambda: split_rows(4, (0.1, 0.8, 0.1)), r"4 rows are too few to split"),
    ],
)
def test_bad_input_names_the_field_and_the_fix(make, message):
    with pytest.raises(ValueError, match=message):
        make()
