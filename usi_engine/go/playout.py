"""Fast random Go playouts (seed 000 §3.5 default policy, Pachi/MoGo-style heuristics), numba.

A playout copies the board of a ``pos`` into a workspace (the playout board of usi_engine/go/workspace.py:
incremental blocks with pseudo-liberties, the empty points in a list) and plays until two consecutive passes or a
move cap, then scores the final board by Tromp-Taylor area.

Move choice for the side to move, after the opponent's last move L and its own move before it, L2. A rule that
names a POLICY_* bit runs only when that bit of the ``policy`` bitmask is on (``--playout-patterns`` turns on rule
5, ``--playout-tactics`` rules 0, 3, 4 and rule 5 around L2, ``--playout-softmax`` the draw of rule 6); a rule "tried
on r %" draws a number first and skips itself on the other moves. The order and the rates are those of Pachi's moggy
playouts (TWO_LIB_RATE and below).
0. ko (POLICY_KO; tried on 40 %): a ko taken within the last KO_AGE = 3 moves, with no ko ban in force now -> play
   its point if the random rule below accepts it (so the taker never fills it as an own eye; the opponent retakes);
1. atari escape: an own block next to L is in atari -> capture an adjacent opponent block that is
   itself in atari, else extend at the block's liberty if that gives it >= 2 liberties (with POLICY_LADDERS not
   when the extension gives exactly two and runs into a working ladder, ladder.escape_is_laddered: Pachi's and
   MoGo's check, since the playouts never chase a ladder and would let the stones run out);
2. capture: the block of L is in atari -> take it;
   with POLICY_MOGGY_LOCAL (``--playout-local pachi``) rules 1-2 are Pachi's local atari check instead
   (tactics.moggy_atari_moves: captures, countercaptures and escapes that are no self-atari and no first-line
   ladder, one drawn uniformly on LOCAL_CAPTURE_RATE % of the positions, always for a block of three or more);
3. two liberties (POLICY_TWO_LIBS; tried on 90 %; usi_engine/go/tactics.py): atari L's block of exactly two
   liberties where the block cannot escape, or save an own block of exactly two liberties next to L by a capture
   or an extension to >= 3 liberties; one candidate drawn uniformly; with POLICY_MOGGY_LOCAL Pachi's two-liberty
   check on every move instead (tactics.moggy_two_lib_moves: ataris whether or not they hold, defences unless
   hopeless or miai);
4. nakade (POLICY_NAKADE; tried on 80 %; tactics.py): the vital point of an eye space of 3-6 points next to L
   enclosed by L's colour (straight / bent three, pyramid four, bulky / crossed five, rabbity six);
5. patterns (POLICY_PATTERNS; MoGo's rule, Gelly, Wang, Munos & Teytaud 2006): one of the empty 8 neighbours of
   L, and with POLICY_PATTERNS_PREV of L2, whose 3x3 neighbourhood matches a MoGo pattern for the side to move
   (usi_engine/go/patterns.py), uniformly at random among those the random rule below would accept;
6. otherwise a uniformly random empty point (scanning cyclically from a random start) that is
   legal (no suicide, simple ko), not an own single-point eye, and not a self-atari of a block of
   two or more stones (keeps sekis alive in playouts; single-stone throw-ins stay allowed);
   with POLICY_SOFTMAX the point is drawn with probability proportional to the learned gamma of its 3x3 shape for
   the side to move instead, with the same rejections (usi_engine/go/softplayout.py; needs its table, ``gammas``).
   With POLICY_SELFATARI rules 0, 5 and the uniform rule 6 also refuse a bad single-stone self-atari
   (tactics.bad_selfatari: no snapback, throw-in or kill) on SELFATARI_RATE % of their judgements (_permit).
No move ever fills an own eye: a point whose four neighbours are own stones or border and whose
diagonals hold at most one opponent stone (none on the edge). With no candidate left the side passes.
Playouts use simple ko only (positional superko is the tree's job: board.gen_moves checks it). With only
POLICY_PATTERNS (or nothing) on, the seeded playouts are the ones of the policy before the other bits existed: an
off rule draws no random number (POLICY_SOFTMAX off keeps the uniform draw and skips the softmax upkeep).

RNG: xorshift64* on ``rng[0]`` (uint64, must be non-zero; ``seed_rng`` makes one by splitmix64).
"""

import numpy as np
from numba import njit

