import pytest

from graphready.target import (
    ProbeTarget,
    TargetError,
    call_factory,
    check_target_exists,
    load_factory,
    split_target,
    validate_target,
)


def test_split_target_forms():
    assert split_target("examples/probe/item.py:factory") == ("examples/probe/item.py", "factory")
    assert split_target("pkg.model:Builder.make") == ("pkg.model", "Builder.make")
    assert split_target("C:/x/model.py:f") == ("C:/x/model.py", "f")
    for bad in ("model.py", "model.py:", ":factory", "m.py:not-a-name"):
        with pytest.raises(TargetError):
            split_target(bad)


def test_missing_file_is_a_target_error():
    with pytest.raises(TargetError, match="does not exist"):
        check_target_exists("nowhere/model.py:factory")


def test_load_factory_from_file_and_module(tmp_path, monkeypatch):
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    (tmp_path / "model.py").write_text("import helper\ndef factory(bucket):\n    return helper.VALUE * bucket\n")
    assert load_factory(f"{tmp_path}/model.py:factory")(2) == 14
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "steps.py").write_text("class Builder:\n    @staticmethod\n    def make():\n        return 'made'\n")
    monkeypatch.chdir(tmp_path)
    assert load_factory("pkg.steps:Builder.make")() == "made"
    with pytest.raises(TargetError, match="no attribute"):
        load_factory("pkg.steps:missing")
    with pytest.raises(TargetError, match="cannot be imported"):
        load_factory("pkg.nothing:factory")
    (tmp_path / "notcallable.py").write_text("factory = 3\n")
    with pytest.raises(TargetError, match="not callable"):
        load_factory(f"{tmp_path}/notcallable.py:factory")


def test_call_factory_passes_the_bucket_only_when_asked():
    seen = []

    def with_bucket(bucket):
        seen.append(bucket)
        return ProbeTarget(step=lambda x: x, inputs=[1])

    def without():
        return ProbeTarget(step=lambda: 0, inputs=())

    call_factory(with_bucket, 4)
    assert seen == [4]
    assert call_factory(without, 4).inputs == []


def test_validate_target_accepts_tuples_and_rejects_nonsense():
    target = validate_target((lambda x: x, (1,), lambda: (2,)))
    assert target.inputs == [1] and target.make_inputs() == (2,)
    with pytest.raises(TypeError, match="ProbeTarget"):
        validate_target(42)
    with pytest.raises(TypeError, match="step"):
        validate_target(ProbeTarget(step=3, inputs=[]))
    with pytest.raises(TypeError, match="inputs"):
        validate_target(ProbeTarget(step=len, inputs=5))
