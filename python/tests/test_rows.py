"""Padded-bucket row isolation (issue 13): planning and verdicts, without torch."""

from graphready.rows import (
    HOSTILE,
    HUGE,
    MINUS_HUGE,
    NAN,
    NEUTRAL,
    batch_positions,
    describe_rows,
    fill_values,
    ignored_real_rows,
    leaking_rows,
    real_row_counts,
    verdict,
)


def test_real_row_counts_default_to_one_and_half_the_bucket():
    assert real_row_counts(1) == []
    assert real_row_counts(2) == [1]
    assert real_row_counts(8) == [1, 4]
    assert real_row_counts(8, [3, 7, 8, 0, 3]) == [3, 7]
    assert ignored_real_rows(8, [3, 8, 0]) == [0, 8]
    assert ignored_real_rows(8, None) == []


def test_batch_positions_match_the_bucket_in_the_batch_dimension():
    shapes = [(4, 1), None, (1, 4), (4,), (), (2, 4)]
    assert batch_positions(shapes, 0, 4) == [0, 3]
    assert batch_positions(shapes, 1, 4) == [2, 5]
    assert batch_positions(shapes, -1, 4) == [2, 3, 5]


def test_hostile_values_are_nan_and_huge_for_floats_but_valid_for_integers():
    assert fill_values("float", NEUTRAL) == [0]
    assert fill_values("float", HOSTILE) == [NAN, HUGE, MINUS_HUGE]
    assert fill_values("bool", NEUTRAL) == [False] and fill_values("bool", HOSTILE) == [True]
    # Token ids seen: 3..31999. Pad rows take only ids like those, never one out of range.
    assert fill_values("int", HOSTILE, [3, 31999, 7, 0]) == [31999, 3]
    assert fill_values("int", HOSTILE, [5, 5]) == [5]
    assert fill_values("int", HOSTILE, [0, 0]) == [0]
    assert fill_values("int", NEUTRAL, [3, 9]) == [0]


def test_leaking_rows_and_their_description():
    assert leaking_rows([False, True, False, True]) == [1, 3]
    assert describe_rows(list(range(3))) == "0, 1, 2"
    assert describe_rows(list(range(20)), limit=2) == "0, 1, ... (20 rows)"


def test_verdict_passes_only_when_no_case_leaks():
    clean = [{"real_rows": 1, "leaks": []}, {"real_rows": 4, "leaks": []}]
    status, message = verdict(8, clean)
    assert status == "pass"
    assert message == "real rows bit-exact with neutral and hostile pad rows (1, 4 real of 8)"
    leaky = [
        {"real_rows": 1, "leaks": []},
        {"real_rows": 4, "leaks": [
            {"path": "out[1]", "rows": [0, 1, 2, 3], "batched": True},
            {"path": "out[2]", "rows": [], "batched": False},
        ]},
    ]
    status, message = verdict(8, leaky)
    assert status == "fail"
    assert message.startswith("pad rows leak into real rows: out[1] rows 0, 1, 2, 3 change when rows 4..7")
    assert message.endswith("leaking output(s): out[1], out[2]")
    status, message = verdict(8, [{"real_rows": 1, "leaks": [{"path": "out.amax", "rows": [], "batched": False}]}])
    assert "out.amax (no batch dimension: compared whole)" in message
