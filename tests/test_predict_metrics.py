"""The error metrics on hand-computed examples, zero actual values included."""

import math

import numpy as np
import pytest

from isthmus.predict import average_relative_error, mae_pct, mse, relative_errors, sdae_pct

# Relative errors 10/100 = 0.1, 50/200 = 0.25, undefined (actual 0), 0/50 = 0.
ACTUAL = [100.0, 200.0, 0.0, 50.0]
PREDICTED = [110.0, 150.0, 5.0, 50.0]


def test_relative_errors_leave_out_zero_actuals_and_count_them():
    errors, left_out = relative_errors(ACTUAL, PREDICTED)
    np.testing.assert_allclose(errors, [0.1, 0.25, 0.0])
    assert left_out == 1


def test_hand_computed_values():
    assert mae_pct(ACTUAL, PREDICTED) == pytest.approx(100 * 0.35 / 3)
    # population sd of (0.1, 0.25, 0): mean 0.35/3, squared deviations sum 0.031667
    assert sdae_pct(ACTUAL, PREDICTED) == pytest.approx(100 * math.sqrt(0.0316667 / 3), rel=1e-4)
    assert average_relative_error(ACTUAL, PREDICTED) == pytest.approx(0.35 / 3)
    assert mse(ACTUAL, PREDICTED) == pytest.approx((100 + 2500 + 25 + 0) / 4)  # keeps the zero


def test_relative_error_is_symmetric_in_sign_of_the_actual_value():
    assert mae_pct([-100.0], [-90.0]) == pytest.approx(10)


def test_all_zero_actuals_give_nan_relative_metrics_but_a_real_mse():
    assert math.isnan(mae_pct([0, 0], [1, 2]))
    assert math.isnan(sdae_pct([0, 0], [1, 2]))
    assert math.isnan(average_relative_error([0, 0], [1, 2]))
    assert mse([0, 0], [1, 2]) == pytest.approx(2.5)


def test_multi_step_forecasts_are_pooled():
    actual = np.array([[[10.0], [20.0]], [[40.0], [80.0]]])  # origins × steps × targets
    assert mae_pct(actual, actual * 1.1) == pytest.approx(10)
    assert sdae_pct(actual, actual * 1.1) == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize(
    "actual,predicted,message",
    [
        (
            [1, 2],
            [1],
            r"actual has shape \(2,\) but predicted has \(1,\); give one prediction per actual",
        ),
        ([], [], r"actual is empty"),
        ([1, np.nan], [1, 2], r"actual holds NaN .* drop or fill"),
        ([1, 2], [1, np.inf], r"predicted holds NaN or infinite"),
    ],
)
def test_bad_input_names_the_field_and_the_fix(actual, predicted, message):
    with pytest.raises(ValueError, match=message):
        mae_pct(actual, predicted)
