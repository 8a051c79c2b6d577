"""``python -m dpsk ledger show|export PATH-or-URL``: read a stored ledger.

Both commands open the ledger read-only (:meth:`dpsk.BudgetAccountant.open`
with ``read_only=True``): they never create, upgrade or change a store, and
work on a read-only file. ``show`` prints the budget, what was spent and what
remains, and the last releases; ``export`` writes the whole history as JSON
(with the budget and totals) or CSV (one row per release).
"""

import argparse
import sys

from ._history import history_rows
from ._ledger import BudgetAccountant
from ._store import SCHEMA_VERSION, LedgerStoreError

__all__ = ["main"]

DESCRIPTION = """\
Read a privacy ledger kept in a database (BudgetAccountant.open): a SQLite file
(a path, or sqlite:///path) or a PostgreSQL database (postgresql://...). The
ledger is opened read-only: nothing is created or changed.
"""


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m dpsk ledger", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = commands.add_parser(
        "show", help="print the budget, what was spent and what remains",
        description="Print the budget, what was spent and what remains, and the last "
                    "releases.")
    show.add_argument("where", metavar="PATH-or-URL")
    show.add_argument("--last", type=int, default=10, metavar="N",
                      help="releases to list, newest last (default 10; -1: all)")
    export = commands.add_parser(
        "export", help="write the history as JSON or CSV",
        description="Write the history: JSON (the budget, the totals and every "
                    "release) or CSV (one row per release).")
    export.add_argument("where", metavar="PATH-or-URL")
    export.add_argument("--format", choices=("json", "csv"), default=None,
                        help="default: from the output file's suffix, else json")
    export.add_argument("-o", "--output", default=None, metavar="FILE",
                        help="file to write (default: standard output)")
    return parser


def _releases_table(rows):
    lines = [f"  {'seq':>4}  {'time (UTC)':<20}  {'epsilon':>9}  {'delta':>9}  "
             f"{'estimator':<28}  {'label':<16}  user@host (pid)"]
    for row in rows:
        who = f"{row['user'] or '?'}@{row['host'] or '?'} ({row['pid'] or '?'})"
        lines.append(
            f"  {row['seq']:>4}  {row['time'] or '?':<20}  {row['epsilon']:>9.4g}  "
            f"{row['delta']:>9.3g}  {row['estimator'] or row['kind']:<28}  "
            f"{row['label'] or '':<16}  {who}")
    return lines


def show(acc, last):
    """The lines ``show`` prints for the ledger ``acc``."""
    with acc._ledger(write=False) as held:
        summary = acc._summary(held.tally)
        rows = history_rows(held.records) if last else []
    store = acc._store
    lines = [
        f"ledger     {summary['location']} ({store.kind}, schema {SCHEMA_VERSION}, "
        f"created {store.created})",
        f"budget     epsilon={summary['epsilon']:g}, delta={summary['delta']:g}, "
        f"composition={summary['composition']}"
        + (f", approx_delta={summary['approx_delta']:g}"
           if summary["approx_delta"] is not None else ""),
        f"spent      epsilon={summary['spent_epsilon']:g}, delta={summary['spent_delta']:g} "
        f"in {summary['releases']} releases (basic composition: the costs added up)",
    ]
    if summary["composition"] != "basic" and summary["releases"]:
        eps, delta = acc.total(summary["composition"])
        lines.append(f"           epsilon={eps:g} at delta={delta:g} by "
                     f"{summary['composition']} (a report for the sequence as recorded)")
    remaining = (f"remaining  epsilon={summary['remaining_epsilon']:g}, "
                 f"delta={summary['remaining_delta']:g}")
    if summary["composition"] != "basic":
        remaining += (" (under the privacy filter: the largest pure release that still "
                      "fits, and the delta left for approximate-DP releases)")
    lines.append(remaining)
    if rows:
        shown = rows if last < 0 else rows[-last:]
        lines.append("")
        lines.append(f"last {len(shown)} of {len(rows)} releases:" if len(shown) < len(rows)
                     else f"{len(rows)} releases:")
        lines.extend(_releases_table(shown))
    return lines


def main(argv=None):
    """Run ``python -m dpsk ledger``; return the exit status (2 for a ledger that
    cannot be read)."""
    args = _parser().parse_args(argv)
    try:
        acc = BudgetAccountant.open(args.where, read_only=True)
        if args.command == "show":
            print("\n".join(show(acc, args.last)))
            return 0
        text = acc.export(None, args.format or _format_of(args.output))
    except (LedgerStoreError, ValueError, ImportError) as exc:
        print(f"python -m dpsk ledger: {exc}", file=sys.stderr)
        return 2
    if args.output is None:
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    return 0


def _format_of(output):
    return "csv" if output is not None and output.lower().endswith(".csv") else "json"
