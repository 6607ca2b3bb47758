#!/usr/bin/env python3
"""Score graphready against the real-code evaluation set (eval/cases.toml).

A development script, not part of CI: it downloads released wheels of vLLM,
SGLang, transformers and DeepGEMM (PyPI `sgl-deep-gemm`) with
`pip download --no-deps` into a corpus folder outside the repository, one tree
per (package, version), through `scripts/real-world.sh layout`.

Then, for every tree it needs:
  1. checks every case: the file exists and its `expression` text appears on
     its `line` (a case that no longer matches is an error, never a silent miss);
  2. runs graphready from the tree root, as a user would:
       project level:  graphready check --output-format json PKG
       rule level:     graphready check --output-format json --scope all --select ALL PKG
       reach:          graphready check --show-scope --output-format json PKG
     (exit 0 and 1 are normal; anything else is an error);
  3. scores, per tree and overall:
       rule recall      hazards with a rule-level finding starting in [line, end_line]
       rule false flags lookalikes with such a finding (advice of severity "info" aside)
       proj recall      hazards with a project-level finding
       proj false flags lookalikes and cold locations with a project-level finding
       code mismatches  findings on hazard lines whose code is not in the case's `rules`
       reach recall     hazards whose enclosing function the default scope reaches
                        (capture or stall), from the JSON scope report
       cold reached     cold locations whose enclosing function is reached
     and lists every miss and false flag as path:line expression.
     If the binary has no JSON scope report (older builds print text and ignore
     the format), reach is reported as "n/a (binary has no JSON scope)".

Exit status: 0 when every case verified and every graphready run finished with
exit code 0 or 1 (whatever the scores); 1 when a case does not match its
release or a run failed; 2 on a usage error. Raw reports are kept under
CORPUS/eval-reports/.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import subprocess
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    try:
        import tomli as tomllib  # type: ignore[no-redef]
    except ModuleNotFoundError:
        sys.exit("error: needs Python >= 3.11 (tomllib) or the tomli package")

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

# package (as written in cases.toml) -> (PyPI name, package folder inside the wheel)
PACKAGES = {
    "vllm": ("vllm", "vllm"),
    "sglang": ("sglang", "sglang"),
    "transformers": ("transformers", "transformers"),
    "deep_gemm": ("sgl-deep-gemm", "deep_gemm"),
}
VERDICTS = ("hazard", "lookalike", "cold")
REQUIRED = ("package", "version", "path", "line", "expression", "verdict", "rules", "source", "reason", "held_out")
OPTIONAL = ("end_line",)
NO_JSON_SCOPE = "n/a (binary has no JSON scope)"


# ----------------------------------------------------------------- cases

def load_cases(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    cases = doc.get("case")
    if not isinstance(cases, list) or not cases:
        raise ValueError(f"{path}: no [[case]] entries")
    errors = []
    seen = set()
    for i, c in enumerate(cases, 1):
        where = f"case #{i} ({c.get('package')} {c.get('version')} {c.get('path')}:{c.get('line')})"
        for k in REQUIRED:
            if k not in c:
                errors.append(f"{where}: missing field `{k}`")
        for k in c:
            if k not in REQUIRED and k not in OPTIONAL:
                errors.append(f"{where}: unknown field `{k}`")
        if c.get("package") not in PACKAGES:
            errors.append(f"{where}: package must be one of {', '.join(PACKAGES)}")
        if c.get("verdict") not in VERDICTS:
            errors.append(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
        if not isinstance(c.get("line"), int) or c.get("line", 0) < 1:
            errors.append(f"{where}: line must be a positive integer")
        end = c.get("end_line", c.get("line"))
        if not isinstance(end, int) or (isinstance(c.get("line"), int) and end < c["line"]):
            errors.append(f"{where}: end_line must be an integer >= line")
        if not isinstance(c.get("rules", []), list):
            errors.append(f"{where}: rules must be a list")
        if not isinstance(c.get("held_out"), bool):
            errors.append(f"{where}: held_out must be true or false")
        if not str(c.get("expression", "")).strip():
            errors.append(f"{where}: empty expression")
        key = (c.get("package"), c.get("version"), c.get("path"), c.get("line"))
        if key in seen:
            errors.append(f"{where}: duplicate location")
        seen.add(key)
        c["end_line"] = end
        c["index"] = i
    if errors:
        raise ValueError("\n".join(errors))
    return cases


def tree_name(c: dict) -> str:
    return f"{PACKAGES[c['package']][0]}-{c['version']}"


class FunctionIndex:
    """Enclosing function qualified names ("Class.method", "outer.inner") of a file's lines."""

    def __init__(self, source: str):
        self.spans: list[tuple[int, int, str]] = []
        self._walk(ast.parse(source), "")

    def _walk(self, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + child.name
                self.spans.append((child.lineno, child.end_lineno or child.lineno, q))
                self._walk(child, q + ".")
            elif isinstance(child, ast.ClassDef):
                self._walk(child, prefix + child.name + ".")
            else:
                self._walk(child, prefix)

    def function_at(self, line: int) -> tuple[str, int | None]:
        best = None
        for start, end, q in self.spans:
            if start <= line <= end and (best is None or start >= best[0]):
                best = (start, end, q)
        return (best[2], best[0]) if best else ("<module>", None)


def verify(cases: list[dict], corpus: str) -> list[str]:
    """Check each case against its release; fill c['function'] / c['def_line']. Returns errors."""
    errors = []
    files: dict[str, tuple[list[str], FunctionIndex | None]] = {}
    for c in cases:
        full = os.path.join(corpus, tree_name(c), c["path"])
        where = f"{c['package']} {c['version']} {c['path']}:{c['line']}"
        if full not in files:
            try:
                with open(full, encoding="utf-8") as fh:
                    src = fh.read()
            except OSError as e:
                files[full] = ([], None)
                errors.append(f"{where}: cannot read {full}: {e.strerror}")
                continue
            try:
                index = FunctionIndex(src)
            except SyntaxError as e:
                index = None
                errors.append(f"{where}: {full} does not parse: {e}")
            files[full] = (src.splitlines(), index)
        lines, index = files[full]
        if not lines:
            c["verified"] = False
            continue
        if c["end_line"] > len(lines):
            errors.append(f"{where}: the file has only {len(lines)} lines")
            c["verified"] = False
            continue
        text = lines[c["line"] - 1]
        if c["expression"] not in text:
            errors.append(f"{where}: expression {c['expression']!r} not on the line, which reads {text.strip()!r}")
            c["verified"] = False
            continue
        c["verified"] = True
        c["function"], c["def_line"] = index.function_at(c["line"]) if index else ("<module>", None)
    return errors


# ----------------------------------------------------------------- running graphready

def run_graphready(binary: str, tree: str, pkg_dir: str, extra: list[str], out: str, timeout: int):
    cmd = [binary, "check", "--output-format", "json", *extra, pkg_dir]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=tree, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout}s: {' '.join(cmd)}", 0.0
    wall = time.monotonic() - t0
    with open(out, "wb") as fh:
        fh.write(proc.stdout)
    with open(out + ".stderr", "wb") as fh:
        fh.write(proc.stderr)
    return proc, None, wall


