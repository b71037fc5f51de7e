"""Protocol fuzzing with the real engine processes: property-based command streams (hypothesis) sent to
`usi-engine` and `usi-engine gtp`, one process per protocol reused across examples.

USI: streams of valid, mutated and random command lines, every `go` followed later by `stop` (or finishing by
itself). The engine must stay alive and answer only with known response kinds, exactly one `readyok` per
`isready` and exactly one `bestmove` per `go`, and nothing after that.
GTP: streams of numbered or plain commands, valid, mutated or random. Every line that is not empty after
comment removal gets exactly one response: `=` or `?`, the id echoed when one was given, ended by a blank line.
"""

import string
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learn.match.engines import EngineError
from tests.test_gtp import GtpProcess
from tests.usi_driver import FIRST_ISREADY_TIMEOUT, UsiProcess

pytestmark = pytest.mark.process

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ANSWER_TIMEOUT = 30.0  # seconds for the answers of one example (a stalled engine fails the test)

# Printable text without line breaks: what a GUI or a corrupted pipe could put on one line.
JUNK = st.text(alphabet=string.ascii_letters + string.digits + string.punctuation + " \t", max_size=30)


def mutate(line: str, data) -> str:
    """Mutations of a valid line that keep its first word: drop, duplicate, swap, replace or cut tokens."""
    tokens = line.split()
    head, rest = tokens[:1], tokens[1:]
    kind = data.draw(st.sampled_from(["drop", "duplicate", "replace", "cut", "append", "swap"]))
    if rest:
        i = data.draw(st.integers(0, len(rest) - 1))
        if kind == "drop":
            rest.pop(i)
        elif kind == "duplicate":
            rest.insert(i, rest[i])
        elif kind == "replace":
            rest[i] = data.draw(JUNK.filter(lambda s: s.strip() != "")).strip()
        elif kind == "cut":
            rest = rest[:i]
        elif kind == "swap":
            j = data.draw(st.integers(0, len(rest) - 1))
            rest[i], rest[j] = rest[j], rest[i]
    if kind == "append" or not rest:
        rest.append(data.draw(JUNK).strip())
    return " ".join(head + [t for t in rest if t])


class _Drawer:
    """Lets mutate() draw inside a composite strategy."""

    def __init__(self, draw):
        self.draw = draw


# --- USI ---------------------------------------------------------------------------------------------
USI_RESPONSES = {"id", "option", "usiok", "readyok", "bestmove", "info"}
USI_COMMANDS = {"usi", "isready", "setoption", "usinewgame", "position", "go", "stop", "ponderhit", "gameover", "quit"}
USI_LINES = [
    "isready",
    "usinewgame",
    "usi",
    "stop",
    "ponderhit",
    "gameover win",
    "gameover lose",
    "gameover draw",
    "position startpos",
    "position startpos moves 7g7f 3c3d 8h2b+ 3a2b",
    "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1 moves 3c3d",
    "position sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1",
    "position sfen 8k/9/9/9/9/9/9/9/K8 b - 1",
    "setoption name MultiPV value 2",
    "setoption name MultiPV value 1",
    "setoption name USI_Ponder value true",
    "setoption name NoSuchOption value 3",
    "setoption name PvInterval value 0",
]
USI_GOES = [
    "go nodes 300",
    "go depth 2",
    "go movetime 30",
    "go btime 0 wtime 0 byoyomi 50",
    "go infinite",
    "go ponder btime 1000 wtime 1000 byoyomi 50",
    "go btime 200 wtime 200 binc 10 winc 10",
]


@st.composite
def usi_streams(draw):
    """(lines, number of go, number of isready): blocks of commands; a go block is `go`, a few other lines
    (which may include isready), then `stop` or `ponderhit` + `stop`."""
    lines, goes = [], 0
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["valid", "mutated", "junk", "go"]))
        if kind == "go":
            lines.append(draw(st.sampled_from(USI_GOES)))
            goes += 1
            others = draw(st.lists(st.sampled_from(USI_LINES), max_size=2))
            lines += [s for s in others if s not in ("stop", "ponderhit", "usi")]
            lines += draw(st.sampled_from([["stop"], ["ponderhit", "stop"]]))
        elif kind == "valid":
            lines.append(draw(st.sampled_from(USI_LINES)))
        elif kind == "mutated":
            lines.append(mutate(draw(st.sampled_from(USI_LINES)), _Drawer(draw)))
        else:
            junk = draw(JUNK)
            if not junk.split() or junk.split()[0] not in USI_COMMANDS:
                lines.append(junk)
    return lines, goes, sum(1 for s in lines if s.split()[:1] == ["isready"])


