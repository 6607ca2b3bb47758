import importlib.util
import io
import json

import pytest

from graphready import harness
from graphready.protocol import PROTOCOL_VERSION

HAS_TORCH = importlib.util.find_spec("torch") is not None


def run(argv):
    stream = io.StringIO()
    code = harness.main(argv, stream)
    return code, [json.loads(line) for line in stream.getvalue().splitlines()]


def test_bad_arguments_and_targets_are_environment_errors(tmp_path):
    code, lines = run(["--bucket", "1"])
    assert code == harness.ENV_ERROR_EXIT
    assert lines[0]["type"] == "hello" and lines[0]["protocol"] == PROTOCOL_VERSION
    assert lines[-1]["kind"] == "bad_args"
    code, lines = run(["--target", "x.py:f", "--bucket", "0"])
    assert lines[-1]["kind"] == "bad_args"
    code, lines = run(["--target", str(tmp_path / "missing.py") + ":f", "--bucket", "1"])
    assert lines[-1] == {"type": "env_error", "kind": "bad_target", "message": lines[-1]["message"]}
    assert "does not exist" in lines[-1]["message"]


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here; the no-torch path is tested where it is not")
def test_missing_torch_is_reported_clearly(tmp_path):
    target = tmp_path / "model.py"
    target.write_text("def factory(bucket):\n    pass\n")
    code, lines = run(["--target", f"{target}:factory", "--bucket", "1"])
    assert code == harness.ENV_ERROR_EXIT
    assert lines[-1]["kind"] == "no_torch"
    assert "PyTorch cannot be imported" in lines[-1]["message"]


def test_assert_capturable_without_torch_or_cuda_says_why():
    import graphready

    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        pytest.skip("a CUDA device is present")
    with pytest.raises(graphready.ProbeEnvironmentError):
        graphready.assert_capturable(lambda bucket: None, buckets=(1,))