from usi_engine.go.board import area_owner
from usi_engine.go.ladder import escape_is_laddered
from usi_engine.go.layout import (
    BLACK,
    BOARD_CAP,
    EMPTY,
    HIST,
    HIST_STRIDE,
    H_MOVE,
    KO,
    KOMI_MILLI,
    LARGE_BOARD,
    PASS,
    PASSES,
    PLY,
    SIDE,
    SIZE,
    STRIDE,
    WHITE,
)
from usi_engine.go.moggy3 import moggy_gamma
from usi_engine.go.patterns import matches
from usi_engine.go.softplayout import TABLE_SIZE, soft_draw, soft_play, soft_score, soft_setup
from usi_engine.go.tactics import (
    bad_selfatari,
    block_libs,
    killing_sacrifice,
    moggy_atari_moves,
    moggy_two_lib_moves,
    nakade_move,
    two_lib_moves,
)
from usi_engine.go.workspace import (
    R_BOARD,
    R_CODE,
    R_EMPTY,
    R_HEAD,
    R_LIBS,
    R_LSUM,
    R_META,
    R_OWNER,
    R_STACK,
    _capture_next_to,
    _in_atari,
    _is_own_eye,
    _libs_after,
    _play,
    _random_ok,
    _setup,
    new_workspace,
)
from usi_engine.jit import bare_kernel
from usi_engine.search.rng import splitmix64_outputs, xorshift64star

DEFAULT_CAP_FACTOR = 3  # playout move cap = factor * N * N (the usual cut at ~3 N^2 moves)
# The policy bitmask (run_playout's `policy`): which of the optional rules of the module docstring are on.
POLICY_PLAIN = 0  # none of them: rules 1, 2 and 6
POLICY_PATTERNS = 1  # rule 5: MoGo's 3x3 patterns around L
POLICY_TWO_LIBS = 2  # rule 3: the two-liberty tactics (tactics.two_lib_moves)
POLICY_NAKADE = 4  # rule 4: the vital point of an eye space next to L (tactics.nakade_move)
POLICY_KO = 8  # rule 0: retake a recent ko
POLICY_PATTERNS_PREV = 16  # rule 5 also around the mover's own previous move (with POLICY_PATTERNS)
POLICY_TACTICS = POLICY_TWO_LIBS | POLICY_NAKADE | POLICY_KO | POLICY_PATTERNS_PREV  # `--playout-tactics on`
POLICY_SOFTMAX = 32  # rule 6 draws by learned 3x3 gammas (softplayout.py; run_playout's `gammas` table)
POLICY_LADDERS = 64  # rule 1 does not extend into a working ladder (ladder.escape_is_laddered)
POLICY_SELFATARI = 128  # rules 0, 5 and the uniform rule 6 refuse bad single-stone self-ataris (tactics.bad_selfatari)
POLICY_REDIRECT = 256  # with POLICY_SELFATARI: rule 6 plays a refused self-atari's approach move instead (_cousin)
POLICY_MOGGY = 512  # with POLICY_PATTERNS: rule 5 draws Pachi's moggy patterns by their gammas, around L and L2
POLICY_SACRIFICE = 1024  # rules 0, 5 and 6 may play a killing sacrifice of 2-6 stones (tactics.killing_sacrifice)
POLICY_MOGGY_LOCAL = 2048  # rules 1-3 in Pachi's form: its local atari and two-liberty checks (tactics.moggy_*)
POLICY_LGRF = 4096  # before rule 0: the last good reply with forgetting (run_playout's `replies` table; _reply)
NO_GAMMAS = np.zeros(0, np.float64)  # run_playout without a gamma table
# The percentage of moves on which a rule is tried, and the ko rule's window: Pachi's moggy playout defaults
# (playout/moggy.c, playout_moggy_init): atarirate 90 (its rate below 15x15; 80 on larger boards, one rate here),
# nakaderate 80, korate 40 with koage 3; its patternrate is 100, as rule 5 here.
TWO_LIB_RATE = 90
NAKADE_RATE = 80
KO_RATE = 40
KO_AGE = 3  # a ko taken at most this many moves ago (the taker's next move and the opponent's retake)
# Pachi's selfatarirate: the share of its draws that judge single stones too (is_bad_selfatari; the rest judge big
# groups only). Its comment records that 95 -> 60 gained about 50 Elo against GNU Go.
SELFATARI_RATE = 60
LOCAL_CAPTURE_RATE = 90  # % of the positions where POLICY_MOGGY_LOCAL plays a candidate (Pachi's lcapturerate)
ALWAYS_CCAP_RATE = 40  # % where a block in atari that can countercapture only countercaptures (alwaysccaprate)
# The last-good-reply table (POLICY_LGRF; Drake 2009, Baier & Drake 2010 "LGRF-2"): per colour c, the reply to the
# opponent's move L (REPLY_ONE) and to the pair (c's own move L2, L) (REPLY_TWO), a point or 0 for none; float64 so
# that it rides in the search's weights array (game.pack_weights).
REPLY_POINTS = BOARD_CAP + 1  # the points and PASS
REPLY_TWO = 2 * REPLY_POINTS  # where the pair table starts
REPLY_LEN = REPLY_TWO + 2 * REPLY_POINTS * REPLY_POINTS


