"""`python -m benchmarks [--quick] [--json PATH] [--only CASE] [--cache DIR]`

Prints the results table (Markdown) on stdout and progress on stderr;
`--json` writes the machine, the versions and every sample. A full run (no
`--quick`, no `--only`) writes `benchmarks/results.json`,
`benchmarks/RESULTS.md` and the figures of `docs/performance.md` by default
(`--json`/`--markdown` choose other paths; `--report-from results.json`
re-renders RESULTS.md and the page without measuring). Speed never makes it
fail: missed targets are reported, with a profile of where the time goes.

Example:
  python -m benchmarks --quick --json bench.json
  python -m benchmarks --only rebuild_sql,as_of
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ledgermem.benchmarks import cases as C
from ledgermem.benchmarks import report
from ledgermem.benchmarks.diagnoses import DIAGNOSES
from ledgermem.benchmarks.measure import Case, Progress, describe_machine, machine, versions

HERE = Path(__file__).resolve().parent
#: The documentation page whose figures are written from the results (its notes are kept).
PAGE = HERE.parent / "docs" / "performance.md"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmarks of ledgermem against baselines run in the same process.",
        epilog="Example: python -m benchmarks --quick --json bench.json",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes (under 2 minutes); same cases")
    p.add_argument("--json", type=Path, default=None, help="write every sample here as JSON")
    p.add_argument("--markdown", type=Path, default=None, help="write the RESULTS.md report here")
    p.add_argument("--only", default=None,
                   help=f"comma-separated families or case ids: {', '.join(C.FAMILIES)}")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ledgermem-bench",
                   help="where generated ledgers are kept between runs (default: a folder in the temp dir)")
    p.add_argument("--no-profile", action="store_true", help="do not profile the cases that miss their target")
    p.add_argument("--report-from", type=Path, default=None, metavar="JSON",
                   help="measure nothing: re-render RESULTS.md and docs/performance.md from a results file")
    return p


def _family_of(case: str) -> str:
    return next(f for f in C.FAMILIES if case.startswith(f))


def _selected(only: str | None) -> tuple[list[str], set[str] | None]:
    """Families to run, and the case ids to keep (None: all of them)."""
    if not only:
        return list(C.RUNNERS), None
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in C.RUNNERS and w not in C.CASE_IDS]
    if unknown:
        raise SystemExit(f"--only {unknown[0]!r}: not a family or case; families: {', '.join(C.FAMILIES)}; "
                         f"cases: {', '.join(C.CASE_IDS)}")
    named = [w for w in wanted if w in C.RUNNERS]
    ids = {w for w in wanted if w in C.CASE_IDS}
    families = [f for f in C.RUNNERS if f in named or any(_family_of(i) == f for i in ids)]
    keep = None if not ids else ids | {c for c in C.CASE_IDS if _family_of(c) in named}
    return families, keep


def write_page(doc: dict[str, Any], results: list[Case], page: Path = PAGE) -> None:
    """docs/performance.md: its figures from these results, its notes as they are."""
    current = page.read_text(encoding="utf-8") if page.exists() else ""
    page.write_text(report.performance_page(doc, results, current), encoding="utf-8")


def _rerender(source: Path, markdown: Path | None) -> int:
    """The report of an earlier run, with the current diagnoses of its missed targets."""
    doc, results = report.load_json(source)
    doc["diagnoses"] = {c.family: DIAGNOSES[c.family] for c in results if c.met is False and c.family in DIAGNOSES}
    md_path = markdown or source.with_name("RESULTS.md")
    report.write_json(doc, results, source)
    md_path.write_text(report.markdown(doc, results), encoding="utf-8")
    write_page(doc, results)
    print(report.table(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.report_from is not None:
        return _rerender(args.report_from, args.markdown)
    families, keep = _selected(args.only)
    full_default = not args.quick and not args.only
    json_path = args.json or (HERE / "results.json" if full_default else None)
    md_path = args.markdown or (HERE / "RESULTS.md" if full_default else None)
    log = Progress()
    sizes = C.QUICK if args.quick else C.FULL
    info, libs = machine(), versions()
    log(f"{'quick' if args.quick else 'full'} run on {describe_machine(info, libs)}; cache {args.cache}")
    started = time.perf_counter()
    results: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="ledgermem-bench-") as scratch:
        ctx = C.Context(sizes, args.cache, Path(scratch), log, profile_misses=not args.no_profile)
        for family in families:
            results += C.RUNNERS[family](ctx)
        ledgers = [
            {"label": C.label(n), "events": g.events, "episodes": g.episodes, "seconds": g.seconds}
            for n, g in sorted(ctx.generated.items())
        ]
    order = {c: i for i, c in enumerate(C.CASE_IDS)}
    results = sorted((c for c in results if keep is None or c.case in keep), key=lambda c: order[c.case])
    command = "python -m benchmarks" + (" --quick" if args.quick else "") + (f" --only {args.only}" if args.only else "")
    doc: dict[str, Any] = {
        "command": command,
        "mode": "quick" if args.quick else "full",
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": time.perf_counter() - started,
        "machine": info,
        "machine_line": describe_machine(info, libs),
        "versions": libs,
        "sizes": asdict(sizes),
        "ledgers": ledgers,
        "diagnoses": {c.family: DIAGNOSES[c.family] for c in results if c.met is False and c.family in DIAGNOSES},
    }
    print(report.table(results))
    if json_path is not None:
        report.write_json(doc, results, json_path)
        log(f"wrote {json_path}")
    if md_path is not None:
        md_path.write_text(report.markdown(doc, results), encoding="utf-8")
        if full_default:
            write_page(doc, results)
        log(f"wrote {md_path}" + (f" and {PAGE}" if full_default else ""))
    log(f"done in {doc['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