@pytest.fixture(scope="module")
def usi():
    engine = UsiProcess(args=())
    try:
        engine.handshake()
        yield engine
    finally:
        engine.close()


def test_usi_id_name_carries_the_project_version(usi):
    import usi_engine

    lines, _ = usi.usi()
    assert f"id name MCSS {usi_engine.__version__}" in lines


@FUZZ
@given(stream=usi_streams())
def test_usi_answers_only_as_the_protocol_allows(usi, stream):
    lines, goes, readies = stream
    for line in lines:
        usi.send(line)
    usi.send("stop")  # a `go` cut short by a mutated line must still end
    usi.send("isready")
    readies += 1
    got, bestmoves, readyoks = [], 0, 0
    deadline = time.monotonic() + ANSWER_TIMEOUT
    while bestmoves < goes or readyoks < readies:
        try:
            _, line = usi.engine.readline(deadline)
        except EngineError as e:
            raise AssertionError(f"{e.kind}: sent {lines}, got {got[-20:]}; log: {usi.log_tail()}") from None
        got.append(line)
        word = line.split()[:1]
        bestmoves += word == ["bestmove"]
        readyoks += word == ["readyok"]
    got += usi.drain(0.2)
    words = [line.split()[0] for line in got if line.strip()]
    assert set(words) <= USI_RESPONSES, (lines, got)
    assert words.count("bestmove") == goes and words.count("readyok") == readies, (lines, got)
    assert usi.proc.poll() is None


# --- GTP ---------------------------------------------------------------------------------------------
GTP_LINES = [
    "protocol_version",
    "name",
    "version",
    "known_command play",
    "known_command nonsense",
    "list_commands",
    "boardsize 9",
    "boardsize 7",
    "boardsize 19",
    "clear_board",
    "komi 6.5",
    "komi 7",
    "play b E5",
    "play white C3",
    "play b pass",
    "undo",
    "showboard",
    "final_score",
    "final_status_list dead",
    "time_settings 0 1 1",
    "time_left b 10 0",
    "fixed_handicap 2",
    "genmove b",
    "genmove w",
    "reg_genmove b",
    "kgs-time_settings none",
    "gogui-analyze_commands",
]


def expected_answer(line: str) -> tuple[bool, str]:
    """(whether the engine must answer the line, the id it must echo), by GTP's input rules (§2.2)."""
    text = "".join(ch for ch in line.split("#", 1)[0].replace("\t", " ") if ch >= " ").strip()
    if not text:
        return False, ""
    first = text.split()[0]
    return True, first if first.isdigit() else ""


@st.composite
def gtp_streams(draw):
    lines = []
    genmoves = 0
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["valid", "valid", "mutated", "junk"]))
        if kind == "junk":
            line = draw(JUNK)
        else:
            line = draw(st.sampled_from(GTP_LINES))
            if kind == "mutated":
                line = mutate(line, _Drawer(draw))
        if "genmove" in line:
            genmoves += 1
            if genmoves > 2:
                continue
        if {"lz-analyze", "quit"} & set(line.replace("\t", " ").split()[:2]):
            continue  # streaming and ending commands are tested in test_gtp.py
        if draw(st.booleans()):
            line = f"{draw(st.integers(0, 10**6))} {line}"
        lines.append(line)
    return lines


@pytest.fixture(scope="module")
def gtp():
    engine = GtpProcess("--size", "9", "--seconds", "0.1", "--resign", "0")
    try:
        assert engine.ask("1 name", timeout=FIRST_ISREADY_TIMEOUT)[0] == "=1 MCSS"
        # the first genmove compiles the Go kernels (minutes on a cold cache): not inside an example's timeout
        assert engine.ask("2 genmove b", timeout=FIRST_ISREADY_TIMEOUT)[0].startswith("=2 ")
        assert engine.ask("3 clear_board") == ["=3"]
        yield engine
    finally:
        engine.close()


@FUZZ
@given(stream=gtp_streams())
def test_gtp_answers_every_command_once_with_its_id(gtp, stream):
    expected = [expected_answer(line) for line in stream]
    for line in stream:
        gtp.send(line)
    for line, (answers, ident) in zip(stream, expected):
        if not answers:
            continue
        response = gtp.response(ANSWER_TIMEOUT)
        head = response[0]
        assert head[:1] in ("=", "?"), (line, response)
        assert head[1:].split(" ", 1)[0] == ident, (line, response)
    gtp.send("99 protocol_version")  # nothing left over: the next answer is this one's
    assert gtp.response(ANSWER_TIMEOUT) == ["=99 2"], stream
    assert gtp.proc.poll() is None