def playout_policy(
    patterns: bool,
    tactics: bool,
    softmax: bool = False,
    ladders: bool = False,
    selfatari: bool = False,
    redirect: bool = False,
    moggy: bool = False,
    sacrifice: bool = False,
    moggy_local: bool = False,
    lgrf: bool = False,
) -> int:
    """The policy bitmask of the switches: MoGo's patterns (rule 5), the tactics (rules 0, 3, 4 and rule 5 around the
    mover's previous move), the softmax draw of rule 6 (which needs a gamma table: softplayout.playout_table), the
    ladder check of rule 1, the refusal of bad single-stone self-ataris and (with it) their redirection, Pachi's
    moggy patterns and gammas in rule 5 (which turns the rule on), killing sacrifices of 2-6 stones, rules 1-3 in
    Pachi's form, the last good reply with forgetting (which needs a reply table: REPLY_LEN)."""
    return (
        (POLICY_PATTERNS if patterns or moggy else 0)
        | (POLICY_MOGGY if moggy else 0)
        | (POLICY_TACTICS if tactics else 0)
        | (POLICY_SOFTMAX if softmax else 0)
        | (POLICY_LADDERS if ladders else 0)
        | (POLICY_SELFATARI if selfatari or redirect else 0)
        | (POLICY_REDIRECT if redirect else 0)
        | (POLICY_SACRIFICE if sacrifice else 0)
        | (POLICY_MOGGY_LOCAL if moggy_local else 0)
        | (POLICY_LGRF if lgrf else 0)
    )


def seed_rng(seed: int) -> np.ndarray:
    """A one-word uint64 RNG state for the playout kernels, derived from `seed` by splitmix64."""
    z = int(splitmix64_outputs(seed, 1)[0])
    return np.array([z or 1], dtype=np.uint64)


@bare_kernel
def rand_below(rng, n):
    """Uniform integer in [0, n) from the xorshift64* state rng[0]."""
    return int(xorshift64star(rng) >> np.uint64(33)) % n


# _judge's answers
REFUSED, PERMITTED, REFUSED_SELFATARI = 0, 1, 2


@bare_kernel
def _judge(ws, w, p, c, ko, rng, policy):
    """May rules 0, 5 and 6 play the empty point p for c? PERMITTED when it is not an own eye, workspace._random_ok
    accepts it (or with POLICY_SACRIFICE it is a killing sacrifice of 2-6 stones, tactics.killing_sacrifice), and
    with POLICY_SELFATARI it is not a bad single-stone self-atari (tactics.bad_selfatari) or the draw lets it pass:
    such a move is REFUSED_SELFATARI on SELFATARI_RATE % of the judgements (a number is drawn only for it); REFUSED
    otherwise."""
    if _is_own_eye(ws[R_BOARD], w, p, c):
        return REFUSED
    if not _random_ok(ws, w, p, c, ko):
        if policy & POLICY_SACRIFICE and killing_sacrifice(ws, w, p, c, ko):
            return PERMITTED
        return REFUSED
    if policy & POLICY_SELFATARI and bad_selfatari(ws, w, p, c) and rand_below(rng, 100) < SELFATARI_RATE:
        return REFUSED_SELFATARI
    return PERMITTED


@bare_kernel
def _permit(ws, w, p, c, ko, rng, policy):
    """_judge permits c's move at the empty point p."""
    return _judge(ws, w, p, c, ko, rng, policy) == PERMITTED


@bare_kernel
def _cousin(ws, w, p, c, ko, rng):
    """An approach move for c instead of the bad single-stone self-atari at p (Pachi's selfatari_cousin): the other
    liberty of an opponent block next to p with exactly two liberties, if c may play it (not an own eye, _random_ok,
    no bad self-atari), drawn uniformly; else an empty diagonal neighbour of p or of p's liberty where c's stone
    keeps two liberties or captures, not an own eye nor the ko point; 0 when there is none."""
    board = ws[R_BOARD]
    o = 3 - c
    found = 0
    pick = 0
    lib = 0
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            lib = q
        elif v == o:
            n, a, b = block_libs(ws, w, q)
            if n == 2:
                x = b if a == p else a
                if x != pick and not _is_own_eye(board, w, x, c) and _random_ok(ws, w, x, c, ko):
                    if not bad_selfatari(ws, w, x, c):
                        found += 1
                        if rand_below(rng, found) == 0:
                            pick = x
    if found > 0:
        return pick
    for s in (p, lib):
        for d in (w + 1, w - 1, -w + 1, -w - 1):
            q = s + d
            if board[q] == EMPTY and q != ko and not _is_own_eye(board, w, q, c) and _libs_after(ws, w, q, c) == 2:
                found += 1
                if rand_below(rng, found) == 0:
                    pick = q
    return pick


