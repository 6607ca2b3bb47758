"""The integrations of docs/install.md: the GitHub Action (action.yml) and its documented
workflows agree, and the pre-commit hook (.pre-commit-hooks.yaml) is declared as documented."""

import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def yaml_load(text):
    yaml = pytest.importorskip("yaml", reason="PyYAML reads action.yml (scripts/test.sh installs it)")
    return yaml.safe_load(text)


def yaml_blocks(markdown):
    return [yaml_load(block) for block in re.findall(r"```yaml\n(.*?)```", markdown, re.S)]


def action_uses(markdown):
    """The `with:` keys of every step in the file's YAML examples that uses this action."""
    found = []
    for block in yaml_blocks(markdown):
        for job in (block or {}).get("jobs", {}).values():
            for step in job.get("steps", []):
                if step.get("uses", "").startswith("graphready/graphready@"):
                    found.append(set(step.get("with", {})))
    return found


def test_action_is_a_composite_action_whose_inputs_are_all_used():
    action = yaml_load(read("action.yml"))
    assert action["runs"]["using"] == "composite"
    declared = set(action["inputs"])
    text = read("action.yml")
    referenced = set(re.findall(r"\binputs\.([A-Za-z0-9_-]+)", text))
    assert referenced == declared, "every input is used, and only declared inputs are"
    step_ids = {step.get("id") for step in action["runs"]["steps"]}
    for step_id in re.findall(r"\bsteps\.([A-Za-z0-9_-]+)\.outputs", text):
        assert step_id in step_ids
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], "inputs reach the scripts through env, never spliced in"


@pytest.mark.parametrize("doc", ["docs/install.md", "README.md"])
def test_documented_workflows_use_declared_inputs(doc):
    action = yaml_load(read("action.yml"))
    declared = set(action["inputs"])
    required = {name for name, spec in action["inputs"].items() if spec.get("required")}
    uses = action_uses(read(doc))
    assert uses, f"{doc} has a workflow example that uses the action"
    for keys in uses:
        assert keys <= declared, f"{doc} uses undeclared inputs {sorted(keys - declared)}"
        assert required <= keys, f"{doc} leaves out required inputs {sorted(required - keys)}"


def test_every_action_input_and_output_is_documented():
    action = yaml_load(read("action.yml"))
    doc = read("docs/install.md")
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, re.M))
    assert set(action["inputs"]) <= rows
    assert set(action["outputs"]) <= rows


def test_pre_commit_hook_is_declared_as_documented():
    hooks = {hook["id"]: hook for hook in yaml_load(read(".pre-commit-hooks.yaml"))}
    hook = hooks["graphready-check"]
    assert hook["entry"] == "graphready check --force-exclude"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True
    for doc in ["docs/install.md", "README.md"]:
        configs = [b for b in yaml_blocks(read(doc)) if isinstance(b, dict) and "repos" in b]
        assert configs, f"{doc} shows a .pre-commit-config.yaml"
        ids = {h["id"] for config in configs for repo in config["repos"] for h in repo["hooks"]}
        assert ids <= set(hooks), f"{doc} names hooks that do not exist: {ids - set(hooks)}"