def parse_findings(data: bytes) -> list[dict]:
    doc = json.loads(data)
    findings = doc.get("findings") if isinstance(doc, dict) else doc
    if not isinstance(findings, list):
        raise ValueError("no findings array in the report")
    out = []
    for f in findings:
        if not isinstance(f, dict):
            continue
        span = f.get("span") or {}
        start = (span.get("start") or {}).get("line", f.get("line"))
        if not isinstance(start, int) or not isinstance(f.get("path"), str):
            continue
        out.append({
            "path": os.path.normpath(f["path"]),
            "line": start,
            "code": str(f.get("code", "?")),
            "function": f.get("function"),
            "reach": f.get("reach"),
            "severity": f.get("severity"),
        })
    return out


def parse_scope(proc) -> dict | None:
    """The JSON scope report: {"reached": [{"path", "function", "line", "reach"}, ...]}.

    Returns {(path, function): reach} or None when the binary has no JSON scope
    (it rejects the flags, prints text, or prints JSON without a "reached" array)."""
    if proc is None or proc.returncode not in (0, 1):
        return None
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("reached"), list):
        return None
    reached = {}
    for r in doc["reached"]:
        if not isinstance(r, dict):
            continue
        path, function = r.get("path"), r.get("function")
        if not isinstance(path, str) or not isinstance(function, str):
            continue
        reach = r.get("reach") if r.get("reach") in ("capture", "stall") else "capture"
        key = (os.path.normpath(path), function)
        # capture wins over stall when a function is listed twice
        if reached.get(key) != "capture":
            reached[key] = reach
    return reached


def flags(found: list[dict]) -> list[dict]:
    """The findings that claim a hazard: advice (severity "info", the opt-in per-step
    allocation rule) on a look-alike's allocation is not a false claim of the hazard it fixes."""
    return [f for f in found if f.get("severity") != "info"]


def hits(findings_by_path: dict, c: dict) -> list[dict]:
    return [f for f in findings_by_path.get(os.path.normpath(c["path"]), ())
            if c["line"] <= f["line"] <= c["end_line"]]