@bare_kernel
def _pattern_weight(ws, w, q, c, ko, rng, policy):
    """Rule 5's weight of the empty point q for c: with POLICY_MOGGY the gamma of the moggy pattern it matches
    (moggy3.py) if it is no bad single-stone self-atari and no atari escape into a working ladder, else 1 if it
    matches a MoGo pattern; 0 when it does not match or _permit refuses it."""
    if policy & POLICY_MOGGY:
        g = moggy_gamma(ws, w, q, c)
        if g == 0 or bad_selfatari(ws, w, q, c) or not _permit(ws, w, q, c, ko, rng, policy):
            return 0
        if _saves_into_ladder(ws, w, q, c):
            return 0
        return g
    if matches(ws[R_BOARD], w, q, c) and _permit(ws, w, q, c, ko, rng, policy):
        return 1
    return 0


@bare_kernel
def _saves_into_ladder(ws, w, q, c):
    """c's stone at q extends an own block in atari into a working ladder (ladder.escape_is_laddered)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    for d in (1, -1, w, -w):
        if board[q + d] == c and _in_atari(ws, head[q + d]):
            return escape_is_laddered(board, w, q, c)
    return False


@bare_kernel
def _pattern_move(ws, w, c, last, prev, ko, rng, policy):
    """A point drawn from the empty 8 neighbours of `last`, and of `prev` (PASS: none) other than those next to
    `last`, with probability proportional to its _pattern_weight (uniform over the MoGo pattern matches, by the
    gammas with POLICY_MOGGY); 0 when every weight is 0."""
    board = ws[R_BOARD]
    total = 0
    pick = 0
    for d in (-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1):
        q = last + d
        if board[q] == EMPTY:
            g = _pattern_weight(ws, w, q, c, ko, rng, policy)
            if g > 0:
                total += g
                if rand_below(rng, total) < g:  # weighted reservoir sampling: q kept with chance g / total
                    pick = q
    if prev != PASS:
        dx0, dy0 = prev % w - last % w, prev // w - last // w  # prev seen from last
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                if (dx == 0 and dy == 0) or (abs(dx0 + dx) <= 1 and abs(dy0 + dy) <= 1):
                    continue  # prev itself, or L and the points seen around it
                q = prev + dy * w + dx
                if board[q] == EMPTY:
                    g = _pattern_weight(ws, w, q, c, ko, rng, policy)
                    if g > 0:
                        total += g
                        if rand_below(rng, total) < g:
                            pick = q
    return pick


@bare_kernel
def _atari_answer(ws, w, c, last, ko, policy):
    """Rules 1 and 2 for c after the opponent's stone at `last`: an own block in atari next to `last` is saved by a
    capture, else by extending on its liberty when that leaves two liberties (with POLICY_LADDERS: not into a
    working ladder); else `last`'s block in atari is captured. 0 when neither applies."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    for d in (1, -1, w, -w):
        q = last + d
        if board[q] == c:
            g = head[q]
            if _in_atari(ws, g):
                mv = _capture_next_to(ws, w, g, ko)
                if mv != 0:
                    return mv
                lib = ws[R_LSUM, g] // ws[R_LIBS, g]
                if lib != ko and _libs_after(ws, w, lib, c) == 2 and not _is_own_eye(board, w, lib, c):
                    if not (policy & POLICY_LADDERS and escape_is_laddered(board, w, lib, c)):
                        return lib
    g = head[last]
    if _in_atari(ws, g):
        lib = ws[R_LSUM, g] // ws[R_LIBS, g]
        if lib != ko:
            return lib
    return 0


