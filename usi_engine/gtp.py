"""GTP version 2 front-end for Go (`usi-engine gtp [options]`): parsing, dispatch, clock and analysis output.

A thin layer: rules live in usi_engine/go/ (GoBoard), search in usi_engine/search/ (Searcher + GoAdapter).
One reader thread turns stdin into a queue of cleaned lines (control characters dropped, tabs to spaces,
`#` comments cut, empty lines skipped); the main thread answers them in order, `=id result` or
`?id message`, each followed by an empty line (GTP version 2, docs/references.md). A failing command never ends the
loop: expected failures carry the spec's texts, anything unexpected becomes `? internal error: ...`
(details on stderr). `lz-analyze` streams `info ...` lines until the next input line (even an empty one).

Time (time_settings / kgs-time_settings / time_left): per move the engine takes, in main time,
remaining / max(MIN_MOVES_LEFT, expected moves left) plus most of one byoyomi period share; in Canadian
byoyomi, (period time / stones) * BYO_USE; always minus a safety margin (SAFETY_S, at most SAFETY_FRACTION
of the share), and never less than MIN_SECONDS.
Without a clock, `--seconds` per move (and/or `--playouts`) limits the search.

Resignation: after at least RESIGN_MIN_PLAYOUTS playouts, when the root winrate is below `--resign`.
Passing: when the opponent has just passed and the dead-stone-aware score estimate (GoBoard.final_score,
the same one `final_score` answers) says we win, we pass at once; when the search proposes a pass that
the estimate says loses, we play the best other move instead (the tree scores passes by Tromp-Taylor
with every stone alive, a referee removes dead stones).
"""

import argparse
import queue
import sys
import threading
import traceback

import numpy as np

from usi_engine.go import layout as L

NAME = "MCSS"
VERSION = "0.17"
MIN_MOVES_LEFT = 12
BYO_USE = 0.8
SAFETY_S = 0.25            # seconds kept back per move (process start-up, pipes, the controller)
SAFETY_FRACTION = 0.25     # ... but at most this fraction of the share (short byoyomi periods)
MIN_SECONDS = 0.05
RESIGN_MIN_PLAYOUTS = 2000
ANALYZE_MULTIPV = 10
STARS = {2: "G7 C3", 3: "G7 C3 C7", 4: "C7 G7 C3 G3", 5: "C7 G7 C3 G3 E5", 6: "C7 G7 C5 G5 C3 G3",
         7: "C7 G7 C5 G5 C3 G3 E5", 8: "C7 E7 G7 C5 G5 C3 E3 G3", 9: "C7 E7 G7 C5 G5 C3 E3 G3 E5"}
POLICY_NAMES = {"mcss": "softmax", "softmax": "softmax", "uct": "uct", "rave": "rave"}


class GtpError(Exception):
    """A command failure: the message goes out as `? message`."""


def clean_line(raw: str) -> str:
    """Input hygiene (GTP §2.2): drop control characters except HT/LF, HT -> space, cut `#` comments."""
    text = raw.split("#", 1)[0].replace("\t", " ")
    return "".join(ch for ch in text if ch >= " " or ch == "\n").strip()


