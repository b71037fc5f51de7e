"""`python -m learn <command> ...`: a subcommand dispatcher.

Each subcommand registers a parser builder and a handler in COMMANDS; handlers return an exit code.
"""

from __future__ import annotations

import argparse
import signal
import sys

from .go_balance import add_go_balance_parser
from .go_moves import add_go_moves_parser
from .go_playout_moves import add_go_playout_moves_parser
from .go_td import add_go_td_parser
from .match.arena import add_arena_parser
from .match.cli import add_match_parser
from .match.go_label import add_go_label_parser
from .match.go_review import add_go_review_parser
from .match.go_screen import add_go_screen_parser
from .match.ladder import add_ladder_parser
from .plot import add_plot_parser
from .run_cli import add_evaluate_parser, add_probe_parser, add_run_parser
from .shogi_moves import add_shogi_moves_parser
from .shogi_moves_eval import add_shogi_moves_eval_parser

COMMANDS = (
    add_match_parser,
    add_ladder_parser,
    add_arena_parser,
    add_run_parser,
    add_evaluate_parser,
    add_probe_parser,
    add_plot_parser,
    add_go_td_parser,
    add_go_moves_parser,
    add_go_review_parser,
    add_go_label_parser,
    add_go_screen_parser,
    add_go_balance_parser,
    add_go_playout_moves_parser,
    add_shogi_moves_parser,
    add_shogi_moves_eval_parser,
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learn")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    # A job started in the background by a non-interactive shell inherits SIGINT ignored, and Python then
    # installs no KeyboardInterrupt: Ctrl-C / kill -INT would not stop a match, ladder or run
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