@bare_kernel
def _local_move(ws, w, c, last, prev, ko, ko_recent, rng, policy):
    """Rules 0-5 of the playout policy (module docstring; `policy` is the bitmask of its optional rules) for c after
    the opponent's move `last` and c's own move `prev` before it; ko_recent: the point of a ko taken within KO_AGE
    moves while no ko ban holds (0: none). 0 when none of them gives a move (rule 6 decides)."""
    board = ws[R_BOARD]
    if policy & POLICY_KO and ko_recent != 0 and rand_below(rng, 100) < KO_RATE:
        k = ko_recent
        if board[k] == EMPTY and _permit(ws, w, k, c, ko, rng, policy):
            return k
    if last != PASS and last != 0 and board[last] == 3 - c:
        if policy & POLICY_MOGGY_LOCAL:
            n, force = moggy_atari_moves(ws, w, c, last, ko, rand_below(rng, 100) < ALWAYS_CCAP_RATE)
            if n > 0 and (force or rand_below(rng, 100) < LOCAL_CAPTURE_RATE):
                return ws[R_STACK, rand_below(rng, n)]
        else:
            mv = _atari_answer(ws, w, c, last, ko, policy)
            if mv != 0:
                return mv
        if policy & POLICY_TWO_LIBS:
            n = 0
            if policy & POLICY_MOGGY_LOCAL:
                n = moggy_two_lib_moves(ws, w, c, last, ko, rand_below(rng, 2) == 1)
            elif rand_below(rng, 100) < TWO_LIB_RATE:
                n = two_lib_moves(ws, w, c, last, ko)
            if n > 0:
                return ws[R_STACK, rand_below(rng, n)]
        if policy & POLICY_NAKADE and rand_below(rng, 100) < NAKADE_RATE:
            mv = nakade_move(ws, w, c, last, ko)
            if mv != 0:
                return mv
        if policy & POLICY_PATTERNS:
            around_prev = policy & (POLICY_PATTERNS_PREV | POLICY_MOGGY)
            mv = _pattern_move(ws, w, c, last, prev if around_prev else PASS, ko, rng, policy)
            if mv != 0:
                return mv
    return 0


@bare_kernel
def _random_move(ws, w, c, ko, rng, policy):
    """Rule 6: a uniformly random empty point that _permit accepts, or with POLICY_SOFTMAX one drawn by the shape
    gammas (softplayout.soft_draw, which does not judge single-stone self-ataris); PASS when nothing is left. With
    POLICY_REDIRECT a point refused as a bad self-atari gives way to its approach move (_cousin) if there is one."""
    if policy & POLICY_SOFTMAX:
        return soft_draw(ws, w, c, ko, rng)
    n = ws[R_META, 0]
    if n == 0:
        return PASS
    empties = ws[R_EMPTY]
    i = rand_below(rng, n)
    for _ in range(n):
        p = empties[i]
        verdict = _judge(ws, w, p, c, ko, rng, policy)
        if verdict == PERMITTED:
            return p
        if verdict == REFUSED_SELFATARI and policy & POLICY_REDIRECT:
            mv = _cousin(ws, w, p, c, ko, rng)
            if mv != 0:
                return mv
        i += 1
        if i == n:
            i = 0
    return PASS


@bare_kernel
def _choose(ws, w, c, last, prev, ko, ko_recent, rng, policy):
    """The playout policy's move for c: rules 0-5 (_local_move), else rule 6 (_random_move); PASS when nothing is
    left."""
    mv = _local_move(ws, w, c, last, prev, ko, ko_recent, rng, policy)
    if mv != 0:
        return mv
    return _random_move(ws, w, c, ko, rng, policy)


@bare_kernel
def _reply_one(c, last):
    """Index of c's stored reply to the opponent's move `last` in a reply table."""
    return (c - 1) * REPLY_POINTS + last


@bare_kernel
def _reply_two(c, prev, last):
    """Index of c's stored reply to the pair (c's move `prev`, the opponent's `last`) in a reply table."""
    return REPLY_TWO + ((c - 1) * REPLY_POINTS + prev) * REPLY_POINTS + last


@bare_kernel
def _reply(ws, w, replies, c, last, prev, ko, rng, policy):
    """POLICY_LGRF: c's last good reply to (prev, last), else to last, when it is an empty point the random rule
    accepts (_permit); 0 when there is none."""
    if last == PASS or last == 0:
        return 0
    board = ws[R_BOARD]
    if prev != PASS and prev != 0:
        r = int(replies[_reply_two(c, prev, last)])
        if r != 0 and board[r] == EMPTY and _permit(ws, w, r, c, ko, rng, policy):
            return r
    r = int(replies[_reply_one(c, last)])
    if r != 0 and board[r] == EMPTY and _permit(ws, w, r, c, ko, rng, policy):
        return r
    return 0


@bare_kernel
def remember_replies(replies, moves, n, c, last, prev, black_won):
    """The reply table's update after a playout whose moves[0:n] were played from a position with c to move after
    the moves prev, last (Baier & Drake's LGRF-2): each move of the winner becomes its reply to the move before it
    and to the two before it; a move of the loser that is its stored reply is forgotten. Contexts with a pass or
    before the position's history (0) store nothing; a tie counts as Black's loss."""
    for i in range(n):
        m = moves[i]
        colour = c if i % 2 == 0 else 3 - c
        l1 = moves[i - 1] if i >= 1 else last
        l2 = moves[i - 2] if i >= 2 else (last if i == 1 else prev)
        if m == PASS or l1 == PASS or l1 == 0:
            continue
        won = black_won == (colour == BLACK)
        one = _reply_one(colour, l1)
        two = _reply_two(colour, l2, l1) if l2 != PASS and l2 != 0 else -1
        if won:
            replies[one] = m
            if two >= 0:
                replies[two] = m
        else:
            if replies[one] == m:
                replies[one] = 0.0
            if two >= 0 and replies[two] == m:
                replies[two] = 0.0


