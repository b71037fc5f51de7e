"""GTP version 2 front-end for Go (`usi-engine gtp [options]`): the GTP grammar and dispatch only.

Rules live in usi_engine/go/ (GoBoard), the move policy (search setup, playouts, pass and resignation
rules, analysis data) in usi_engine/go/player.py (GoPlayer), the time plan in usi_engine/timeman.py
(CanadianClock, fed by time_settings / kgs-time_settings / time_left), the command line in
usi_engine/gtp_options.py. Without a clock, `--seconds` per move (and/or `--playouts`) limits the search.

One reader thread turns stdin into a queue of cleaned lines (control characters dropped, tabs to spaces,
`#` comments cut, empty lines skipped); the main thread answers them in order, `=id result` or
`?id message`, each followed by an empty line (GTP version 2, docs/references.md). A failing command never ends the
loop: expected failures carry the spec's texts, anything unexpected becomes `? internal error: ...`
(details on stderr). `lz-analyze` streams `info ...` lines until the next input line (even an empty one).

Start-up: GTP has no `isready`, and controllers allow a slow first response but not a slow timed move. So
the kernels are loaded (or, on a first start with an empty numba cache, compiled: tens of seconds) before
the first command other than `quit` is answered, with a line on stderr meanwhile; no timed `genmove` waits
for a compile.
"""

import queue
import sys
import threading
import time
import traceback

import numpy as np

from usi_engine.go import layout as L
from usi_engine.go.goboard import COLUMNS, GoBoard, parse_colour
from usi_engine.go.player import GoPlayer
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.timeman import CanadianClock

NAME = "MCSS"
# Not the package version: Lizzie parses `version` as X.Y and warns unless the minor number is at least 15
# for an engine not named KataGo (Lizzie's Leelaz.java), so GTP answers a Leela Zero-like version.
VERSION = "0.17"
ANALYZE_MULTIPV = 10
DEFAULT_ANALYZE_INTERVAL = 1.0  # s between lz-analyze reports (the argument is in centiseconds)
MIN_ANALYZE_INTERVAL = 0.05
STARS = {
    2: "G7 C3",
    3: "G7 C3 C7",
    4: "C7 G7 C3 G3",
    5: "C7 G7 C3 G3 E5",
    6: "C7 G7 C5 G5 C3 G3",
    7: "C7 G7 C5 G5 C3 G3 E5",
    8: "C7 E7 G7 C5 G5 C3 E3 G3",
    9: "C7 E7 G7 C5 G5 C3 E3 G3 E5",
}
COLOUR_WORDS = ("b", "w", "black", "white")


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
    return [f"{COLUMNS[coord[v[0]]]}{row[v[1]] + 1}" for v in STARS[n].split()]


def analysis_line(board: GoBoard, colour: int, result) -> str:
    """lz-analyze record line: one `info move ...` record per root move that `colour` may play on `board` (KataGo's
    docs/GTP_Extensions.md format). A transposed node's children may include a move that positional superko forbids
    under this game's history (GoPlayer.legal_choices): such a move is left out."""
    records: list[str] = []
    for r in result.root:
        vertex = board.vertex(r.move)
        if not board.is_legal(colour, vertex):
            continue
        wr = int(round(10000 * r.winrate))
        records.append(
            f"info move {vertex} visits {r.visits} winrate {wr} "
            f"prior {int(round(10000 * r.prob))} lcb {wr} order {len(records)} pv "
            + " ".join(board.vertex(m) for m in r.pv)
        )
    return " ".join(records)


