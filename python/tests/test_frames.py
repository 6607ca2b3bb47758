import os
import sys

from graphready.frames import (
    FrameFilter,
    earliest_exception,
    select_user_frames,
    traceback_user_stack,
    user_stack,
)


def make_filter(tmp_path):
    lib = tmp_path / "site-packages" / "torch"
    stdlib = tmp_path / "stdlib"
    return FrameFilter([str(lib)], [str(stdlib)]), lib, stdlib


def test_library_stdlib_and_synthetic_frames_are_not_user_code(tmp_path):
    filt, lib, stdlib = make_filter(tmp_path)
    assert not filt.is_user(str(lib / "_ops.py"))
    assert not filt.is_user(str(stdlib / "contextlib.py"))
    assert not filt.is_user("<frozen importlib._bootstrap>")
    assert not filt.is_user("")
    assert filt.is_user(str(tmp_path / "model.py"))
    # Third-party packages installed under the stdlib prefix are user code (DeepGEMM, say).
    assert filt.is_user(str(stdlib / "site-packages" / "deep_gemm" / "math.py"))
    # A sibling folder whose name starts like a library root is not inside it.
    assert filt.is_user(str(tmp_path / "site-packages" / "torchvision_extra" / "x.py"))


def test_select_user_frames_is_innermost_first_and_limited(tmp_path):
    filt, lib, _ = make_filter(tmp_path)
    raw = [
        (str(lib / "_tensor.py"), 10, "__bool__"),
        (str(tmp_path / "model.py"), 42, "step"),
        (str(tmp_path / "serve.py"), 7, "main"),
    ]
    frames = select_user_frames(raw, filt)
    assert [(os.path.basename(f.path), f.line, f.function) for f in frames] == [
        ("model.py", 42, "step"),
        ("serve.py", 7, "main"),
    ]
    assert len(select_user_frames(raw, filt, limit=1)) == 1
    assert frames[0].to_json()["line"] == 42


def test_paths_are_canonical(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    filt, _, _ = make_filter(tmp_path)
    frames = select_user_frames([(str(link), 1, "f")], filt)
    assert frames[0].path == os.path.realpath(str(real))


def test_live_stack_and_traceback_attribution(tmp_path):
    filt, _, _ = make_filter(tmp_path)

    def inner():
        return user_stack(filt)

    stack = inner()
    assert stack[0].function == "inner"
    assert stack[0].path == os.path.realpath(__file__)
    try:
        raise_here()
    except ValueError as exc:
        frames = traceback_user_stack(exc.__traceback__, filt)
    assert frames[0].function == "raise_here"
    assert frames[1].function == "test_live_stack_and_traceback_attribution"


def raise_here():
    raise ValueError("boom")


def test_earliest_exception_follows_the_context_chain():
    try:
        try:
            raise AssertionError("the user's assert")
        finally:
            raise RuntimeError("capture_end failed")
    except RuntimeError as exc:
        root = earliest_exception(exc)
    assert isinstance(root, AssertionError)


def test_filter_for_this_process_excludes_the_harness():
    filt = FrameFilter.for_this_process()
    import graphready.frames as frames_module

    assert not filt.is_user(frames_module.__file__)
    assert not filt.is_user(os.__file__)
    assert filt.is_user(__file__)
    assert sys.modules["graphready.frames"] is frames_module