@njit(cache=True, nogil=True)
def run_playout(pos, ws, rng, max_moves, own, seki, trace, policy, gammas=None, classes=None, psi=None, replies=None):
    """One playout from pos (unchanged). Returns (black area - white area - komi, moves played).
    policy: the bitmask of the optional rules (POLICY_*; playout_policy), 0 for the plain policy; gammas: the
    softmax draw's table (softplayout.draw_table, float64[TABLE_SIZE]), needed with POLICY_SOFTMAX (ValueError
    without it), else unused and may be left out.
    psi (with POLICY_SOFTMAX; simulation balancing, learn/go_balance.py): when given, psi[k] += the playout's score
    function for shape class k, the sum over its rule-6 moves of d log pi(a) / d theta_k for gammas exp(theta)
    (softplayout.soft_score), with classes = softplayout.score_classes(); left out, nothing of it is compiled in.

    own/seki (length BOARD_CAP, or empty to skip; seki is read only with own): own[p] += +1 for a Black point, -1
    for a White point at the end; seki[p] += 1 for a stone whose final block touches a neutral point (after
    two passes that is a seki: neither side can fill the shared liberty without self-atari).
    trace (empty to skip) receives the moves.
    replies (with POLICY_LGRF; REPLY_LEN long): the last-good-reply table, read before the other rules and updated
    from this playout's moves when trace holds them all (remember_replies); left out, the rule is off."""
    table = NO_GAMMAS if gammas is None else gammas
    rtab = np.zeros(0, np.float64) if replies is None else replies  # not the global NO_REPLIES: read-only to numba
    lgrf = policy & POLICY_LGRF != 0 and rtab.shape[0] == REPLY_LEN
    soft = policy & POLICY_SOFTMAX != 0
    _setup(pos, ws)
    w = pos[STRIDE]
    if soft:
        if table.shape[0] != TABLE_SIZE:
            raise ValueError("POLICY_SOFTMAX needs its gamma table (softplayout.playout_table)")
        soft_setup(ws, w, pos[SIZE], table)
    c = pos[SIDE]
    ko = pos[KO]
    passes = pos[PASSES]
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    prev = pos[HIST + HIST_STRIDE * (ply - 2) + H_MOVE] if ply > 1 else PASS
    c0, last0, prev0 = c, (last if ply > 0 else 0), (prev if ply > 1 else 0)
    ko_point = ko  # the point of the last ko taken, taken by move ko_move (-1: the move before the playout)
    ko_move = -1
    moves = 0
    while passes < 2 and moves < max_moves:
        recent = ko_point if ko == 0 and moves - ko_move <= KO_AGE else 0
        p = _reply(ws, w, rtab, c, last, prev, ko, rng, policy) if lgrf else 0
        if p != 0:
            pass  # the last good reply
        elif psi is None:
            p = _choose(ws, w, c, last, prev, ko, recent, rng, policy)
        else:
            p = _local_move(ws, w, c, last, prev, ko, recent, rng, policy)
            if p == 0:
                soft_score(ws, w, c, ko, classes, psi)
                p = _random_move(ws, w, c, ko, rng, policy)
                if p != PASS:
                    psi[classes[2 * ws[R_CODE, p] + c - 1]] += 1.0
        if p == PASS:
            passes += 1
            ko = 0
        else:
            ko = soft_play(ws, w, p, c, table) if soft else _play(ws, w, p, c)
            passes = 0
            if ko != 0:
                ko_point = ko
                ko_move = moves
        if moves < trace.shape[0]:
            trace[moves] = p
        prev = last
        last = p
        c = 3 - c
        moves += 1
    owner = ws[R_OWNER]
    board = ws[R_BOARD]
    black, white = area_owner(board, pos[SIZE], owner)
    if lgrf and moves <= trace.shape[0]:
        remember_replies(rtab, trace, moves, c0, last0, prev0, black - white - pos[KOMI_MILLI] / 1000.0 > 0)
    if own.shape[0] > 0:
        head = ws[R_HEAD]
        in_seki = ws[R_STACK]  # free after _setup: marks heads of blocks in seki
        in_seki[:] = 0
        for p in range(BOARD_CAP):
            v = owner[p]
            if v == BLACK:
                own[p] += 1.0
            elif v == WHITE:
                own[p] -= 1.0
            elif v == EMPTY:
                for d in (1, -1, w, -w):
                    u = board[p + d]
                    if u == BLACK or u == WHITE:
                        in_seki[head[p + d]] = 1
        if seki.shape[0] > 0:
            for p in range(BOARD_CAP):
                u = board[p]
                if (u == BLACK or u == WHITE) and in_seki[head[p]] == 1:
                    seki[p] += 1.0
    return black - white - pos[KOMI_MILLI] / 1000.0, moves


