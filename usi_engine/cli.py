"""Command line: `usi-engine` (USI protocol), `usi-engine gtp`, `usi-engine warmup`, `usi-engine bench ...`."""

import argparse
import sys


def bench_main(argv):
    parser = argparse.ArgumentParser(prog="usi-engine bench", description="Speed benchmarks.")
    sub = parser.add_subparsers(dest="what", required=True)
    perft = sub.add_parser("perft", help="perft leaves per second of the shogi rules core")
    perft.add_argument("--sfen", default=None, help="position (default: start position)")
    perft.add_argument("--depth", type=int, default=5)
    perft.add_argument("--bulk", action="store_true", help="count the last ply without making it")
    ev = sub.add_parser("eval", help="static evaluations per second (usi_engine/shogi_eval/bench.py)")
    ev.add_argument("--weights", default=None, help="weight file (default: shipped weights)")
    qs = sub.add_parser("qsearch", help="quiescence nodes per second (usi_engine/shogi_search/bench.py)")
    qs.add_argument("--weights", default=None, help="weight file (default: shipped weights)")
    sub.add_parser("search", help="MCSS search benchmark (usi_engine/search/bench.py, shogi set by default)")
    sig = sub.add_parser("signature", help="total nodes of a fixed search of the bench positions (pins behaviour)")
    sig.add_argument(
        "--samples", type=int, default=None, help="samples per position (default: the pinned 20); its CPU time"
    )
    an = sub.add_parser("analysis", help="a long go infinite: samples per minute and resident memory")
    an.add_argument("--minutes", type=float, default=10.0)
    an.add_argument("--threads", type=int, default=None, help="search threads (default: the Threads option's)")
    an.add_argument("--hash", type=float, default=256.0, help="node pool MB (USI_Hash)")
    an.add_argument("--sfen", default=None, help="position (default: a middlegame)")
    mate = sub.add_parser("mate", help="df-pn mate solver on its tsume problem set (usi_engine/shogi_search/mate.py)")
    mate.add_argument("--seconds", type=float, default=20.0, help="time limit per problem")
    mp = sub.add_parser("moveprior", help="move prior: moves scored per second, held-out top-1/top-5 (moveprior_bench)")
    mp.add_argument("--model", default=None, help="move-prior file (default: the shipped model)")
    args, rest = parser.parse_known_args(argv)
    if args.what == "perft":
        from .shogi.bench import run

        run(args.sfen, args.depth, args.bulk)
    elif args.what == "eval":
        from .shogi_eval.bench import bench_eval

        bench_eval(args.weights)
    elif args.what == "qsearch":
        from .shogi_search.bench import bench_qsearch

        bench_qsearch(args.weights)
    elif args.what == "mate":
        from .shogi_search.mate import bench as mate_bench

        mate_bench(args.seconds)
    elif args.what == "moveprior":
        from .shogi_search.moveprior_bench import bench_moveprior

        bench_moveprior(args.model)
    elif args.what == "signature":
        from .shogi_search.bench import bench_signature

        bench_signature() if args.samples is None else bench_signature(args.samples)
    elif args.what == "analysis":
        from .shogi_search.bench import ANALYSIS_SFEN, bench_analysis

        bench_analysis(args.minutes, args.threads, args.hash, args.sfen or ANALYSIS_SFEN)
    elif args.what == "search":
        from .shogi_search.bench import search_main

        return search_main(rest)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "bench":
        return bench_main(argv[1:])
    if argv and argv[0] == "warmup":
        from .warmup import main as warmup_main

        return warmup_main(argv[1:])
    if argv and argv[0] == "gtp":
        from .gtp import main as gtp_main

        return gtp_main(argv[1:])
    if not argv or argv[0] == "usi":
        from .usi import main as usi_main

        return usi_main()
    print(
        "usage: usi-engine [usi] | usi-engine gtp [options] | usi-engine warmup [shogi|go|all] | "
        "usi-engine bench perft|eval|qsearch|search|signature|analysis|mate|moveprior ...",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