# ----------------------------------------------------------------- scoring and report

def frac(n: int, d: int) -> str:
    return f"{n}/{d} {100.0 * n / d:5.1f}%" if d else f"{n}/{d}    -  "


class Score:
    def __init__(self):
        self.n = collections.Counter()      # verdict -> count
        self.rule_hit = 0                   # hazards flagged at rule level
        self.rule_ff = 0                    # lookalikes flagged at rule level
        self.proj_hit = 0                   # hazards flagged at project level
        self.proj_ff = 0                    # lookalike + cold flagged at project level
        self.code_mismatch = 0              # rule-level findings on hazard lines with an unexpected code
        self.reach_known = True
        self.haz_reached = 0
        self.cold_reached = 0

    def add(self, c: dict) -> None:
        v = c["verdict"]
        self.n[v] += 1
        if v == "hazard":
            self.rule_hit += bool(c["rule_hits"])
            self.proj_hit += bool(c["proj_hits"])
            self.code_mismatch += len(c["mismatched"])
        elif v == "lookalike":
            self.rule_ff += bool(flags(c["rule_hits"]))
            self.proj_ff += bool(flags(c["proj_hits"]))
        else:
            self.proj_ff += bool(flags(c["proj_hits"]))
        if c["reached"] is None:
            self.reach_known = False
        elif c["reached"]:
            if v == "hazard":
                self.haz_reached += 1
            elif v == "cold":
                self.cold_reached += 1

    def row(self, label: str, reach_available: bool) -> str:
        h, l, k = self.n["hazard"], self.n["lookalike"], self.n["cold"]
        if reach_available and self.reach_known:
            reach = f"{frac(self.haz_reached, h):>15}  {frac(self.cold_reached, k):>15}"
        else:
            reach = f"{'n/a':>15}  {'n/a':>15}"
        return (f"{label:24}{h:>4}{l:>5}{k:>5}  {frac(self.rule_hit, h):>15}  {frac(self.rule_ff, l):>15}"
                f"  {frac(self.proj_hit, h):>15}  {frac(self.proj_ff, l + k):>15}  {reach}  {self.code_mismatch:>5}")

    def as_dict(self) -> dict:
        h, l, k = self.n["hazard"], self.n["lookalike"], self.n["cold"]
        d = {"hazard": h, "lookalike": l, "cold": k,
             "rule_recall": [self.rule_hit, h], "rule_false_flags": [self.rule_ff, l],
             "project_recall": [self.proj_hit, h], "project_false_flags": [self.proj_ff, l + k],
             "code_mismatches": self.code_mismatch}
        if self.reach_known:
            d["reach_recall"] = [self.haz_reached, h]
            d["cold_reached"] = [self.cold_reached, k]
        return d


HEADER = (f"{'tree':24}{'haz':>4}{'look':>5}{'cold':>5}  {'rule recall':>15}  {'rule false fl.':>15}"
          f"  {'proj recall':>15}  {'proj false fl.':>15}  {'reach recall':>15}  {'cold reached':>15}  {'code≠':>5}")