@bare_kernel
def first_moves(pos, ws, rng, policy, gammas, out):
    """out[:] = len(out) independent draws of the playout policy's first move from pos (unchanged): the moves a
    playout from pos starts with, PASS when the policy has nothing left. ws is set up for pos (and its softmax
    rows with POLICY_SOFTMAX, which needs gammas as run_playout does)."""
    _setup(pos, ws)
    w = pos[STRIDE]
    if policy & POLICY_SOFTMAX != 0:
        if gammas.shape[0] != TABLE_SIZE:
            raise ValueError("POLICY_SOFTMAX needs its gamma table (softplayout.playout_table)")
        soft_setup(ws, w, pos[SIZE], gammas)
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    prev = pos[HIST + HIST_STRIDE * (ply - 2) + H_MOVE] if ply > 1 else PASS
    for i in range(out.shape[0]):  # no ko retake is recent before a playout's first move (run_playout)
        out[i] = _choose(ws, w, pos[SIDE], last, prev, pos[KO], 0, rng, policy)


def first_move_counts(pos, policy: int, draws: int, seed: int, gammas=NO_GAMMAS) -> list[tuple[int, int]]:
    """The first moves of `draws` seeded playouts from pos (first_moves): (move, times drawn), most drawn first."""
    out = np.empty(draws, np.int64)
    first_moves(pos, new_workspace(), seed_rng(seed), policy, gammas, out)
    moves, counts = np.unique(out, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return [(int(moves[i]), int(counts[i])) for i in order]


@njit(cache=True, nogil=True)
def run_playouts(pos, ws, rng, n, max_moves, own, seki, policy, gammas=None):
    """n playouts from pos (run_playout's arguments). Returns (Black's wins counting a tie as 1/2, total
    moves, summed score)."""
    table = NO_GAMMAS if gammas is None else gammas
    wins = 0.0
    total = 0
    score_sum = 0.0
    trace = np.empty(0, np.int32)
    for _ in range(n):
        score, moves = run_playout(pos, ws, rng, max_moves, own, seki, trace, policy, table)
        total += moves
        score_sum += score
        if score > 0:
            wins += 1.0
        elif score == 0:
            wins += 0.5
    return wins, total, score_sum


# Heuristic prior H(s,a) in [0, 1] for the mover (seed 000 §5, heuristic MC-RAVE): the even-game value
# 1/2 unless a rule below applies (first match wins).
PRIOR_EVEN = 0.5
PRIOR_EYE = 0.05  # filling an own eye-like point
PRIOR_CAPTURE = 0.9  # captures an opponent block in atari
PRIOR_ESCAPE = 0.8  # extends an own block in atari to >= 2 liberties
PRIOR_SELF_ATARI = 0.15  # leaves an own block of >= 2 stones in atari
# (pattern prior only) one of the 8 neighbours of the last move that matches a MoGo pattern (patterns.py): the
# moves MoGo's playouts favour; seed 000 §5.1's handcrafted prior gave them 1, here 0.7 keeps them below the
# captures and escapes as in the playout policy's order.
PRIOR_PATTERN = 0.7
PRIOR_NEAR_LAST = 0.6  # within Manhattan distance 2 of the opponent's last move (local answer)
PRIOR_EMPTY_EDGE = 0.35  # first line with no stone within distance 2 (too low in open areas)
PRIOR_PASS = 0.1
NEAR = 2
# Large boards (size >= layout.LARGE_BOARD, Pachi's threshold for its "b19" prior): with no stone within distance
# NEAR, the third line is where the opening is played and the first line loses; Pachi adds a win (third line) or a
# loss (first line) of the even prior's weight to the even 1/2, i.e. 3/4 and 1/4.
PRIOR_OPEN_THIRD = 0.75
PRIOR_OPEN_FIRST = 0.25
# (large boards) an open corner point on the third or fourth line both ways (3-3, 3-4, 4-4): corners first.
PRIOR_OPEN_CORNER = 0.85
# (large boards) an atari escape that runs into a working ladder (ladder.py): as bad as a self-atari.
PRIOR_LADDERED = 0.15
# The rules above by index (move_rules names the rule that sets each move's prior) and their values.
RULE_EVEN, RULE_EYE, RULE_CAPTURE, RULE_ESCAPE, RULE_SELF_ATARI, RULE_PATTERN, RULE_NEAR_LAST = 0, 1, 2, 3, 4, 5, 6
RULE_EMPTY_EDGE, RULE_PASS, RULE_OPEN_THIRD, RULE_OPEN_FIRST, RULE_OPEN_CORNER, RULE_LADDERED = 7, 8, 9, 10, 11, 12
N_RULES = 13
PRIOR_VALUES = np.array(
    [
        PRIOR_EVEN,
        PRIOR_EYE,
        PRIOR_CAPTURE,
        PRIOR_ESCAPE,
        PRIOR_SELF_ATARI,
        PRIOR_PATTERN,
        PRIOR_NEAR_LAST,
        PRIOR_EMPTY_EDGE,
        PRIOR_PASS,
        PRIOR_OPEN_THIRD,
        PRIOR_OPEN_FIRST,
        PRIOR_OPEN_CORNER,
        PRIOR_LADDERED,
    ]
)


@bare_kernel
def _stone_near(board, w, p, radius):
    """Any stone within Manhattan distance `radius` of p."""
    for dy in range(-radius, radius + 1):
        r = radius - abs(dy)
        for dx in range(-r, r + 1):
            q = p + dy * w + dx
            if 0 <= q < BOARD_CAP and (board[q] == BLACK or board[q] == WHITE):
                return True
    return False


@bare_kernel
def _rule(ws, w, size, p, c, last, patterns, ladders):
    """The rule (RULE_*) that sets H(s,a) of a legal stone move p for c (the first that applies; RULE_PATTERN
    only with `patterns`, RULE_LADDERED only with `ladders`), after _setup of the position."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    if _is_own_eye(board, w, p, c):
        return RULE_EYE
    escape = False
    for d in (1, -1, w, -w):
        v = board[p + d]
        if (v == BLACK or v == WHITE) and _in_atari(ws, head[p + d]):
            if v != c:
                return RULE_CAPTURE
            escape = True
    libs = _libs_after(ws, w, p, c)
    if escape and libs == 2:
        if ladders and escape_is_laddered(board, w, p, c):
            return RULE_LADDERED
        return RULE_ESCAPE
    if libs < 2:
        for d in (1, -1, w, -w):
            if board[p + d] == c:
                return RULE_SELF_ATARI
    if last != PASS and last > 0:
        dx, dy = abs(p % w - last % w), abs(p // w - last // w)
        if patterns and dx <= 1 and dy <= 1 and matches(board, w, p, c):
            return RULE_PATTERN
        if dx + dy <= NEAR:
            return RULE_NEAR_LAST
    x, y = p % w, p // w
    lx, ly = min(x, size - 1 - x), min(y - 1, size - y)  # 0 = first line (rows are 1..size, columns 0..size-1)
    line = min(lx, ly)
    if line == 0 and not _stone_near(board, w, p, NEAR):
        return RULE_OPEN_FIRST if size >= LARGE_BOARD else RULE_EMPTY_EDGE
    if size >= LARGE_BOARD and 2 <= line <= 3 and not _stone_near(board, w, p, NEAR):
        if max(lx, ly) <= 3:
            return RULE_OPEN_CORNER
        if line == 2:
            return RULE_OPEN_THIRD
    return RULE_EVEN


@njit(cache=True, nogil=True)
def move_rules(pos, ws, moves, n, out, patterns, ladders):
    """out[i] = the heuristic rule (RULE_*) of the legal move moves[i] for the side to move of pos (uses ws, and
    leaves workspace._setup of pos in it); patterns: the RULE_PATTERN rule; ladders: RULE_LADDERED (large boards)."""
    _setup(pos, ws)
    w = pos[STRIDE]
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    for i in range(n):
        p = moves[i]
        out[i] = RULE_PASS if p == PASS else _rule(ws, w, pos[SIZE], p, pos[SIDE], last, patterns, ladders)


@njit(cache=True, nogil=True)
def move_priors(pos, ws, moves, n, out, patterns, ladders, rules=None):
    """out[i] = heuristic prior H of the legal move moves[i] for the side to move of pos (uses ws); patterns:
    use the PRIOR_PATTERN rule; ladders: the PRIOR_LADDERED rule (large boards); rules (int64[>= n], may be left
    out): receives each move's rule (RULE_*)."""
    if rules is None:
        rules = np.empty(n, np.int64)
    move_rules(pos, ws, moves, n, rules, patterns, ladders)
    for i in range(n):
        out[i] = PRIOR_VALUES[rules[i]]


def move_cap(size: int, factor: float = DEFAULT_CAP_FACTOR) -> int:
    """Playout move cap for a board size."""
    return max(1, int(factor * size * size))