def handicap_points(size: int, n: int) -> list:
    """GNU Go 3.8's fixed handicap vertices for n stones, mapped from the 9x9 table."""
    if n < 2 or n > 9:
        raise GtpError("invalid number of stones")
    if size < 7 or (size % 2 == 0 or size == 7) and n > 4:
        raise GtpError("invalid number of stones")
    edge = 3 if size >= 13 else 2
    coord = {"C": edge, "E": size // 2, "G": size - 1 - edge}
    row = {"3": edge, "5": size // 2, "7": size - 1 - edge}
    from usi_engine.go.goboard import COLUMNS
    return [f"{COLUMNS[coord[v[0]]]}{row[v[1]] + 1}" for v in STARS[n].split()]


class Clock:
    """The controller's clock for both colours (time_settings, kgs-time_settings, time_left)."""

    def __init__(self):
        self.main = self.byo = 0.0
        self.stones = 0
        self.enabled = False
        self.left = {}     # colour -> (seconds, stones)

    def settings(self, main, byo, stones):
        if main < 0 or byo < 0 or stones < 0:
            raise GtpError("syntax error")
        self.main, self.byo, self.stones = float(main), float(byo), int(stones)
        self.enabled = not (main == 0 and byo > 0 and stones == 0)    # 0 T 0 = no time limit
        self.left = {}

    def seconds_for_move(self, colour, moves_left_guess):
        """Seconds to spend on this move, or None when there is no clock."""
        if not self.enabled:
            return None
        secs, stones = self.left.get(colour, (self.main, 0))
        if self.main == 0 and self.byo == 0:
            return None
        if stones > 0:                                     # Canadian period in progress
            share = secs / stones * BYO_USE
        else:
            share = secs / max(MIN_MOVES_LEFT, moves_left_guess)
            if self.byo > 0 and self.stones > 0:
                share += BYO_USE * self.byo / self.stones
                share = min(share, secs + BYO_USE * self.byo / self.stones)
        return max(MIN_SECONDS, share - min(SAFETY_S, SAFETY_FRACTION * share))


class GtpEngine:
    """Game state, options and command handlers; `handle(line)` answers one command."""

    def __init__(self, args, out=sys.stdout):
        from usi_engine.go.goboard import GoBoard
        self.args = args
        self.out = out
        self.lock = threading.Lock()
        self.board = GoBoard(args.size, args.komi, args.ko)
        self.size, self.komi = args.size, args.komi
        self.clock = Clock()
        self.searcher = None
        self.quit = False
        self.ready = threading.Event()      # set by the warm-up thread
        self.commands = {
            "protocol_version": lambda a: "2", "name": lambda a: NAME, "version": lambda a: VERSION,
            "known_command": self.cmd_known, "list_commands": lambda a: "\n".join(sorted(self.commands)),
            "quit": self.cmd_quit, "boardsize": self.cmd_boardsize, "clear_board": self.cmd_clear,
            "komi": self.cmd_komi, "play": self.cmd_play, "genmove": self.cmd_genmove, "undo": self.cmd_undo,
            "showboard": lambda a: "\n" + self.board.to_string(), "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status, "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left, "kgs-time_settings": self.cmd_kgs_time,
            "kgs-genmove_cleanup": self.cmd_cleanup, "loadsgf": self.cmd_loadsgf,
            "fixed_handicap": self.cmd_fixed_handicap, "place_free_handicap": self.cmd_fixed_handicap,
            "set_free_handicap": self.cmd_set_free_handicap, "reg_genmove": self.cmd_reg_genmove,
            "gogui-analyze_commands": self.cmd_analyze_commands, "lz-analyze": None,
        }

    # --- output ------------------------------------------------------------------------------------
    def send(self, text):
        with self.lock:
            self.out.write(text)
            self.out.flush()

    # --- search ------------------------------------------------------------------------------------
    def _searcher(self):
        if self.searcher is None:
            from usi_engine.go.game import GoAdapter, default_params
            from usi_engine.search.searcher import SearchOptions, Searcher
            a = self.args
            adapter = GoAdapter(self.size, default_params(playouts=a.leaf_playouts,
                                                          rave_playouts=a.rave_playouts))
            self.searcher = Searcher(adapter, SearchOptions(
                threads=a.threads, hash_mb=a.hash, t_sel=a.t_sel, t_back=a.t_back, policy=a.policy,
                c_uct=a.c_uct, c_rave=a.c_rave, rave_bias=a.rave_bias, graph=not a.tree, seed=a.seed))
        self.searcher.adapter.size = self.size
        return self.searcher

    def _limits(self, colour):
        """Search limits for this move: the clock's share (or --seconds)."""
        from usi_engine.search.searcher import Limits
        moves_left = max(1.0, 0.5 * (0.75 * self.size * self.size - self.board.move_number / 2.0))
        secs = self.clock.seconds_for_move(colour, moves_left)
        if secs is None:
            secs = self.args.seconds
        return Limits(time_ms=None if secs is None else 1000.0 * secs)

    def _search(self, pos, colour, on_info=None, infinite=False, multipv=1):
        from usi_engine.search.searcher import Limits
        s = self._searcher()
        if infinite:
            return s.search(pos, Limits(infinite=True), on_info=on_info, multipv=multipv,
                            info_interval=self.analyze_interval)
        limits = self._limits(colour)
        if self.args.playouts is None:
            return s.search(pos, limits, on_info=on_info, multipv=multipv)
        return self._search_playouts(s, pos, limits, self.args.playouts, multipv)

    @staticmethod
    def _search_playouts(s, pos, limits, playouts, multipv):
        """Search until `playouts` children were evaluated (or the time limit): a watcher stops it."""
        from usi_engine.search.core import C_CHILDREN
        done = threading.Event()

        def watch():
            while not done.wait(0.002):
                pool = s.pool
                if pool is not None and pool.ctl[C_CHILDREN] >= playouts:
                    s.stop()
                    return
        w = threading.Thread(target=watch, daemon=True)
        w.start()
        try:
            return s.search(pos, limits, multipv=multipv)
        finally:
            done.set()
            w.join()

    def _position_for(self, colour):
        """pos with `colour` to move (GTP allows either colour to move)."""
        pos = self.board.pos
        if pos[L.SIDE] != colour:
            pos = pos.copy()
            pos[L.SIDE], pos[L.KO] = colour, 0
        return pos

    def _winrate(self, result):
        from usi_engine.search.values import is_proven
        if is_proven(result.value):
            return 1.0 if result.value > 0 else 0.0
        if result.root:
            return result.root[0].winrate
        return 0.5 + 0.5 * result.value / self.searcher.adapter.value_scale

    def _estimate_wins(self, colour):
        """Does `colour` win the game as it stands, dead stones removed by playout ownership?"""
        score = self.board.final_score_value()
        return score > 0 if colour == L.BLACK else score < 0

    def choose_move(self, colour, cleanup=False):
        """The engine's move for `colour` as a point index, L.PASS, or None for resignation."""
        from usi_engine.go.goboard import parse_colour
        colour = parse_colour(colour)
        pos = self._position_for(colour)
        self.ready.wait()
        if self.board.passes >= 1 and not cleanup and self._estimate_wins(colour):
            return L.PASS
        result = self._search(pos, colour, multipv=L.BOARD_CAP + 1)
        if result.best_move is None:        # the time went on loading the kernels: expand the root at least
            from usi_engine.search.searcher import Limits
            result = self._searcher().search(pos, Limits(samples=1), multipv=L.BOARD_CAP + 1)
        if result.best_move is None:        # the game is over (two passes): nothing to search
            return L.PASS
        if (self.args.resign > 0 and result.children >= RESIGN_MIN_PLAYOUTS and
                self._winrate(result) < self.args.resign):
            return None
        move = result.best_move
        if move == L.PASS and result.root and len(result.root) > 1:
            dead_opponent = cleanup and any(st == "dead" and c != colour for st, c, _ in self.board.statuses())
            if dead_opponent or not self._estimate_wins(colour):
                move = next(r.move for r in result.root if r.move != L.PASS)
        return move

    # --- commands ----------------------------------------------------------------------------------
    def cmd_known(self, a):
        return "true" if len(a) == 1 and a[0] in self.commands else "false"

    def cmd_quit(self, a):
        self.quit = True
        return ""

    def _new_board(self):
        from usi_engine.go.goboard import GoBoard
        self.board = GoBoard(self.size, self.komi, self.args.ko)
        if self.searcher is not None:
            self.searcher.clear()

    def cmd_boardsize(self, a):
        if len(a) != 1 or not a[0].isdigit():
            raise GtpError("boardsize not an integer")
        n = int(a[0])
        if not max(5, L.MIN_SIZE) <= n <= L.MAX_SIZE:
            raise GtpError("unacceptable size")
        self.size = n
        self._new_board()
        return ""

    def cmd_clear(self, a):
        self._new_board()
        return ""

    def cmd_komi(self, a):
        try:
            value = float(a[0])
        except (IndexError, ValueError):
            raise GtpError("komi not a float") from None
        if not np.isfinite(value) or abs(value) > 1000:
            raise GtpError("komi not a float")
        self.komi = value
        self.board.komi = value
        return ""

    def _colour_vertex(self, a):
        from usi_engine.go.goboard import parse_colour
        if len(a) != 2:
            raise GtpError("invalid color or coordinate")
        try:
            return parse_colour(a[0]), self.board.parse_vertex(a[1])
        except ValueError:
            raise GtpError("invalid color or coordinate") from None

    def cmd_play(self, a):
        """The controller (server, GUI, referee) owns the ko rule, and most use simple ko (GNU Go, KGS):
        a move that only repeats an earlier position is accepted here, never generated by genmove."""
        colour, move = self._colour_vertex(a)
        try:
            self.board.play(colour, self.board.vertex(move), allow_superko=True)
        except ValueError:
            raise GtpError("illegal move") from None
        return ""

    def _colour(self, a):
        from usi_engine.go.goboard import parse_colour
        if len(a) != 1:
            raise GtpError("invalid color")
        try:
            return parse_colour(a[0])
        except ValueError:
            raise GtpError("invalid color") from None

    def _genmove(self, a, play=True, cleanup=False):
        colour = self._colour(a)
        move = self.choose_move(colour, cleanup)
        if move is None:
            return "resign"
        text = self.board.vertex(move)
        if play:
            self.board.play(colour, text)
        return text

    def cmd_genmove(self, a):
        return self._genmove(a)

    def cmd_reg_genmove(self, a):
        return self._genmove(a, play=False)

    def cmd_cleanup(self, a):
        return self._genmove(a, cleanup=True)

    def cmd_undo(self, a):
        try:
            self.board.undo()
        except ValueError:
            raise GtpError("cannot undo") from None
        return ""

    def cmd_final_score(self, a):
        try:
            return self.board.final_score()
        except Exception:
            raise GtpError("cannot score") from None

    def cmd_final_status(self, a):
        if len(a) != 1 or a[0].lower() not in ("alive", "dead", "seki"):
            raise GtpError("invalid status")
        return "\n".join(" ".join(group) for group in self.board.final_status(a[0].lower()))

    def cmd_time_settings(self, a):
        try:
            main, byo, stones = float(a[0]), float(a[1]), int(a[2])
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        if len(a) != 3:
            raise GtpError("syntax error")
        self.clock.settings(main, byo, stones)
        return ""

    def cmd_kgs_time(self, a):
        try:
            kind = a[0].lower()
            if kind == "none":
                self.clock.settings(0, 1, 0)
            elif kind == "absolute":
                self.clock.settings(float(a[1]), 0, 0)
            elif kind == "canadian":
                self.clock.settings(float(a[1]), float(a[2]), int(a[3]))
            elif kind == "byoyomi":     # periods of T seconds: count one period as a 1-stone Canadian period
                self.clock.settings(float(a[1]), float(a[2]), 1)
            else:
                raise GtpError("syntax error")
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        return ""

    def cmd_time_left(self, a):
        colour = self._colour(a[:1])
        try:
            secs, stones = float(a[1]), int(a[2])
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        self.clock.left[colour] = (secs, stones)
        self.clock.enabled = self.clock.enabled or self.clock.main > 0 or self.clock.byo > 0
        return ""

    def _board_empty(self):
        return not np.any((self.board.pos[L.BOARD:L.BOARD + L.BOARD_CAP] == L.BLACK) |
                          (self.board.pos[L.BOARD:L.BOARD + L.BOARD_CAP] == L.WHITE))

    def _place_handicap(self, vertices):
        for v in vertices:
            self.board.play(L.BLACK, v)
        self.board.to_move = L.WHITE

    def cmd_fixed_handicap(self, a):
        if len(a) != 1 or not a[0].isdigit():
            raise GtpError("invalid number of stones")
        if not self._board_empty():
            raise GtpError("board not empty")
        vertices = handicap_points(self.size, int(a[0]))
        self._place_handicap(vertices)
        return " ".join(vertices)

    def cmd_set_free_handicap(self, a):
        if not self._board_empty():
            raise GtpError("board not empty")
        try:
            points = [self.board.parse_vertex(v) for v in a]
        except ValueError:
            raise GtpError("bad vertex list") from None
        if len(points) < 2 or L.PASS in points or len(set(points)) != len(points) or \
                len(points) >= self.size * self.size:
            raise GtpError("bad vertex list")
        self._place_handicap([self.board.vertex(p) for p in points])
        return ""

    def cmd_loadsgf(self, a):
        from usi_engine.go.sgf import load_sgf
        if not a:
            raise GtpError("cannot load file")
        try:
            board, to_move = load_sgf(a[0], a[1] if len(a) > 1 else None, self.args.ko)
        except (OSError, ValueError) as e:
            raise GtpError(f"cannot load file ({e})") from None
        self.board, self.size, self.komi = board, board.size, board.komi
        if self.searcher is not None:
            self.searcher.clear()
        return "black" if to_move == L.BLACK else "white"

    def cmd_analyze_commands(self, a):
        return "\n".join([
            "plist/Dead Stones/final_status_list dead",
            "plist/Alive Stones/final_status_list alive",
            "plist/Seki Stones/final_status_list seki",
            "string/Final Score/final_score",
            "none/Analyze (lz)/lz-analyze %m 100",
        ])

    # --- lz-analyze --------------------------------------------------------------------------------
    analyze_interval = 1.0

    def info_line(self, result):
        """lz-analyze record line: one `info move ...` record per root move (KataGo's docs/GTP_Extensions.md format)."""
        records = []
        for order, r in enumerate(result.root):
            wr = int(round(10000 * r.winrate))
            records.append(f"info move {self.board.vertex(r.move)} visits {r.visits} winrate {wr} "
                           f"prior {int(round(10000 * r.prob))} lcb {wr} order {order} pv "
                           + " ".join(self.board.vertex(m) for m in r.pv))
        return " ".join(records)

    def analyze(self, ident, args, lines):
        """Stream info lines until the next input line arrives; returns that line (or None at EOF)."""
        colour = self.board.to_move
        interval = 1.0
        for tok in args:
            if tok.lower() in ("b", "w", "black", "white"):
                colour = self._colour([tok])
            elif tok.isdigit():
                interval = max(0.05, int(tok) / 100.0)
        self.analyze_interval = interval
        self.send(f"={ident}\n")
        pos = self._position_for(colour)
        self.ready.wait()
        s = self._searcher()

        def on_info(result):
            if result.root:
                self.send(self.info_line(result) + "\n")
        box = {}
        worker = threading.Thread(target=lambda: box.setdefault(
            "r", self._search(pos, colour, on_info=on_info, infinite=True, multipv=ANALYZE_MULTIPV)),
            daemon=True)
        worker.start()
        nxt = lines.get()
        s.stop()
        worker.join()
        self.send("\n")
        return nxt

    # --- dispatch ----------------------------------------------------------------------------------
    def handle(self, line):
        """Answer one cleaned, non-empty command line. Returns the response text (with the blank line)."""
        parts = line.split()
        ident = ""
        if parts and parts[0].isdigit():
            ident = parts.pop(0)
        if not parts:
            return f"?{ident} empty command\n\n"
        name, args = parts[0], parts[1:]
        handler = self.commands.get(name)
        if handler is None:
            return f"?{ident} unknown command\n\n"
        try:
            result = handler(args)
        except GtpError as e:
            return f"?{ident} {e}\n\n"
        except Exception as e:      # never let a command kill the engine
            traceback.print_exc(file=sys.stderr)
            return f"?{ident} internal error: {type(e).__name__}: {e}\n\n"
        return f"={ident} {result}\n\n" if result else f"={ident}\n\n"


def _reader(stream, lines):
    for raw in stream:
        lines.put(raw)
    lines.put(None)


def _warm_up(args, ready):
    """Load (or compile) the search and scoring kernels in the background with a tiny 5x5 search, so the
    first genmove does not pay for it."""
    try:
        from usi_engine.go.game import GoAdapter
        from usi_engine.go.goboard import GoBoard
        from usi_engine.search.searcher import Limits, SearchOptions, Searcher
        board = GoBoard(5, 0.5)
        board.final_score(playouts=4)
        Searcher(GoAdapter(5), SearchOptions(policy=args.policy, hash_mb=1, graph=not args.tree)).search(
            board.pos, Limits(samples=2))
    except Exception:
        traceback.print_exc(file=sys.stderr)
    finally:
        ready.set()


def build_parser():
    p = argparse.ArgumentParser(prog="usi-engine gtp", description="Go over GTP (MCSS / UCT / MC-RAVE).")
    p.add_argument("--policy", choices=sorted(POLICY_NAMES), default="rave",
                   help="tree policy: rave (MC-RAVE, default), mcss (softmax), uct")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--hash", type=float, default=256.0, help="node pool in MB")
    p.add_argument("--seconds", type=float, default=1.0, help="seconds per move without a GTP clock")
    p.add_argument("--playouts", type=int, default=None, help="playouts per move (children evaluated)")
    p.add_argument("--leaf-playouts", type=int, default=1, help="playouts per child for mcss/uct leaves (K)")
    p.add_argument("--t-sel", type=float, default=300.0, help="MCSS selection temperature (value scale 1000)")
    p.add_argument("--t-back", type=float, default=300.0, help="MCSS backup temperature")
    p.add_argument("--c-uct", type=float, default=300.0, help="UCT exploration (value units)")
    p.add_argument("--c-rave", type=float, default=0.0, help="RAVE exploration (outcomes in [0,1])")
    p.add_argument("--rave-bias", type=float, default=0.016, help="RAVE bias b of seed 000 eq. 47")
    p.add_argument("--rave-playouts", type=int, default=4,
                   help="RAVE: children given a playout per expansion (+ tactical ones; 0 = all)")
    p.add_argument("--resign", type=float, default=0.05, help="resign below this winrate (0 = never)")
    p.add_argument("--size", type=int, default=19)
    p.add_argument("--komi", type=float, default=7.5)
    p.add_argument("--ko", choices=("positional", "simple", "situational"), default="positional")
    p.add_argument("--tree", action="store_true", help="tree search (no transposition sharing)")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None, stdin=None, stdout=None):
    args = build_parser().parse_args(argv)
    args.policy = POLICY_NAMES[args.policy]
    stdin = stdin or sys.stdin
    engine = GtpEngine(args, stdout or sys.stdout)
    threading.Thread(target=_warm_up, args=(args, engine.ready), daemon=True).start()
    lines = queue.Queue()
    threading.Thread(target=_reader, args=(stdin, lines), daemon=True).start()
    pending = None
    while not engine.quit:
        raw = pending if pending is not None else lines.get()
        pending = None
        if raw is None:
            break
        line = clean_line(raw)
        if not line:
            continue
        parts = line.split()
        ident = parts[0] if parts[0].isdigit() else ""
        name = parts[1] if ident and len(parts) > 1 else parts[0]
        if name == "lz-analyze":
            try:
                pending = engine.analyze(ident, parts[2:] if ident else parts[1:], lines)
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                engine.send(f"?{ident} internal error: {e}\n\n")
                continue
            if pending is None:             # end of input while analysing
                break
            if not clean_line(pending):
                pending = None
            continue
        engine.send(engine.handle(line))
    return 0


__all__ = ["main", "GtpEngine", "clean_line", "handicap_points"]
