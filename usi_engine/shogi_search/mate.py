"""Mate solver (tsume) for `go mate` and for short mates at the root: df-pn in numba.

df-pn (Nagai 2002, "Df-pn algorithm for searching AND/OR trees and its applications", the MID procedure
with thresholds): every node has a proof number pn and a disproof number dn from the attacker's view.
OR nodes (attacker to move) have as children the attacker's CHECKING moves (drops and promotions
included, taken from the legal-move generator, so evasions that also check are covered when the
attacker stands in check); AND nodes (defender to move) have every legal reply. Then

    OR:  pn = min_c pn(c),  dn = sum_c dn(c)        AND: pn = sum_c pn(c),  dn = min_c dn(c)

and a node is searched until pn >= thpn or dn >= thdn. The child chosen (least pn at OR, least dn at
AND) gets the thresholds  OR: thpn_c = min(thpn, pn_2 + 1), thdn_c = thdn - dn + dn(c);
AND: thdn_c = min(thdn, dn_2 + 1), thpn_c = thpn - pn + pn(c)  (pn_2 / dn_2 the second least).
Terminals: an OR node without checks is disproved (INF, 0); an AND node without replies is mated
(0, INF); a pawn-drop mate is never generated (illegal in movegen). Initial values of a child not yet
in the table: after a check, pn = number of the defender's replies (a mate in one is found as pn 0 when
the check is generated), dn = 1; after a reply (1, 1).

Repetition: a child whose position already stands on the current search path is disproved for the
attacker (a repeated check sequence is perpetual check, a loss for the checker). The result is kept
out of the table only on that path, so, as usual for df-pn, a disproof that depended on the path can
reach the table (the graph-history-interaction problem); proofs never depend on it.
Depth cap: a child at the ply cap counts as disproved unless it is a mate already (a cutoff is recorded,
and a disproved root is then reported as `timeout`, not `nomate`).

Transposition table: preallocated arrays (key, pn, dn, mate distance, generation, work), buckets of
TT_WAYS entries, replacement of the entry with the least work. A generation number instead of clearing:
entries of older generations count as empty, so a new solve touches no memory up front.
Mate distance (plies to mate along the proof, stored with every proven node): OR = 1 + least over proven
children, AND = 1 + greatest over the children (0 for a mated node); the line follows it (the attacker
takes the quickest proven check, the defender the longest defence). After a proof, `MateSolver.solve`
tries to shorten the line: a new solve capped at (length - 2) plies, while time and a node budget last.

The kernel is iterative (an explicit stack of frames), so it caches like every other kernel.
"""

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.shogi.layout import (
    BOARD,
    DROP_BASE,
    HIST,
    HIST_STRIDE,
    H_KEY,
    KEY,
    KING_SQ,
    KNIGHT,
    MAX_MOVES,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PLY,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, first_piece, undo_move
from usi_engine.shogi.tables import ADJACENT_ATTACK, KNIGHT_TARGETS, LINE_DIR, NEIGHBOUR, OPPOSITE, SLIDE

INF = 1 << 40  # proof / disproof number of a decided node
MAX_MATE_PLY = 127  # longest line the solver follows (frames of the explicit stack)
TT_ENTRIES = 1 << 20  # default table size (about 40 MB)
TT_WAYS = 4
FOUND, NONE, STOPPED = 1, 0, -1
# control words
C_STOP, C_NODES, C_NODE_LIMIT, C_GEN, C_MAX_PLY, C_CUTOFF = 0, 1, 2, 3, 4, 5
CTL_SIZE = 6
# table arrays (tuple indices)
T_KEY, T_PN, T_DN, T_DIST, T_GEN, T_WORK = 0, 1, 2, 3, 4, 5
# shortening after a proof: each shorter attempt may use this many times the nodes of the first proof
SHORTEN_NODE_FACTOR = 4
SHORTEN_MIN_NODES = 20000
TIMER_POLL = 0.002


def new_table(entries):
    """The transposition table: a tuple of arrays (see T_*), `entries` a power of two >= TT_WAYS."""
    if entries < TT_WAYS or entries & (entries - 1):
        raise ValueError("mate table size must be a power of two >= TT_WAYS")
    return (
        np.zeros(entries, np.int64),
        np.zeros(entries, np.int64),
        np.zeros(entries, np.int64),
        np.zeros(entries, np.int32),
        np.zeros(entries, np.int32),
        np.zeros(entries, np.int64),
    )


def new_frames(max_ply=MAX_MATE_PLY):
    """Per-ply scratch of the explicit stack: moves, child keys, initial child pn/dn, counts, thresholds."""
    p = max_ply + 2
    return (
        np.zeros((p, MAX_MOVES), np.int32),
        np.zeros((p, MAX_MOVES), np.int64),
        np.zeros((p, MAX_MOVES), np.int64),
        np.zeros((p, MAX_MOVES), np.int64),
        np.zeros(p, np.int64),
        np.zeros(p, np.int64),
        np.zeros(p, np.int64),
        np.zeros(MAX_MOVES, np.int32),
    )


@bare_kernel
def tt_find(tt, key, gen):
    """Slot of `key` in the current generation, or -1."""
    keys = tt[T_KEY]
    base = key & (keys.shape[0] - 1) & ~(TT_WAYS - 1)
    for s in range(base, base + TT_WAYS):
        if keys[s] == key and tt[T_GEN][s] == gen:
            return s
    return -1


@bare_kernel
def tt_store(tt, key, gen, pn, dn, dist, work):
    """Store a node: its own slot, else a free (older generation) slot, else the least-work entry."""
    keys = tt[T_KEY]
    base = key & (keys.shape[0] - 1) & ~(TT_WAYS - 1)
    slot = -1
    for s in range(base, base + TT_WAYS):
        if tt[T_GEN][s] != gen or keys[s] == key:
            slot = s
            break
        if slot < 0 or tt[T_WORK][s] < tt[T_WORK][slot]:
            slot = s
    keys[slot] = key
    tt[T_PN][slot] = pn
    tt[T_DN][slot] = dn
    tt[T_DIST][slot] = dist
    tt[T_GEN][slot] = gen
    tt[T_WORK][slot] = work


@bare_kernel
def gives_check(pos, move):
    """Whether the legal `move` checks the opponent's king, without making it: the moved (or dropped,
    or promoted) piece attacks the king, or it uncovers a slider of ours aimed at the king."""
    us = pos[SIDE]
    ek = pos[KING_SQ + 1 - us]
    if ek < 0:
        return False
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    if frm > DROP_BASE:
        piece = frm - DROP_BASE + WHITE_BIT * us
    else:
        piece = pos[BOARD + frm] | (PROMOTE if move & MOVE_PROMO_BIT else 0)
    if piece & 15 == KNIGHT:
        if KNIGHT_TARGETS[us, to, 0] == ek or KNIGHT_TARGETS[us, to, 1] == ek:
            return True
    else:
        d = LINE_DIR[ek, to]
        if d >= 0:
            back = OPPOSITE[d]
            if NEIGHBOUR[ek, d] == to:
                if ADJACENT_ATTACK[piece, back] == 1:
                    return True
            elif SLIDE[piece, back] == 1:
                s = NEIGHBOUR[ek, d]
                while s != to and (pos[BOARD + s] == 0 or s == frm):
                    s = NEIGHBOUR[s, d]
                if s == to:
                    return True
    if frm > DROP_BASE:
        return False
    d = LINE_DIR[ek, frm]
    if d < 0 or LINE_DIR[ek, to] == d or first_piece(pos, ek, d) != frm:
        return False
    s = first_piece(pos, frm, d)
    return s >= 0 and (pos[BOARD + s] >> 4) == us and SLIDE[pos[BOARD + s], OPPOSITE[d]] == 1


@bare_kernel
def expand(pos, or_node, moves, keys, ipn, idn, scratch):
    """Children of a node into the frame rows: checks (OR) or all replies (AND), with their keys and
    initial pn/dn (see the module docstring). Returns the count."""
    n_all = gen_legal(pos, moves)
    k = 0
    for i in range(n_all):
        m = moves[i]
        if or_node and not gives_check(pos, m):
            continue
        do_move(pos, m)
        pn, dn = 1, 1
        if or_node:
            replies = gen_legal(pos, scratch)
            if replies == 0:
                pn, dn = 0, INF
            else:
                pn = replies
        moves[k] = m
        keys[k] = pos[KEY]
        ipn[k] = pn
        idn[k] = dn
        undo_move(pos)
        k += 1
    return k


@bare_kernel
def on_path(pos, base, key):
    """Whether `key` (a position one ply after the current one) stands earlier on the search path
    (positions base .. current ply with the same side to move)."""
    i = pos[PLY] - 1
    while i >= base:
        if pos[HIST + HIST_STRIDE * i + H_KEY] == key:
            return True
        i -= 2
    return False


@bare_kernel
def child_values(pos, tt, gen, base, at_cap, key, ipn, idn):
    """(pn, dn, dist) of a child: the table, else its initial values; repetition and the ply cap
    (unless the child is already a mate) disprove it. dist < 0 when unknown. Third value of a cap hit: -2."""
    if on_path(pos, base, key):
        return INF, 0, -1
    s = tt_find(tt, key, gen)
    if s >= 0:
        pn, dn, dist = tt[T_PN][s], tt[T_DN][s], np.int64(tt[T_DIST][s])
    else:
        pn, dn, dist = ipn, idn, np.int64(0 if ipn == 0 else -1)
    if at_cap and pn != 0:
        return INF, 0, -2
    return pn, dn, dist


@bare_kernel
def dfpn(pos, tt, frames, ctl):
    """df-pn from pos (attacker to move) until the root is decided, ctl[C_STOP] is set or the node limit
    is reached: FOUND (mate), NONE (disproved) or STOPPED. pos is unchanged on return."""
    moves, ckeys, ipn, idn, counts, thpn, thdn, scratch = frames
    gen = ctl[C_GEN]
    max_ply = min(ctl[C_MAX_PLY], counts.shape[0] - 2)
    base = pos[PLY]
    ply = 0
    thpn[0] = INF - 1
    thdn[0] = INF - 1
    # the root is an OR node; np.bool_, not the literal True, which numba would compile as a second expand
    counts[0] = expand(pos, np.bool_(True), moves[0], ckeys[0], ipn[0], idn[0], scratch)
    ctl[C_NODES] += 1
    start_nodes = ctl[C_NODES]
    while True:
        or_node = (ply & 1) == 0
        at_cap = ply + 1 >= max_ply
        n = counts[ply]
        pn = INF if or_node else 0
        dn = 0 if or_node else INF
        best, second = -1, INF
        best_pn, best_dn = INF, INF
        dist = -1
        for i in range(n):
            cpn, cdn, cdist = child_values(pos, tt, gen, base, at_cap, ckeys[ply, i], ipn[ply, i], idn[ply, i])
            if cdist == -2:
                ctl[C_CUTOFF] = 1
            if or_node:
                dn = min(INF, dn + cdn)
                if cpn == 0 and cdist >= 0 and (dist < 0 or cdist + 1 < dist):
                    dist = cdist + 1
                if cpn < best_pn:
                    second, best, best_pn, best_dn = best_pn, i, cpn, cdn
                elif cpn < second:
                    second = cpn
            else:
                pn = min(INF, pn + cpn)
                if cdist < 0 or cdist + 1 > dist:
                    dist = cdist + 1 if cdist >= 0 else MAX_MATE_PLY + 1
                if cdn < best_dn:
                    second, best, best_pn, best_dn = best_dn, i, cpn, cdn
                elif cdn < second:
                    second = cdn
        if or_node:
            pn = best_pn
        else:
            dn = best_dn
            if n == 0:
                dist = 0
        stop = ctl[C_STOP] != 0 or ctl[C_NODES] >= ctl[C_NODE_LIMIT]
        if pn >= thpn[ply] or dn >= thdn[ply] or stop:
            tt_store(tt, pos[KEY], gen, pn, dn, dist if pn == 0 else -1, ctl[C_NODES] - start_nodes)
            if ply == 0:
                return FOUND if pn == 0 else (NONE if dn == 0 else STOPPED)
            if stop:
                for _ in range(ply):
                    undo_move(pos)
                return STOPPED
            undo_move(pos)
            ply -= 1
            continue
        if or_node:
            cthpn = min(thpn[ply], second + 1)
            cthdn = min(INF - 1, thdn[ply] - dn + best_dn)
        else:
            cthdn = min(thdn[ply], second + 1)
            cthpn = min(INF - 1, thpn[ply] - pn + best_pn)
        do_move(pos, moves[ply, best])
        ply += 1
        thpn[ply] = cthpn
        thdn[ply] = cthdn
        counts[ply] = expand(pos, not or_node, moves[ply], ckeys[ply], ipn[ply], idn[ply], scratch)
        ctl[C_NODES] += 1


@bare_kernel
def children(pos, tt, frames, ctl, or_node, out_pn, out_dn, out_dist):
    """Children of pos with their current (pn, dn, dist) into frame row 0 and out_*; returns the count.
    Used to read the proof (the mating line) out of the table."""
    moves, ckeys, ipn, idn, counts, thpn, thdn, scratch = frames
    n = expand(pos, or_node, moves[0], ckeys[0], ipn[0], idn[0], scratch)
    for i in range(n):
        s = tt_find(tt, ckeys[0, i], ctl[C_GEN])
        if s >= 0:
            out_pn[i], out_dn[i], out_dist[i] = tt[T_PN][s], tt[T_DN][s], tt[T_DIST][s]
        else:
            out_pn[i], out_dn[i], out_dist[i] = ipn[0, i], idn[0, i], 0 if ipn[0, i] == 0 else -1
    return n


@dataclass
class MateResult:
    """`status` is 'mate', 'nomate' or 'timeout'; `line` the USI moves of the mate (attacker first)."""

    status: str
    line: list = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0

    @property
    def plies(self) -> int:
        return len(self.line)


class MateSolver:
    """A df-pn solver with its table and stack allocated once (at isready); one solve at a time."""

    def __init__(self, entries=TT_ENTRIES):
        self.tt = new_table(entries)
        self.frames = new_frames()
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self.lock = threading.Lock()
        self._buf = (np.zeros(MAX_MOVES, np.int64), np.zeros(MAX_MOVES, np.int64), np.zeros(MAX_MOVES, np.int64))

    def solve(
        self, board, time_limit_s=None, stop_event=None, max_ply=MAX_MATE_PLY, shorten=True, node_limit=None
    ) -> MateResult:
        """Mate for the side to move of `board` (unchanged) within `time_limit_s` (None: until
        `stop_event` is set or the node limit), at most `max_ply` plies; then shorter lines while the
        time and SHORTEN_NODE_FACTOR x the nodes of the first proof last (if `shorten`)."""
        with self.lock:
            start = time.perf_counter()
            result = self._timed(time_limit_s, stop_event, lambda: self._solve(board, max_ply, shorten, node_limit))
            result.nodes = int(self.ctl[C_NODES])
            result.seconds = time.perf_counter() - start
            return result

    def mate_distance(self, board, max_ply, node_limit, time_limit_s=None, stop_event=None) -> tuple[int, int]:
        """(plies to mate for the side to move of `board`, nodes searched): the distance of the proof df-pn
        finds within `max_ply` plies, `node_limit` nodes and `time_limit_s` (not necessarily the shortest
        mate), or -1 when none is proven. The board is unchanged. No line is read and none is shortened:
        the cheap question a search asks about a position (ShogiAdapter.root_verifier)."""
        with self.lock:
            work = with_room(board, MAX_MATE_PLY + 4)
            status = self._timed(time_limit_s, stop_event, lambda: self._run(work.pos, max_ply, node_limit))
            nodes = int(self.ctl[C_NODES])
            if status != FOUND:
                return -1, nodes
            s = tt_find(self.tt, work.pos[KEY], self.ctl[C_GEN])
            return (int(self.tt[T_DIST][s]) if s >= 0 else -1), nodes

    def _timed(self, time_limit_s, stop_event, run):
        """run() with the node counter reset and the stop word set at the time limit or by stop_event."""
        end = None if time_limit_s is None else time.perf_counter() + time_limit_s
        self.ctl[C_STOP] = 0
        self.ctl[C_NODES] = 0
        done = threading.Event()
        watcher = threading.Thread(target=self._timer, args=(end, stop_event, done), daemon=True)
        watcher.start()
        try:
            return run()
        finally:
            done.set()

    def _timer(self, end, stop_event, done):
        while not done.wait(TIMER_POLL):
            if (stop_event is not None and stop_event.is_set()) or (end is not None and time.perf_counter() >= end):
                self.ctl[C_STOP] = 1
                return

    def _run(self, pos, max_ply, node_limit):
        """One df-pn run from pos in a fresh generation."""
        self.ctl[C_GEN] += 1
        self.ctl[C_MAX_PLY] = max_ply
        self.ctl[C_CUTOFF] = 0
        self.ctl[C_NODE_LIMIT] = INF if node_limit is None else self.ctl[C_NODES] + node_limit
        return dfpn(pos, self.tt, self.frames, self.ctl)

    def _solve(self, board, max_ply, shorten, node_limit):
        work = with_room(board, MAX_MATE_PLY + 4)
        status = self._run(work.pos, max_ply, node_limit)
        if status == NONE:
            return MateResult("timeout" if self.ctl[C_CUTOFF] else "nomate")
        if status == STOPPED:
            return MateResult("timeout")
        line = self.mate_line(work)
        if line is None:
            return MateResult("timeout")
        first_nodes = int(self.ctl[C_NODES])
        while shorten and len(line) > 1 and not self.ctl[C_STOP]:
            budget = max(SHORTEN_MIN_NODES, SHORTEN_NODE_FACTOR * first_nodes)
            if self._run(work.pos, len(line) - 2, budget) != FOUND:
                break
            shorter = self.mate_line(work)
            if shorter is None or len(shorter) >= len(line):
                break
            line = shorter
        return MateResult("mate", line)

    def mate_line(self, board):
        """The mating line read from the table after a proof (attacker: quickest proven check; defender:
        longest defence); a position whose proof was overwritten is proved again. None if that fails
        (stopped) or the line does not end in mate."""
        from usi_engine.shogi.sfen import move_to_usi

        work = board.copy()
        line = []
        pn, dn, dist = self._buf
        while len(line) <= 2 * MAX_MATE_PLY:
            or_node = len(line) % 2 == 0
            n = children(work.pos, self.tt, self.frames, self.ctl, or_node, pn, dn, dist)
            moves = self.frames[0][0, :n].copy()
            if not or_node and n == 0:
                return line if work.is_checkmate() else None
            if or_node:
                proven = [i for i in range(n) if pn[i] == 0 and dist[i] >= 0]
                if not proven:
                    if self._reprove(work) != FOUND:
                        return None
                    continue
                pick = min(proven, key=lambda i: dist[i])
            else:
                unknown = [i for i in range(n) if pn[i] != 0 or dist[i] < 0]
                if unknown:
                    work.push_code(int(moves[unknown[0]]))
                    ok = self._reprove(work) == FOUND
                    work.pop()
                    if not ok:
                        return None
                    continue
                pick = max(range(n), key=lambda i: dist[i])
            line.append(move_to_usi(int(moves[pick])))
            work.push_code(int(moves[pick]))
        return None

    def _reprove(self, board):
        """Prove `board` (attacker to move) again in the current generation; FOUND or not."""
        self.ctl[C_NODE_LIMIT] = INF
        return dfpn(with_room(board, MAX_MATE_PLY + 4).pos, self.tt, self.frames, self.ctl)


def with_room(board, plies):
    """A copy of the board whose history can hold `plies` more plies."""
    work = board.copy()
    while HIST + HIST_STRIDE * (work.ply + plies) > work.pos.shape[0]:
        work._grow_history()
    return work


# Tsume problems (attacker to move) from random games, with the length of the line the solver returns.
# tests/test_usi_mate.py checks every line as a forced mate with cshogi (each defence refuted, the shorter
# ones also shortest by exhaustive search); `usi-engine bench mate` times them.
MATE_PROBLEMS = (
    ("4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1", 1),
    ("1ns1kg2l/l1rg3s1/ppppp2pp/5pP2/4P4/P8/1PBP1P+nPP/3S1bSRL/LN1G1K1N1 w Pgp 32", 3),
    ("3+S3nl/5k1gn/3pppPB1/4P1p1p/3RN2sP/lp+b2G3/p1p1SG1P1/L2P2R1L/1PsK3N1 b GP3p 125", 5),
    ("1+N4G1b/r1s2+N3/1p1L1pp2/pb4k1s/P3pP1pL/2+Rp3P1/1PP+n2NSL/2S4G1/3G1K3 b GL6P 185", 7),
    ("l2p1kgnb/p1sg3p1/n1p2ps2/6PP1/1PPP4r/P2S4P/BlL1PP+r1N/L3G3p/1N1G1S1K1 w 2Pp 110", 7),
    ("l2+P5/p4gPg1/+Lp1L1p2p/2k1p2p1/3N2pSN/2N2P1P1/2SP2+r1P/2p1G1GBS/BP+p2KSNL w r2p 92", 9),
    ("gn2+B1p+P1/lsk1g2p1/+NN1s1p3/2p1p2+S1/P2lPPr1P/1RP5l/LP1+p1K1P1/p4S2p/g2GB1+p1+n b P 149", 11),
    ("5g1+N1/1b2g3S/1p1rsp+b1L/p1pkp1npp/6p2/P+s2PP2l/2PK2P+n1/4GS1R+l/1P1P3NL w Pg2p 104", 13),
    ("1+B1G3n1/4k1s2/ppgp1p2P/2P1p1bp1/3P1g3/1P5Pl/P1N1PPP1p/L2S1S+r2/L2sKG1NL w N2Pr 50", 15),
    ("l1r1gk2p/2G1b1PP1/2N+N3g1/ppp1Ppg2/2P1rPnnP/bPKPS1pp1/P8/L3p1S1+l/6+s+ls w P 212", 17),
    ("lnGgkbs2/2s2g2l/p4p1pb/1p6p/5n+r2/P1PPP2P1/1PN2PR1P/L1S1p1+p2/3K2SNL w 3Pg 50", 21),
    ("4R4/P2kps3/2lgg1sL1/g2+B1ppNS/B3P1gn1/2pr2PPP/+sp3PNK1/p3L3p/2+p3L1+p w n3p 254", 29),
)
BENCH_SECONDS = 20.0


def bench(seconds=BENCH_SECONDS, out=print):
    """`usi-engine bench mate`: solve MATE_PROBLEMS (each within `seconds`) and print nodes per second."""
    from usi_engine.shogi.board import Board

    solver = MateSolver()
    warm_up(solver)
    nodes, wall, cpu = 0, 0.0, 0.0
    for sfen, plies in MATE_PROBLEMS:
        cpu0 = time.process_time()
        r = solver.solve(Board(sfen), seconds)
        cpu += time.process_time() - cpu0
        nodes, wall = nodes + r.nodes, wall + r.seconds
        out(
            f"plies={plies} status={r.status} found={r.plies} nodes={r.nodes} seconds={r.seconds:.3f} "
            f"nps={r.nodes / max(r.seconds, 1e-6):.0f}"
        )
    out(
        f"problems={len(MATE_PROBLEMS)} nodes={nodes} seconds={wall:.2f} nps={nodes / max(wall, 1e-6):.0f} "
        f"cpu_seconds={cpu:.2f} nps_per_cpu_second={nodes / max(cpu, 1e-6):.0f}"
    )


def warm_up(solver=None):
    """Compile (or load) the solver kernels."""
    from usi_engine.shogi.board import Board

    (solver or MateSolver(1 << 10)).solve(Board("4k4/9/4P4/9/9/9/9/9/9 b G 1"), 60.0)
