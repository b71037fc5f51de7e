"""Command line: `usi-engine` (USI protocol), `usi-engine gtp`, `usi-engine bench ...`."""

import argparse
import sys


def bench_main(argv):
    parser = argparse.ArgumentParser(prog="usi-engine bench", description="Speed benchmarks.")
    sub = parser.add_subparsers(dest="what", required=True)
    perft = sub.add_parser("perft", help="perft leaves per second of the shogi rules core")
    perft.add_argument("--sfen", default=None, help="position (default: start position)")
    perft.add_argument("--depth", type=int, default=5)
    perft.add_argument("--bulk", action="store_true", help="count the last ply without making it")
    args = parser.parse_args(argv)
    if args.what == "perft":
        from .shogi.bench import run
        run(args.sfen, args.depth, args.bulk)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "bench":
        return bench_main(argv[1:])
    print("usage: usi-engine bench perft [--sfen SFEN] [--depth D] [--bulk]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