class GtpEngine:
    """Game state and command handlers; `handle(line)` answers one command."""

    def __init__(self, args, out=sys.stdout):
        self.args = args
        self.out = out
        self.lock = threading.Lock()
        self.board = GoBoard(args.size, args.komi, args.ko)
        self.size, self.komi = args.size, args.komi
        self.clock = CanadianClock()
        self.player = GoPlayer(player_settings(args))
        self.quit = False
        self.commands = {
            "protocol_version": lambda a: "2",
            "name": lambda a: NAME,
            "version": lambda a: VERSION,
            "known_command": self.cmd_known,
            "list_commands": lambda a: "\n".join(sorted(self.commands)),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "undo": self.cmd_undo,
            "showboard": lambda a: "\n" + self.board.to_string(),
            "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
            "kgs-time_settings": self.cmd_kgs_time,
            "kgs-genmove_cleanup": self.cmd_cleanup,
            "loadsgf": self.cmd_loadsgf,
            "fixed_handicap": self.cmd_fixed_handicap,
            "place_free_handicap": self.cmd_fixed_handicap,
            "set_free_handicap": self.cmd_set_free_handicap,
            "reg_genmove": self.cmd_reg_genmove,
            "gogui-analyze_commands": self.cmd_analyze_commands,
            "gogui-playout_moves": self.cmd_playout_moves,
            "lz-analyze": None,
        }

    # --- output ------------------------------------------------------------------------------------
    def send(self, text):
        with self.lock:
            self.out.write(text)
            self.out.flush()

    # --- commands ----------------------------------------------------------------------------------
    def cmd_known(self, a):
        return "true" if len(a) == 1 and a[0] in self.commands else "false"

    def cmd_quit(self, a):
        self.quit = True
        return ""

    def _new_board(self):
        self.board = GoBoard(self.size, self.komi, self.args.ko)
        self.player.new_game()

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
        if len(a) != 1:
            raise GtpError("invalid color")
        try:
            return parse_colour(a[0])
        except ValueError:
            raise GtpError("invalid color") from None

    def _genmove(self, a, play=True, cleanup=False):
        colour = self._colour(a)
        seconds = self.clock.seconds_for_move(colour, self.player.expected_moves_left(self.board))
        if seconds is None:
            seconds = self.args.seconds
        move = self.player.choose_move(self.board, colour, seconds, cleanup)
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

    def _set_clock(self, main, period, stones):
        try:
            self.clock.set(main, period, stones)
        except ValueError:
            raise GtpError("syntax error") from None

    def cmd_time_settings(self, a):
        try:
            main, period, stones = float(a[0]), float(a[1]), int(a[2])
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        if len(a) != 3:
            raise GtpError("syntax error")
        self._set_clock(main, period, stones)
        return ""

    def cmd_kgs_time(self, a):
        try:
            kind = a[0].lower()
            if kind == "none":
                self._set_clock(0, 1, 0)
            elif kind == "absolute":
                self._set_clock(float(a[1]), 0, 0)
            elif kind == "canadian":
                self._set_clock(float(a[1]), float(a[2]), int(a[3]))
            elif kind == "byoyomi":  # periods of T seconds: count one period as a 1-stone Canadian period
                self._set_clock(float(a[1]), float(a[2]), 1)
            else:
                raise GtpError("syntax error")
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        return ""

    def cmd_time_left(self, a):
        colour = self._colour(a[:1])
        try:
            self.clock.time_left(colour, float(a[1]), int(a[2]))
        except (IndexError, ValueError):
            raise GtpError("syntax error") from None
        return ""

    def _board_empty(self):
        stones = self.board.pos[L.BOARD : L.BOARD + L.BOARD_CAP]
        return not np.any((stones == L.BLACK) | (stones == L.WHITE))

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
        if (
            len(points) < 2
            or L.PASS in points
            or len(set(points)) != len(points)
            or len(points) >= self.size * self.size
        ):
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
        self.player.new_game()
        return "black" if to_move == L.BLACK else "white"

    def cmd_analyze_commands(self, a):
        return "\n".join(
            [
                "plist/Dead Stones/final_status_list dead",
                "plist/Alive Stones/final_status_list alive",
                "plist/Seki Stones/final_status_list seki",
                "string/Final Score/final_score",
                "none/Analyze (lz)/lz-analyze %m 100",
                "gfx/Playout Moves/gogui-playout_moves",
            ]
        )

    def cmd_playout_moves(self, a):
        """GoGui gfx: the first moves of PLAYOUT_MOVE_DRAWS playouts of the side to move, in whole percent (as
        Pachi's command of that name: `VAR colour best`, then `LABEL vertex percent` for each move drawn; passes
        left out)."""
        colour = self.board.to_move
        draws = self.player.playout_moves(self.board, colour)
        total = sum(k for _, k in draws)
        lines = [f"LABEL {self.board.vertex(m)} {round(100 * k / total)}" for m, k in draws if m != L.PASS]
        best = [m for m, _ in draws if m != L.PASS]
        if best:
            lines.insert(0, f"VAR {'b' if colour == L.BLACK else 'w'} {self.board.vertex(best[0])}")
        return "\n" + "\n".join(lines) if lines else ""

    # --- lz-analyze --------------------------------------------------------------------------------
    def analyze(self, ident, args, lines):
        """`lz-analyze [colour] [interval]`: stream info lines until the next input line arrives; returns
        that line (or None at EOF)."""
        colour = self.board.to_move
        interval = DEFAULT_ANALYZE_INTERVAL
        for tok in args:
            if tok.lower() in COLOUR_WORDS:
                colour = self._colour([tok])
            elif tok.isdigit():
                interval = max(MIN_ANALYZE_INTERVAL, int(tok) / 100.0)
        self.send(f"={ident}\n")
        board = self.board

        def report(result) -> None:
            line = analysis_line(board, colour, result)
            if line:  # an empty line would end the response
                self.send(line + "\n")

        analysis = self.player.analyze(board, colour, report, interval, ANALYZE_MULTIPV)
        nxt = lines.get()
        analysis.stop()
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
        except Exception as e:  # never let a command kill the engine
            traceback.print_exc(file=sys.stderr)
            return f"?{ident} internal error: {type(e).__name__}: {e}\n\n"
        return f"={ident} {result}\n\n" if result else f"={ident}\n\n"


def _reader(stream, lines):
    for raw in stream:
        lines.put(raw)
    lines.put(None)


def _warm_up(player: GoPlayer) -> None:
    """Load or compile the kernels (see the module docstring), telling the user on stderr."""
    start = time.perf_counter()
    print(
        f"{NAME}: loading the search kernels (a first start compiles them, which takes a minute or so)",
        file=sys.stderr,
        flush=True,
    )
    try:
        player.warm_up()
    except Exception:
        traceback.print_exc(file=sys.stderr)
    print(f"{NAME}: ready after {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)


def _command_name(line: str) -> tuple[str, str, list]:
    """(id, command name, arguments) of a cleaned, non-empty line."""
    parts = line.split()
    ident = parts.pop(0) if parts[0].isdigit() else ""
    return ident, (parts[0] if parts else ""), parts[1:]


def main(argv=None, stdin=None, stdout=None):
    args = build_parser().parse_args(argv)
    stdin = stdin or sys.stdin
    engine = GtpEngine(args, stdout or sys.stdout)
    warm = threading.Thread(target=_warm_up, args=(engine.player,), daemon=True)
    warm.start()
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
        ident, name, rest = _command_name(line)
        if name != "quit":
            warm.join()  # the first answer waits for the kernels (module docstring)
        if name == "lz-analyze":
            try:
                pending = engine.analyze(ident, rest, lines)
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                engine.send(f"?{ident} internal error: {e}\n\n")
                continue
            if pending is None:  # end of input while analysing
                break
            if not clean_line(pending):
                pending = None
            continue
        engine.send(engine.handle(line))
    return 0


__all__ = ["main", "GtpEngine", "clean_line", "handicap_points"]
