#!/usr/bin/env python3
"""Print a reproducible random sample of findings from a graphready JSON report,
each with its code, path:line, message and source context, so that a human can
judge precision (true / false positive) finding by finding.

Usage: scripts/sample-findings.py [-h] [-n N] [-s SEED] [-C LINES] [--code CODE]...
                                  [--root DIR] REPORT

  REPORT       graphready JSON report (`graphready check --output-format json ...`),
               e.g. /tmp/gr-corpus/reports/vllm.json written by scripts/real-world.sh
  -n N         sample size (default 40; all findings if fewer)
  -s SEED      random seed (default 0); the same seed gives the same sample
  -C LINES     lines of context either side (default 3)
  --code CODE  only sample findings with this rule code (repeatable)
  --root DIR   directory that relative finding paths are resolved against
               (default: the current directory, then the report's directory)
"""
import argparse
import collections
import json
import os
import random
import sys


def findings_of(doc):
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("findings", "diagnostics", "results", "messages"):
            if isinstance(doc.get(key), list):
                return doc[key]
    return None


def field(f, *keys):
    if not isinstance(f, dict):
        return None
    for k in keys:
        if f.get(k) is not None:
            return f[k]
    for nest in ("location", "start", "range"):
        loc = f.get(nest)
        if isinstance(loc, dict):
            for k in keys:
                if loc.get(k) is not None:
                    return loc[k]
    span = f.get("span")  # graphready's report: span.start.{line,column}
    if isinstance(span, dict) and isinstance(span.get("start"), dict):
        for k in keys:
            if span["start"].get(k) is not None:
                return span["start"][k]
    return None


def resolve(path, roots):
    if os.path.isabs(path):
        return path
    for r in roots:
        cand = os.path.join(r, path)
        if os.path.exists(cand):
            return cand
    return path


_cache = {}


def source_lines(path):
    if path not in _cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                _cache[path] = fh.read().splitlines()
        except OSError as e:
            _cache[path] = e
    return _cache[path]


def main():
    ap = argparse.ArgumentParser(
        usage="%(prog)s [-h] [-n N] [-s SEED] [-C LINES] [--code CODE]... [--root DIR] REPORT",
        description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("-n", "--num", type=int, default=40, help="sample size (default 40)")
    ap.add_argument("-s", "--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("-C", "--context", type=int, default=3, help="context lines either side (default 3)")
    ap.add_argument("--code", action="append", default=[], help="only this rule code (repeatable)")
    ap.add_argument("--root", action="append", default=[], help="base directory for relative paths")
    args = ap.parse_args()

    try:
        with open(args.report, encoding="utf-8", errors="replace") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        sys.exit(f"error: cannot read {args.report} as JSON: {e}")
    findings = findings_of(doc)
    if findings is None:
        top = list(doc)[:10] if isinstance(doc, dict) else type(doc).__name__
        sys.exit(f"error: no findings array in {args.report} (top-level keys: {top})")

    codes = collections.Counter(str(field(f, "code", "rule", "rule_id", "ruleId")) for f in findings)
    pool = [f for f in findings
            if not args.code or str(field(f, "code", "rule", "rule_id", "ruleId")) in args.code]
    n = min(args.num, len(pool))
    sample = random.Random(args.seed).sample(pool, n)
    sample.sort(key=lambda f: (str(field(f, "code", "rule", "rule_id", "ruleId")),
                               str(field(f, "path", "filename", "file")),
                               field(f, "line", "row") or 0))
    roots = args.root + [os.getcwd(), os.path.dirname(os.path.abspath(args.report))]

    print(f"# {args.report}: {len(findings)} findings "
          f"({', '.join(f'{k}: {c}' for k, c in codes.most_common())})")
    print(f"# sample: {n} of {len(pool)}"
          + (f" with code in {args.code}" if args.code else "")
          + f", seed {args.seed}\n")
    for i, f in enumerate(sample, 1):
        code = field(f, "code", "rule", "rule_id", "ruleId")
        path = field(f, "path", "filename", "file")
        line = field(f, "line", "row")
        col = field(f, "column", "col")
        msg = field(f, "message", "msg", "text")
        if isinstance(msg, dict):
            msg = msg.get("text", msg)
        loc = f"{path}:{line}" + (f":{col}" if col is not None else "")
        print(f"[{i}/{n}] {code}  {loc}")
        print(f"    {msg}")
        reach = f.get("reach")
        chain = f.get("chain") or []
        if reach or chain:
            links = " -> ".join(
                link.get("function", "?") if isinstance(link, dict) else str(link)
                for link in chain)
            print(f"    reach: {reach or '?'}" + (f"; chain: {links}" if links else ""))
        if path is None or not isinstance(line, int):
            print("    (no path/line to show context for)\n")
            continue
        src = source_lines(resolve(str(path), roots))
        if isinstance(src, Exception):
            print(f"    (cannot read source: {src})\n")
            continue
        lo, hi = max(1, line - args.context), min(len(src), line + args.context)
        width = len(str(hi))
        for ln in range(lo, hi + 1):
            mark = ">" if ln == line else " "
            print(f"  {mark} {ln:>{width}} | {src[ln - 1]}")
            if ln == line and isinstance(col, int) and col >= 1:
                print(f"    {'':>{width}} | {' ' * (col - 1)}^")
        if line > len(src):
            print(f"    (line {line} is past the end of the file, which has {len(src)} lines)")
        print("    verdict: [ ] true positive   [ ] false positive   [ ] unsure\n")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.stderr.close()
