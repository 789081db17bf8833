"""``python -m evaluation.simulate``: budget planning and the label-efficiency benchmark.

Runs simulated evaluation campaigns on a labelled data set (``truth.tsv``, ``systems/*.tsv``,
``items.jsonl``) and reports labels spent, target attainment, coverage, interval widths and bias.
With ``--annotators`` a panel of fallible annotators answers instead of a perfect oracle, a share
of all judgments goes to gold items, and judgments and the coverage at stop are reported too.
A closed-pool data set (a directory with ``items.tsv``) runs closed-pool campaigns instead. This
module is the command's frame: it reads the command line and hands it to the data set's kind
(:func:`evaluation.simulation.kinds.kind_of_dataset`), whose wing checks the options, runs its
campaigns and prints them (:mod:`evaluation.simulation.open_world.command`,
:mod:`evaluation.simulation.closed_pool.command`).
Exit codes: 0 success, 2 bad arguments or a malformed data set (the message names file and line).
"""

from __future__ import annotations

import argparse
import sys

from evaluation.core.intervals import INTERVAL_METHODS
from evaluation.simulation.kinds import SIMULATION_KINDS, kind_of_dataset

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m evaluation.simulate",
        description="Simulate on-demand evaluation on a labelled data set: how many labels a "
        "design needs and whether its intervals cover the true scores.",
    )
    p.add_argument(
        "dataset",
        metavar="DATASET_DIR",
        help="directory with truth.tsv and systems/; with items.tsv too it is a closed pool",
    )
    p.add_argument(
        "--design",
        choices=[design for kind in SIMULATION_KINDS for design in kind.designs],
        default=None,
        help="sampling design: "
        + ", ".join(
            f"{', '.join(kind.designs)} (default: {kind.default_design}) on {kind.description}"
            for kind in SIMULATION_KINDS
        ),
    )
    p.add_argument(
        "--systems",
        default=None,
        metavar="K",
        help="systems per repeat, chosen at random (default: all); on a closed pool the first "
        "K systems in file order, or a comma list of system names, arriving in that order",
    )
    p.add_argument(
        "--measures",
        default=None,
        metavar="LIST",
        help="closed pool only: comma list of precision, recall, f1, accuracy, "
        "balanced_accuracy, mcc (default: precision,recall,f1)",
    )
    p.add_argument("--repeats", type=int, default=20, metavar="R", help="default: %(default)s")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="default: %(default)s")
    p.add_argument(
        "--target-half-width",
        type=float,
        default=None,
        metavar="H",
        help="precision half-width each run should reach (default: 0.05; open-world only)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        metavar="C",
        help="confidence level of every interval (default: %(default)s)",
    )
    p.add_argument(
        "--reference-size",
        type=int,
        default=None,
        metavar="N",
        help="true items in the reference sample (default: 300; open-world only)",
    )
    p.add_argument(
        "--interval",
        choices=INTERVAL_METHODS,
        default=None,
        help="interval family of the default design (default: clopper-pearson)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="LABELS",
        help="label budget per repeat (default: unlimited); on a closed pool (default: 2000) "
        "the labels for the whole task, shared by all runs, except for ais-published, which "
        "re-uses no label: there it is the labels per run",
    )
    p.add_argument(
        "--annotators",
        default=None,
        metavar="SPEC",
        help="fallible annotators instead of a perfect oracle: comma list of "
        "accuracies (0.95) or sensitivity:specificity (0.99:0.85), each with "
        "an optional xN, e.g. 0.98,0.95x2,0.9,0.5",
    )
    p.add_argument(
        "--gold-rate",
        type=float,
        default=None,
        metavar="R",
        help="share of all judgments spent on gold items, with --annotators (default: 0.05)",
    )
    p.add_argument(
        "--hard-items",
        default=None,
        metavar="SHARE:ACCURACY",
        help="with --annotators: a share of items on which every annotator is right "
        "only with this probability (correlated errors, which the annotator "
        "model assumes away), e.g. 0.1:0.7",
    )
    p.add_argument(
        "--ranking",
        choices=("paired", "bonferroni"),
        default=None,
        help="how the rank intervals reported under rank are obtained: from every pairwise "
        "difference at once (paired, the default for the open-world default design and the "
        "closed pools' adaptive design) or from each run's interval at the Bonferroni level "
        "(bonferroni, the only one for the published and passive designs)",
    )
    p.add_argument("--per-system", action="store_true", help="also print a row per system")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return kind_of_dataset(args.dataset).command(args, parser)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. piped into `head`: not an error of ours
        sys.stderr.close()
        sys.exit(0)
