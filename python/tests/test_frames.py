import os
import sys

from graphready.frames import (
    FRAMEWORK,
    LIBRARY,
    USER,
    Frame,
    FrameFilter,
    earliest_exception,
    frames_from_dicts,
    has_code_frame,
    live_stack,
    module_root,
    pick_location,
    select_frames,
    traceback_stack,
)


def make_filter(tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    torch_dir = site / "torch"
    stdlib = tmp_path / "stdlib"
    harness = tmp_path / "harness" / "graphready"
    filt = FrameFilter(
        [str(torch_dir), str(site / "typing_extensions.py")],
        [str(stdlib)],
        [str(harness)],
        [str(torch_dir / "_ops.py")],
    )
    return filt, site, stdlib, harness


def test_scopes_of_user_library_framework_and_harness_code(tmp_path):
    filt, site, stdlib, harness = make_filter(tmp_path)
    assert filt.scope(str(tmp_path / "model.py")) == USER
    assert filt.scope(str(site / "transformers" / "models" / "llama" / "modeling_llama.py")) == LIBRARY
    assert filt.scope(str(site / "torch" / "nn" / "modules" / "transformer.py")) == FRAMEWORK
    assert filt.scope(str(stdlib / "contextlib.py")) == FRAMEWORK
    assert filt.scope("<frozen importlib._bootstrap>") == FRAMEWORK
    assert filt.scope("") == FRAMEWORK
    assert filt.scope(str(harness / "watch.py")) == "harness"
    # Third-party packages under the stdlib prefix are library code (DeepGEMM, say).
    assert filt.scope(str(stdlib / "site-packages" / "deep_gemm" / "math.py")) == LIBRARY
    # A sibling folder whose name starts like a library root is not inside it.
    assert filt.scope(str(site / "torchvision_extra" / "x.py")) == LIBRARY
    assert filt.is_instrumented(str(site / "transformers" / "cache_utils.py"))
    assert not filt.is_instrumented(str(site / "torch" / "_tensor.py"))


def test_issue_13_single_file_modules_do_not_make_site_packages_framework_code(tmp_path):
    # typing_extensions is one file in site-packages: its folder is site-packages itself, which
    # once made every transformers frame framework code (stacks held only the step line).
    filt, site, _, _ = make_filter(tmp_path)
    assert filt.scope(str(site / "typing_extensions.py")) == FRAMEWORK
    assert filt.scope(str(site / "transformers" / "cache_utils.py")) == LIBRARY
    assert module_root(str(site / "typing_extensions.py")) == str(site / "typing_extensions.py")
    assert module_root(str(site / "torch" / "__init__.py")) == str(site / "torch")
    # A root that is a whole site-packages folder is refused outright.
    assert FrameFilter([str(site)]).scope(str(site / "transformers" / "x.py")) == LIBRARY


def test_select_frames_keeps_every_frame_between_the_operation_and_the_harness(tmp_path):
    filt, site, _, harness = make_filter(tmp_path)
    raw = [
        (str(harness / "watch.py"), 300, "__torch_dispatch__"),  # the probe's own hook
        (str(site / "torch" / "_ops.py"), 10, "__call__"),  # dispatch plumbing
        (str(site / "torch" / "nn" / "modules" / "transformer.py"), 512, "forward"),
        (str(site / "transformers" / "modeling.py"), 79, "forward"),
        (str(tmp_path / "model.py"), 42, "step"),
        (str(harness / "phases.py"), 90, "phase_capture"),  # the harness's call into the step
        (str(tmp_path / "serve.py"), 7, "main"),  # never reached
    ]
    frames = select_frames(raw, filt)
    assert [(os.path.basename(f.path), f.line, f.scope) for f in frames] == [
        ("transformer.py", 512, FRAMEWORK),
        ("modeling.py", 79, LIBRARY),
        ("model.py", 42, USER),
    ]
    assert frames[0].to_json() == {
        "path": frames[0].path,
        "line": 512,
        "function": "forward",
        "scope": FRAMEWORK,
    }
    assert len(select_frames(raw, filt, limit=2)) == 2


def test_issue_15_the_probe_s_wrappers_around_torch_functions_are_passed_through(tmp_path):
    """A sync inside all_gather_object, or a rank stuck in it, is reached through the probe's
    collective wrapper: the stack goes on to the user's line."""
    filt, site, _, harness = make_filter(tmp_path)
    raw = [
        (str(site / "torch" / "distributed" / "distributed_c10d.py"), 3100, "all_gather_object"),
        (str(harness / "ranks.py"), 230, "_graphready_collective"),
        (str(tmp_path / "tp.py"), 30, "step"),
        (str(harness / "phases.py"), 90, "phase_sync_scan"),
    ]
    frames = select_frames(raw, filt)
    assert [(os.path.basename(f.path), f.line) for f in frames] == [("distributed_c10d.py", 3100), ("tp.py", 30)]
    assert pick_location(frames).line == 30
    # Any other harness frame still ends the stack.
    raw[1] = (str(harness / "ranks.py"), 230, "record")
    assert [f.line for f in select_frames(raw, filt)] == [3100]


def test_location_is_the_users_frame_else_the_innermost_library_frame():
    torch_frame = Frame("/site-packages/torch/nn/modules/transformer.py", 512, "forward", FRAMEWORK)
    library = Frame("/site-packages/transformers/moe.py", 79, "forward", LIBRARY)
    user = Frame("/work/model.py", 42, "step", USER)
    assert pick_location([torch_frame, library, user]) == user
    assert pick_location([torch_frame, library]) == library
    assert pick_location([torch_frame]) is None
    assert pick_location([]) is None
    assert has_code_frame([torch_frame, library]) and not has_code_frame([torch_frame])


def test_memory_snapshot_frames_in_either_order(tmp_path):
    filt, site, _, harness = make_filter(tmp_path)
    inner_first = [
        {"filename": str(site / "transformers" / "cache_utils.py"), "line": 434, "name": "lazy_initialization"},
        {"filename": str(tmp_path / "model.py"), "line": 20, "name": "factory"},
        {"filename": str(harness / "target.py"), "line": 98, "name": "call_factory"},
        {"filename": str(harness / "phases.py"), "line": 70, "name": "phase_setup"},
        {"filename": str(harness / "phases.py"), "line": 400, "name": "run_bucket"},
        {"filename": str(harness / "harness.py"), "line": 120, "name": "main"},
        {"filename": str(harness / "harness.py"), "line": 128, "name": "<module>"},
        {"filename": "<frozen runpy>", "line": 88, "name": "_run_code"},
        {"filename": "<frozen runpy>", "line": 198, "name": "_run_module_as_main"},
    ]
    for frames in (inner_first, list(reversed(inner_first))):
        stack = frames_from_dicts(frames, filt)
        assert [(f.line, f.scope) for f in stack] == [(434, LIBRARY), (20, USER)]
    # Allocated by the factory itself: a short user part and a long harness part.
    stack = frames_from_dicts(inner_first[1:], filt)
    assert [(f.line, f.scope) for f in stack] == [(20, USER)]


def test_paths_are_canonical(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    filt, _, _, _ = make_filter(tmp_path)
    frames = select_frames([(str(link), 1, "f")], filt)
    assert frames[0].path == os.path.realpath(str(real))


def test_live_stack_and_traceback_attribution(tmp_path):
    filt, _, _, _ = make_filter(tmp_path)

    def inner():
        return live_stack(filt)

    stack = inner()
    assert stack[0].function == "inner"
    assert stack[0].path == os.path.realpath(__file__)
    assert stack[1].function == "test_live_stack_and_traceback_attribution"
    try:
        raise_here()
    except ValueError as exc:
        frames = traceback_stack(exc.__traceback__, filt)
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

    assert filt.is_harness(frames_module.__file__)
    assert filt.scope(os.__file__) == FRAMEWORK
    assert filt.scope(__file__) == USER
    assert filt.is_plumbing(sys.modules["warnings"].__file__)
    assert sys.modules["graphready.frames"] is frames_module
