from dataclasses import dataclass

from graphready.compare import compare_flat, flatten


class FakeTensor:
    def __init__(self, values):
        self.values = list(values)


def fake_compare(a, b):
    diffs = [i for i, (x, y) in enumerate(zip(a.values, b.values)) if x != y]
    if len(a.values) != len(b.values):
        return {"equal": False, "mismatched": len(a.values), "total": len(a.values), "detail": "shape differs"}
    if not diffs:
        return {"equal": True, "mismatched": 0, "total": len(a.values)}
    return {
        "equal": False,
        "mismatched": len(diffs),
        "total": len(a.values),
        "max_abs_diff": max(abs(a.values[i] - b.values[i]) for i in diffs),
        "first_index": [diffs[0]],
    }


def is_fake(x):
    return isinstance(x, FakeTensor)


@dataclass
class Out:
    logits: object
    cache: object


def test_flatten_is_stable_and_drops_none():
    t = FakeTensor([1])
    leaves = flatten({"b": (t, None), "a": [t, 3], "c": Out(t, None)})
    assert [p for p, _ in leaves] == ["out['a'][0]", "out['a'][1]", "out['b'][0]", "out['c'].logits"]


def test_equal_outputs():
    a = flatten((FakeTensor([1, 2]), 5))
    b = flatten((FakeTensor([1, 2]), 5))
    result = compare_flat("same", a, b, fake_compare, is_fake)
    assert result["equal"] and result["leaves"] == 2 and result["message"] is None


def test_tensor_mismatch_reports_count_index_and_diff():
    a = flatten([FakeTensor([1, 2, 3])])
    b = flatten([FakeTensor([1, 5, 3])])
    result = compare_flat("replay", a, b, fake_compare, is_fake)
    assert not result["equal"]
    leaf = result["mismatched_leaves"][0]
    assert leaf["mismatched"] == 1 and leaf["first_index"] == [1] and leaf["max_abs_diff"] == 3
    assert result["message"] == "out[0]: 1 of 3 elements differ, first at index [1], max |diff| 3"


def test_structure_and_kind_mismatches():
    structure = compare_flat("s", flatten([FakeTensor([1])]), flatten([FakeTensor([1]), 2]), fake_compare, is_fake)
    assert not structure["equal"] and "structure" in structure["message"]
    kind = compare_flat("k", flatten([FakeTensor([1])]), flatten([1]), fake_compare, is_fake)
    assert not kind["equal"] and "tensor" in kind["message"]
    python = compare_flat("p", flatten([1]), flatten([2]), fake_compare, is_fake)
    assert python["message"] == "out[0]: 1 != 2"
    shape = compare_flat("sh", flatten(FakeTensor([1])), flatten(FakeTensor([1, 2])), fake_compare, is_fake)
    assert shape["message"] == "out: shape differs"