def describe(c: dict) -> str:
    span = f"{c['line']}" if c["end_line"] == c["line"] else f"{c['line']}-{c['end_line']}"
    ho = "  [held out]" if c["held_out"] else ""
    return f"  {tree_name(c)}  {c['path']}:{span}  {c['expression']}{ho}"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: GRAPHREADY=target/release/graphready scripts/eval-real-world.py\n"
               "         scripts/real-world.sh eval --package sglang --held-out only")
    ap.add_argument("--cases", default=os.path.join(REPO, "eval", "cases.toml"),
                    help="the evaluation set (default: eval/cases.toml)")
    ap.add_argument("--corpus", default=os.environ.get("CORPUS", "/tmp/gr-eval"),
                    help="where wheels are downloaded and unpacked (env CORPUS, default /tmp/gr-eval; "
                         "refused inside the repository)")
    ap.add_argument("--graphready", default=os.environ.get("GRAPHREADY", os.path.join(REPO, "target", "release", "graphready")),
                    help="the binary to evaluate (env GRAPHREADY, default target/release/graphready)")
    ap.add_argument("--package", action="append", choices=sorted(PACKAGES),
                    help="only cases of this package (repeatable)")
    ap.add_argument("--held-out", choices=("all", "only", "exclude"), default="all",
                    help="score all cases (default), only the held-out third, or only the rest")
    ap.add_argument("--no-download", action="store_true",
                    help="do not call pip; every tree must already be unpacked in the corpus")
    ap.add_argument("--verify-only", action="store_true",
                    help="lay out the trees and check every case against its line; run nothing")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("GR_TIMEOUT", "900")),
                    help="seconds before one graphready run is abandoned (env GR_TIMEOUT, default 900)")
    ap.add_argument("--json", metavar="FILE", help="also write the per-case results and scores as JSON")
    args = ap.parse_args()

    corpus = os.path.realpath(args.corpus)
    if corpus == REPO or corpus.startswith(REPO + os.sep):
        print(f"error: corpus {corpus} is inside the repository; third-party code must not go there", file=sys.stderr)
        return 2
    try:
        cases = load_cases(args.cases)
    except (OSError, ValueError) as e:
        print(f"error: {args.cases}: {e}", file=sys.stderr)
        return 2
    if args.package:
        cases = [c for c in cases if c["package"] in args.package]
    if args.held_out == "only":
        cases = [c for c in cases if c["held_out"]]
    elif args.held_out == "exclude":
        cases = [c for c in cases if not c["held_out"]]
    if not cases:
        print("error: no case selected", file=sys.stderr)
        return 2

    trees = sorted({(c["package"], c["version"]) for c in cases},
                   key=lambda t: (t[0], tuple(int(x) if x.isdigit() else x for x in t[1].split("."))))
    os.makedirs(corpus, exist_ok=True)

    # 1. lay out the trees (download + unpack), reusing scripts/real-world.sh
    specs = [f"{PACKAGES[p][0]}=={v}" for p, v in trees]
    if args.no_download:
        missing = [s for s in specs if not os.path.isdir(os.path.join(corpus, s.replace("==", "-")))]
        if missing:
            print(f"error: --no-download but not unpacked in {corpus}: {', '.join(missing)}", file=sys.stderr)
            return 2
    else:
        env = dict(os.environ, CORPUS=corpus, PYTHON=os.environ.get("PYTHON", sys.executable))
        proc = subprocess.run([os.path.join(REPO, "scripts", "real-world.sh"), "layout", *specs],
                              env=env, stdout=subprocess.DEVNULL)
        if proc.returncode != 0:
            print(f"error: laying out the trees failed (scripts/real-world.sh layout, exit {proc.returncode})",
                  file=sys.stderr)
            return 2

    # 2. check every case against its release
    errors = verify(cases, corpus)
    n_ok = sum(c.get("verified", False) for c in cases)
    print(f"cases: {len(cases)} selected (held-out: {args.held_out}), {n_ok} verified against their release line,"
          f" {len(cases) - n_ok} not")
    for e in errors:
        print(f"ERROR case does not match its release: {e}")
    if args.verify_only:
        return 1 if errors else 0

    if not (os.path.isfile(args.graphready) and os.access(args.graphready, os.X_OK)):
        print(f"error: {args.graphready} is not an executable (cargo build --release -p graphready, or set GRAPHREADY)",
              file=sys.stderr)
        return 2
    binary = os.path.realpath(args.graphready)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"binary: {binary} ({version or 'unknown version'})")
    reports = os.path.join(corpus, "eval-reports")
    os.makedirs(reports, exist_ok=True)

    # 3. run graphready per tree and score
    run_errors = []
    reach_available = True
    per_tree = collections.OrderedDict()
    for pkg, ver in trees:
        name = f"{PACKAGES[pkg][0]}-{ver}"
        tree = os.path.join(corpus, name)
        pkg_dir = PACKAGES[pkg][1]
        tcases = [c for c in cases if c["package"] == pkg and c["version"] == ver and c.get("verified")]
        results = {}
        for level, extra in (("project", []), ("rule", ["--scope", "all", "--select", "ALL"])):
            out = os.path.join(reports, f"{name}.{level}.json")
            proc, err, wall = run_graphready(binary, tree, pkg_dir, extra, out, args.timeout)
            if err is None and proc.returncode not in (0, 1):
                tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
                err = f"exit code {proc.returncode}" + (": " + " | ".join(tail) if tail else "")
            if err is None:
                try:
                    results[level] = parse_findings(proc.stdout)
                except ValueError as e:
                    err = f"unreadable JSON report ({e})"
            if err is not None:
                run_errors.append(f"{name} {level} level: {err}")
                results[level] = None
            else:
                print(f"  {name:24} {level:7} level: {len(results[level]):6} findings  {wall:6.1f} s", flush=True)
        scope_proc, scope_err, _ = run_graphready(binary, tree, pkg_dir, ["--show-scope"],
                                                  os.path.join(reports, f"{name}.scope.json"), args.timeout)
        reached = None if scope_err else parse_scope(scope_proc)
        if reached is None:
            reach_available = False

        by_path = {}
        for level in ("project", "rule"):
            idx = collections.defaultdict(list)
            for f in results[level] or ():
                idx[f["path"]].append(f)
            by_path[level] = idx
        for c in tcases:
            c["run_ok"] = results["project"] is not None and results["rule"] is not None
            c["rule_hits"] = hits(by_path["rule"], c) if results["rule"] is not None else []
            c["proj_hits"] = hits(by_path["project"], c) if results["project"] is not None else []
            c["mismatched"] = ([f for f in c["rule_hits"] if f["code"] not in c["rules"]]
                               if c["verdict"] == "hazard" and c["rules"] else [])
            if reached is None:
                c["reached"] = None
            else:
                # "capture" / "stall" when the enclosing function is reached, False when not
                c["reached"] = reached.get((os.path.normpath(c["path"]), c["function"]), False)
        per_tree[name] = [c for c in tcases if c["run_ok"]]

    # 4. report
    scored = [c for cs in per_tree.values() for c in cs]
    print()
    print(HEADER)
    overall, held = Score(), Score()
    for name, cs in per_tree.items():
        s = Score()
        for c in cs:
            s.add(c)
        print(s.row(name, reach_available))
    for c in scored:
        overall.add(c)
        if c["held_out"]:
            held.add(c)
    print("-" * len(HEADER))
    print(overall.row("overall", reach_available))
    if args.held_out == "all" and held.n:
        print(held.row("  of which held out", reach_available))
    by_pkg = collections.OrderedDict()
    for c in scored:
        by_pkg.setdefault(c["package"], Score()).add(c)
    for pkg, s in by_pkg.items():
        print(s.row(f"  {pkg}", reach_available))
    print()
    print("rule level = --scope all --select ALL; project level = defaults; a hit is a finding whose start line lies")
    print("in [line, end_line]. proj false fl. counts lookalike + cold. reach: the enclosing function is in the")
    print("default scope's reached set (capture or stall).")
    if not reach_available:
        print(f"reach: {NO_JSON_SCOPE}")

    def section(title: str, items: list[dict], extra=None) -> None:
        print(f"\n{title}: {len(items)}")
        for c in items:
            print(describe(c) + (extra(c) if extra else ""))

    codes = lambda fs: "  -> " + ", ".join(sorted({f["code"] for f in fs}))
    section("hazards missed at rule level", [c for c in scored if c["verdict"] == "hazard" and not c["rule_hits"]])
    section("hazards missed at project level", [c for c in scored if c["verdict"] == "hazard" and not c["proj_hits"]])
    section("false flags at rule level (lookalikes)",
            [c for c in scored if c["verdict"] == "lookalike" and flags(c["rule_hits"])],
            lambda c: codes(flags(c["rule_hits"])))
    section("false flags at project level (lookalikes and cold)",
            [c for c in scored if c["verdict"] != "hazard" and flags(c["proj_hits"])],
            lambda c: codes(flags(c["proj_hits"])))
    section("findings on hazard lines with a code outside `rules` (rule level)",
            [c for c in scored if c["mismatched"]],
            lambda c: codes(c["mismatched"]) + "  (expected " + ", ".join(c["rules"]) + ")")
    if reach_available:
        section("hazards whose function is not reached", [c for c in scored if c["verdict"] == "hazard" and not c["reached"]],
                lambda c: f"  [{c['function']}]")
        section("cold locations whose function is reached", [c for c in scored if c["verdict"] == "cold" and c["reached"]],
                lambda c: f"  [{c['function']}: {c['reached']}]")

    if run_errors:
        print()
        for e in run_errors:
            print(f"ERROR graphready run failed: {e}")
    if errors:
        print(f"\n{len(errors)} case(s) did not match their release line (see ERROR lines above); they are not scored")

    if args.json:
        doc = {
            "binary": binary, "version": version, "cases_file": os.path.relpath(args.cases, REPO),
            "held_out": args.held_out, "reach_available": reach_available,
            "overall": overall.as_dict(), "held_out_only": held.as_dict() if held.n else None,
            "trees": {},
            "cases": [{k: c.get(k) for k in ("package", "version", "path", "line", "end_line", "verdict", "held_out",
                                             "function", "verified", "reached")}
                      | {"rule_hit": bool(c.get("rule_hits")), "project_hit": bool(c.get("proj_hits")),
                         "codes": sorted({f["code"] for f in c.get("rule_hits", [])})}
                      for c in cases],
            "errors": errors + run_errors,
        }
        for name, cs in per_tree.items():
            s = Score()
            for c in cs:
                s.add(c)
            doc["trees"][name] = s.as_dict()
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    return 1 if (errors or run_errors) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
