"""Local tactics of the playout policy (numba), on the playout board of usi_engine/go/workspace.py.

Two rules that answer the opponent's last move L with a reading a few moves deep, after the ones of Pachi's "moggy"
playouts (docs/references.md "Programs"; its playout/moggy.c, tactics/2lib.c and tactics/nakade.c describe them),
written here for the workspace's blocks:

- **two liberties** (``two_lib_moves``): L's block with exactly two liberties is put in atari on a liberty x when
  the atari holds: x is legal and no self-atari for the mover, the block cannot capture an attacker in atari next to
  it, and extending on its other liberty y would neither capture nor give it more than two liberties (the chase
  goes on or the block dies). The mover's own blocks next to L with exactly two liberties are saved: by capturing
  an opponent block in atari next to them, else by extending on a liberty that leaves three or more liberties (not
  into an own eye). Every such move is a candidate; the policy draws one uniformly (Pachi's move queue).
- **nakade** (``nakade_move``): when the first empty neighbour of L has no empty point opposite it across L (L
  would divide that space) and lies in an empty region of 3-6 points whose neighbours are all L's colour or the
  edge (a flood that stops at a seventh point or at a stone of the mover), and the region is a killing shape, the
  mover plays its vital point, the point with the most neighbours inside the region: straight
  or bent three (the middle), pyramid four (the centre of the T), bulky five (the point next to the tail), crossed
  five (the centre), rabbity six (the centre of the cross). Other shapes (straight and bent four, square four, the
  other fives and sixes) live or are not settled by one move, so the rule passes.

Two more functions give the policy's answers to L in Pachi's own form, for `--playout-local pachi`
(``moggy_atari_moves``: its local_atari_check with countercaptures, no escape into a self-atari or a first-line
ladder, tactics/1lib.c and ladder.c's is_border_ladder; ``moggy_two_lib_moves``: its local_2lib_check, tactics/2lib.c,
with miai, hopeless defences and "lumpy" liberties); their candidates also go to R_STACK.

Another judgement keeps the random moves from wasting stones (``bad_selfatari``, Pachi's tactics/selfatari.c for
a single stone, which the policy consults on Pachi's 60 % of its draws): c's stone at p that joins no own stone,
captures nothing and is left with one liberty l is a *bad self-atari* unless it is one of the single-stone
self-ataris that do something:
  - a **snapback**: l has no other empty neighbour and touches an opponent stone, an opponent block next to p has
    exactly two liberties, and every block next to l is an opponent block with the liberties {l, p} or fewer, or an
    own block with two liberties or more: the capture at l leaves the capturers in atari;
  - a **throw-in** into a false eye of the opponent (p has two of c's stones on its diagonals, one on the edge; not
    in the corner), with the shape of one: l touches an opponent stone and has opponent stones or the edge on two
    sides or more, and on both sides across the line p-l;
  - **inside the opponent's last two liberties**: every opponent block next to p with two liberties has l as the
    other one, l has no other empty neighbour and no own neighbour (the capture at l is answered by retaking at p);
  - **filling a closed two-point space** that puts nothing in atari: the opponent blocks next to p have at most two
    liberties, l has no other empty neighbour, no own neighbour and two opponent neighbours or more, and no
    diagonal of p or l is empty (Pachi's "no-atari throw-in", with its reading of the diagonals made strict).
Everything else that fits the description is bad (e.g. a stone thrown into the opponent's territory, a lone stone
in atari on the edge). Blocks of two or more stones in atari are workspace._random_ok's to refuse, except for one
kind that the policy may play (``killing_sacrifice``, after Pachi's multi-stone nakade in tactics/selfatari.c): a
**killing sacrifice**, c's move at p (not the ko point) that joins own stones into a block of at most 6 stones left
with one liberty l, captures nothing, leaves every opponent block next to the new block with l as its only liberty
(so the opponent must capture at l, and has no eye elsewhere), and whose points, the eye space that capture leaves
the opponent, are a dead shape (``_dead_shape``: the killing shapes above with one or two points, or a square four).

Liberty counts here are exact (distinct points, counted up to 3 by walking the block's stones), unlike the
workspace's pseudo-liberties. Both rules keep their scratch in the workspace row R_STACK (free while a playout
plays): ``two_lib_moves`` its candidates, ``nakade_move`` the region.
"""

from usi_engine.go.layout import BORDER, EMPTY
from usi_engine.go.workspace import (
    R_BOARD,
    R_GSIZE,
    R_HEAD,
    R_LIBS,
    R_LSUM,
    R_NEXT,
    R_STACK,
    _capture_next_to,
    _eyelike,
    _falsified,
    _in_atari,
    _is_own_eye,
    _libs_after,
    _random_ok,
)
from usi_engine.jit import bare_kernel

NAKADE_MAX = 6  # the largest eye space with a vital point that kills (rabbity six), as in Pachi's nakade.c


@bare_kernel
def _more_libs(ws, w, h, skip1, skip2, a, b):
    """Walks block h for liberties other than skip1, skip2 and the ones already found (a, b: 0 when not yet);
    returns (a, b, three) with three True once a third distinct one turns up."""
    board, nxt = ws[R_BOARD], ws[R_NEXT]
    s = h
    while True:
        for d in (1, -1, w, -w):
            r = s + d
            if board[r] == EMPTY and r != skip1 and r != skip2 and r != a and r != b:
                if a == 0:
                    a = r
                elif b == 0:
                    b = r
                else:
                    return a, b, True
        s = nxt[s]
        if s == h:
            return a, b, False


@bare_kernel
def block_libs(ws, w, g):
    """(n, a, b): the distinct liberties of the block of stone g, counting stops at 3; a and b the first two found
    (0 when fewer). The walk starts at g: a stone with empty neighbours (a move's own, or one next to it) ends it
    early when the block has many liberties."""
    a, b, three = _more_libs(ws, w, g, 0, 0, 0, 0)  # point 0 is off the board: nothing skipped
    return (3 if three else (2 if b != 0 else (1 if a != 0 else 0))), a, b


@bare_kernel
def _libs_after3(ws, w, p, c):
    """Distinct liberties of c's block after c plays the empty point p, counting stops at 3; 3 when the move
    captures (the captured points become liberties)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    o = 3 - c
    a = 0
    b = 0
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            if a == 0:
                a = q
            elif b == 0:
                b = q
            else:
                return 3
        elif v == o and _in_atari(ws, head[q]):
            return 3
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] == c:
            a, b, three = _more_libs(ws, w, head[q], p, p, a, b)
            if three:
                return 3
    return 2 if b != 0 else (1 if a != 0 else 0)


@bare_kernel
def _atari_holds(ws, w, g, x, y, c, ko):
    """c's atari at x on the opponent block g with exactly the liberties x and y holds: g extending at y captures
    nothing and keeps at most two liberties, x is legal and leaves c's stone two or more liberties, and g touches no
    c block in atari that it could capture instead (one whose liberty is x joins the atari stone). The cheap
    escape test runs first."""
    if x == ko:
        return False
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    a = 0
    b = 0
    for d in (1, -1, w, -w):
        q = y + d
        v = board[q]
        if v == c and _in_atari(ws, head[q]):
            return False  # its one liberty is y: the extension captures it
        if v == EMPTY and q != x:
            if a == 0:
                a = q
            elif b == 0:
                b = q
            else:
                return False
    o = 3 - c
    for d in (1, -1, w, -w):
        q = y + d
        if board[q] == o and head[q] != g:  # g's own liberties are x and y: it adds none
            a, b, three = _more_libs(ws, w, head[q], x, y, a, b)
            if three:
                return False
    if _libs_after(ws, w, x, c) != 2:
        return False
    s = g
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            if board[q] == c:
                h = head[q]
                if _in_atari(ws, h) and ws[R_LSUM, h] // ws[R_LIBS, h] != x:
                    return False
        s = nxt[s]
        if s == g:
            return True


@bare_kernel
def _add(out, n, p):
    """Appends p to the candidates out[:n] unless it is there; returns the new count."""
    for i in range(n):
        if out[i] == p:
            return n
    out[n] = p
    return n + 1


@bare_kernel
def _own_blocks_next_to(ws, w, c, p):
    """One stone of each distinct block of c touching the point p, the first met in the order (1, -1, w, -w):
    (s1, s2, s3, s4), 0 for none."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    s1 = s2 = s3 = s4 = 0
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] != c:
            continue
        h = head[q]
        if (s1 != 0 and h == head[s1]) or (s2 != 0 and h == head[s2]) or (s3 != 0 and h == head[s3]):
            continue
        if s1 == 0:
            s1 = q
        elif s2 == 0:
            s2 = q
        elif s3 == 0:
            s3 = q
        else:
            s4 = q
    return s1, s2, s3, s4


@bare_kernel
def two_lib_moves(ws, w, c, last, ko):
    """The two-liberty rule's candidate moves for c after the opponent's stone at `last` (module docstring), in
    ws[R_STACK][:n]; returns n."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    out = ws[R_STACK]
    n = 0
    g = head[last]
    k, a, b = block_libs(ws, w, last)
    if k == 2:
        if _atari_holds(ws, w, g, a, b, c, ko):
            n = _add(out, n, a)
        if _atari_holds(ws, w, g, b, a, c, ko):
            n = _add(out, n, b)
    for q in _own_blocks_next_to(ws, w, c, last):
        if q == 0:
            break
        h = head[q]
        k, a, b = block_libs(ws, w, q)
        if k != 2:
            continue
        mv = _capture_next_to(ws, w, h, ko)
        if mv != 0:
            n = _add(out, n, mv)
            continue
        for lib in (a, b):
            if lib != ko and not _is_own_eye(board, w, lib, c) and _libs_after3(ws, w, lib, c) >= 3:
                n = _add(out, n, lib)
    return n


@bare_kernel
def _capture_is_snapback(ws, w, g, lib, c):
    """c's capture of the lone opponent stone g (in atari, liberty lib) is answered by a snapback: lib has no empty
    neighbour and is no eye of the opponent's, and every other block next to lib is an opponent block with two or
    more liberties or an own block in atari (Pachi's capturing_group_is_snapback)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    o = 3 - c
    if ws[R_GSIZE, head[g]] != 1 or _eyelike(board, w, lib, o):
        return False
    for d in (1, -1, w, -w):
        q = lib + d
        v = board[q]
        if v == EMPTY:
            return False
        if v == o and head[q] != head[g] and _in_atari(ws, head[q]):
            return False  # the capture takes a second block
        if v == c and not _in_atari(ws, head[q]):
            return False
    return True


@bare_kernel
def _can_capture(ws, w, g, c, ko):
    """The liberty at which c usefully captures the opponent block g in atari (not the ko point, no snapback), or
    0 (Pachi's can_capture)."""
    lib = ws[R_LSUM, g] // ws[R_LIBS, g]
    if lib == ko or _capture_is_snapback(ws, w, g, lib, c):
        return 0
    return lib


@bare_kernel
def _countercaptures(ws, w, g, ko, out, n):
    """Appends to out[:n] the captures of the opponent blocks in atari touching c's block g (_can_capture) that are
    not there yet; returns (the new count, whether there is any)."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    c = board[g]
    found = False
    s = g
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            if board[q] == 3 - c and _in_atari(ws, head[q]):
                lib = _can_capture(ws, w, head[q], c, ko)
                if lib != 0:
                    n = _add(out, n, lib)
                    found = True
        s = nxt[s]
        if s == g:
            return n, found


@bare_kernel
def _border_ladder(ws, w, lib, c):
    """c's block in atari extending on its liberty lib, a first-line point (not a corner) with one c neighbour, is
    caught in a first-line ladder (Pachi's is_border_ladder, countercaptures excluded by the caller): c has no
    stone two points away along the edge on both sides, and the two points one line in, beside lib, hold blocks
    with two or more liberties that can take the chase (with two, the point two away along the edge is empty and
    their liberties are not adjacent)."""
    board = ws[R_BOARD]
    edge = 0
    for d in (1, -1, w, -w):
        if board[lib + d] == BORDER:
            edge = d
    along = w if edge == 1 or edge == -1 else 1
    if board[lib + 2 * along] == c and board[lib - 2 * along] == c:
        return False
    for side in (along, -along):
        q = lib + side - edge
        if board[q] == EMPTY or board[q] == BORDER:
            return False
        n, a, b = block_libs(ws, w, q)
        if n < 2:
            return False
        if n < 3 and (board[lib + 2 * side] != EMPTY or abs(a - b) == 1 or abs(a - b) == w):
            return False
    return True


@bare_kernel
def _first_line_escape(board, w, lib, c):
    """lib is a first-line point but no corner, with exactly one c neighbour (the block it extends)."""
    _, own, _, edges = _neighbours(board, w, lib, c)
    return edges == 1 and own == 1


@bare_kernel
def moggy_atari_moves(ws, w, c, last, ko, ccap_roll):
    """Pachi's local atari rule (playout/moggy.c local_atari_check, tactics/1lib.c group_atari_check) for c after
    the opponent's stone at `last`: the capture of `last`'s block if it is in atari (_can_capture), and for each own
    block in atari next to `last` its countercaptures (_countercaptures) and, unless a countercapture exists and
    `ccap_roll` (a draw below ALWAYS_CCAP_RATE) keeps to them, its escape on the liberty: not for a lone stone whose
    liberty is an own eye-like point without an eye-like empty diagonal (a ko), not into a self-atari (the escaped
    block keeps two liberties, or the move captures), and without a countercapture not into a first-line ladder
    (_border_ladder). Candidates in ws[R_STACK][:n]; returns (n, force), force when a block of three or more stones
    is in atari (Pachi then always answers)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    out = ws[R_STACK]
    n = 0
    force = False
    g = head[last]
    if _in_atari(ws, g):
        lib = _can_capture(ws, w, g, c, ko)
        if lib != 0:
            n = _add(out, n, lib)
    for q in _own_blocks_next_to(ws, w, c, last):
        if q == 0:
            break
        h = head[q]
        if not _in_atari(ws, h):
            continue
        if ws[R_GSIZE, h] >= 3:
            force = True
        n, ccap = _countercaptures(ws, w, h, ko, out, n)
        if ccap and ccap_roll:
            continue
        lib = ws[R_LSUM, h] // ws[R_LIBS, h]
        if lib == ko:
            continue
        if ws[R_GSIZE, h] == 1 and _eyelike(board, w, lib, c):
            eyeconnect = False
            for e in (w + 1, w - 1, -w + 1, -w - 1):
                r = lib + e
                if board[r] == EMPTY and _eyelike(board, w, r, c):
                    eyeconnect = True
            if not eyeconnect:
                continue
        if _libs_after(ws, w, lib, c) != 2:
            continue
        if not ccap and _first_line_escape(board, w, lib, c) and _border_ladder(ws, w, lib, c):
            continue
        n = _add(out, n, lib)
    return n, force


@bare_kernel
def _miai_2lib(ws, w, g, a, b):
    """The block g with the two liberties a and b cannot be harmed by an atari (Pachi's miai_2lib as its code
    reads, where the pull-out branch never fires): a touches another block of g's colour not in atari, and b touches
    an empty point other than a or another such block."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    owner = board[g]
    connect = False
    for d in (1, -1, w, -w):
        q = a + d
        if board[q] == owner and head[q] != head[g] and not _in_atari(ws, head[q]):
            connect = True
    if not connect:
        return False
    for d in (1, -1, w, -w):
        q = b + d
        if q == a:
            continue
        if board[q] == EMPTY:
            return True
        if board[q] == owner and head[q] != head[g] and not _in_atari(ws, head[q]):
            return True
    return False


@bare_kernel
def _hopeless(board, w, lib, other, owner, c):
    """c defends its own block on `lib` (the other liberty `other`) with a move that gains nothing: lib touches
    no other own stone and has one empty neighbour, or two of which `other` is one (Pachi's defense_is_hopeless)."""
    if c != owner:
        return False
    free, own, _, _ = _neighbours(board, w, lib, owner)
    if own != 1:
        return False
    return free == 1 or (free == 2 and (abs(lib - other) == 1 or abs(lib - other) == w))


@bare_kernel
def _atari_two_lib(ws, w, g, c, ko, out, n):
    """Appends to out[:n] c's moves on the liberties of the two-liberty block g (Pachi's can_atari_group): a legal
    point that is no hopeless defence (_hopeless) and no self-atari for c (bad_selfatari, or a block of two or more
    left in atari); when only one of the two is not "lumpy" (three or more of its neighbours c's stones or the
    edge), only that one. Returns the new count."""
    board = ws[R_BOARD]
    owner = board[g]
    k, a, b = block_libs(ws, w, g)
    first_added = False
    have0 = False
    pref0 = True
    for i in range(2):
        lib = a if i == 0 else b
        other = b if i == 0 else a
        if lib == ko or _libs_after(ws, w, lib, c) == 0:
            continue
        if _hopeless(board, w, lib, other, owner, c):
            continue
        if not _random_ok(ws, w, lib, c, ko) or bad_selfatari(ws, w, lib, c):
            continue
        _, own, _, edges = _neighbours(board, w, lib, c)
        pref = own + edges < 3
        if i == 0:
            have0 = True
            pref0 = pref
        elif have0 and pref0 != pref:
            if not pref:
                continue
            if first_added:
                n -= 1
        before = n
        n = _add(out, n, lib)
        if i == 0:
            first_added = n > before
    return n


@bare_kernel
def _two_lib_check(ws, w, g, c, ko, flip, out, n):
    """Pachi's group_2lib_check of the two-liberty block g for c: nothing when g has miai (_miai_2lib, its liberties
    taken in the order block_libs finds them, or reversed with `flip`: Pachi's test depends on the order of its
    liberty list, which the workspace does not keep); else the
    moves on its liberties (_atari_two_lib), and when g is c's own, the captures of opponent blocks in atari next to
    it and the moves on the liberties of opponent two-liberty blocks next to it. Returns the new count."""
    _, a, b = block_libs(ws, w, g)
    if _miai_2lib(ws, w, g, b, a) if flip else _miai_2lib(ws, w, g, a, b):
        return n
    n = _atari_two_lib(ws, w, g, c, ko, out, n)
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    if board[g] != c:
        return n
    s = g
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            if board[q] != 3 - c:
                continue
            h = head[q]
            if _in_atari(ws, h):
                lib = ws[R_LSUM, h] // ws[R_LIBS, h]
                if lib != ko:
                    n = _add(out, n, lib)
                continue
            if block_libs(ws, w, h)[0] == 2:
                n = _atari_two_lib(ws, w, h, c, ko, out, n)
        s = nxt[s]
        if s == g:
            return n


@bare_kernel
def moggy_two_lib_moves(ws, w, c, last, ko, flip):
    """Pachi's local two-liberty rule (playout/moggy.c local_2lib_check, tactics/2lib.c) for c after the opponent's
    stone at `last`: _two_lib_check of `last`'s block if it has two liberties, and of each other block next to
    `last` with two liberties (in practice c's own); `flip` (a fair draw) orders the liberties of the miai tests.
    Candidates in ws[R_STACK][:n]; returns n."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    out = ws[R_STACK]
    n = 0
    g = head[last]
    if block_libs(ws, w, last)[0] == 2:
        n = _two_lib_check(ws, w, g, c, ko, flip, out, n)
    seen = 0
    for d in (1, -1, w, -w):
        q = last + d
        if board[q] != c and board[q] != 3 - c:
            continue
        h = head[q]
        if h == g or h == seen or block_libs(ws, w, q)[0] != 2:
            continue
        n = _two_lib_check(ws, w, h, c, ko, flip, out, n)
        seen = h
    return n


@bare_kernel
def nakade_move(ws, w, c, last, ko):
    """The vital point c plays in the eye space next to the opponent's stone at `last` (module docstring), or 0.
    The point has two or more empty neighbours in the region, so it is never an eye and never suicide; it must
    still pass the random rule's test (simple ko, no self-atari of two or more stones)."""
    board = ws[R_BOARD]
    e = 0
    for d in (1, -1, w, -w):
        q = last + d
        if board[q] == EMPTY:
            if e == 0:
                e = q
            elif q + e == 2 * last:  # opposite sides of L: L cuts the space in two, no single eye space
                return 0
    if e == 0:
        return 0
    region = ws[R_STACK]
    region[0] = e
    n = 1
    i = 0
    while i < n:
        s = region[i]
        i += 1
        for d in (1, -1, w, -w):
            r = s + d
            v = board[r]
            if v == c:
                return 0
            if v == EMPTY:
                known = False
                for j in range(n):
                    if region[j] == r:
                        known = True
                        break
                if not known:
                    if n == NAKADE_MAX:
                        return 0
                    region[n] = r
                    n += 1
    if n < 3:
        return 0
    kills, _, vital = _dead_shape(region, n, w)
    if kills and _random_ok(ws, w, vital, c, ko):
        return vital
    return 0


@bare_kernel
def _dead_shape(region, n, w):
    """(kills, square, vital) for the connected points region[:n] (n <= NAKADE_MAX) as an eye space: kills when one
    vital point leaves no two eyes in it (n <= 3; pyramid four; bulky or crossed five; rabbity six), square for the
    square four (dead without a vital point: whatever the owner plays inside leaves a killable three); vital is the
    point with the most neighbours inside the region (module docstring)."""
    vital = 0
    most = 0
    deg1 = 0
    deg2 = 0
    deg3 = 0
    deg4 = 0
    for i in range(n):
        s = region[i]
        k = 0
        for j in range(n):
            t = region[j]
            if t == s + 1 or t == s - 1 or t == s + w or t == s - w:
                k += 1
        if k == 1:
            deg1 += 1
        elif k == 2:
            deg2 += 1
        elif k == 3:
            deg3 += 1
        elif k == 4:
            deg4 += 1
        if k > most:
            most = k
            vital = s
    if n <= 3:
        kills = True  # one or two points: one eye; straight or bent three: one middle point with two neighbours
    elif n == 4:
        kills = deg3 == 1  # pyramid four
    elif n == 5:
        kills = (deg3 == 1 and deg1 == 1) or deg4 == 1  # bulky five, crossed five
    else:
        kills = deg4 == 1 and deg2 == 3  # rabbity six
    return kills, n == 4 and deg2 == 4, vital


@bare_kernel
def killing_sacrifice(ws, w, p, c, ko):
    """c's move at the empty point p joins own stones into a block of at most NAKADE_MAX stones left with one
    liberty l (a self-atari that workspace._random_ok refuses) and is a killing sacrifice (module docstring): it
    captures nothing, p is not the ko point, every opponent block next to the new block is left with l as its only
    liberty, and the new block's points are a dead eye space (_dead_shape: a vital point kills it, or a square
    four), the space the opponent's capture at l leaves it. False for every other move."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    o = 3 - c
    if p == ko:
        return False
    region = ws[R_STACK]
    region[0] = p
    n = 1
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] != c:
            continue
        known = False
        for j in range(1, n):
            if region[j] == q:
                known = True
                break
        if known:
            continue
        h = head[q]
        s = h
        while True:
            if n == NAKADE_MAX:
                return False
            region[n] = s
            n += 1
            s = nxt[s]
            if s == h:
                break
    if n < 2:
        return False
    lib = 0
    for i in range(n):
        for d in (1, -1, w, -w):
            r = region[i] + d
            if r != p and board[r] == EMPTY:
                if lib == 0:
                    lib = r
                elif r != lib:
                    return False
    if lib == 0:
        return False
    for i in range(n):
        for d in (1, -1, w, -w):
            r = region[i] + d
            if board[r] == o:
                k, a, b = block_libs(ws, w, r)
                if k == 1 and a == p:
                    return False  # the move captures
                if k == 3 or (a != p and a != lib) or (b != 0 and b != p and b != lib):
                    return False
    kills, square, _ = _dead_shape(region, n, w)
    return kills or square


@bare_kernel
def _neighbours(board, w, p, c):
    """(empty, c, opponent, border) counts of the four neighbours of p."""
    e = 0
    own = 0
    opp = 0
    edge = 0
    for d in (1, -1, w, -w):
        v = board[p + d]
        if v == EMPTY:
            e += 1
        elif v == c:
            own += 1
        elif v == BORDER:
            edge += 1
        else:
            opp += 1
    return e, own, opp, edge


@bare_kernel
def _snapback(ws, w, p, lib, c):
    """c's stone at p with its one liberty lib sets up a snapback (module docstring): the capture at lib cannot
    escape. Called when an opponent block next to p has exactly two liberties."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    o = 3 - c
    for d in (1, -1, w, -w):
        q = lib + d
        v = board[q]
        if v == c:
            if _in_atari(ws, head[q]):
                return False
        elif v == o:
            n, a, b = block_libs(ws, w, q)
            if n > 2 or (n == 2 and a != p and b != p):
                return False
    return True


@bare_kernel
def _throw_in_shape(board, w, p, lib, c):
    """The one liberty lib of c's throw-in stone at p is enclosed like a false eye's neighbour (module docstring)."""
    o = 3 - c
    _, _, opp, edge = _neighbours(board, w, lib, c)
    if opp == 0 or opp + edge < 2:
        return False
    across = w if abs(lib - p) == 1 else 1  # the line p-l is horizontal: look above and below l
    for q in (lib + across, lib - across):
        if board[q] != o and board[q] != BORDER:
            return False
    return True


@bare_kernel
def bad_selfatari(ws, w, p, c):
    """c's stone at the empty point p is a bad single-stone self-atari (module docstring): it joins no own stone,
    captures nothing, keeps exactly one liberty, and is no snapback, throw-in or killing move inside the opponent's
    last liberties. False for every other move (suicide included: the legality test is the caller's)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    o = 3 - c
    lib = 0
    edge = 0
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            if lib != 0:
                return False
            lib = q
        elif v == c:
            return False
        elif v == BORDER:
            edge += 1
        elif _in_atari(ws, head[q]):
            return False
    if lib == 0:
        return False
    lib_empty, lib_own, lib_opp, _ = _neighbours(board, w, lib, c)
    other = 0  # the other liberty of the opponent blocks next to p with exactly two (-1: they differ)
    most = 0  # the most liberties (counted to 3) of an opponent block next to p
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] != o:
            continue
        n, a, b = block_libs(ws, w, q)
        most = max(most, n)
        if n == 2:
            x = b if a == p else a
            if other == 0:
                other = x
            elif other != x:
                other = -1
    if other != 0 and lib_empty == 1 and lib_opp > 0 and _snapback(ws, w, p, lib, c):
        return False
    if edge < 2 and _falsified(board, w, p, o):  # p is a false eye of the opponent's
        return not _throw_in_shape(board, w, p, lib, c)
    if other == -1:
        return True
    if other != 0:
        return not (other == lib and lib_empty == 1 and lib_own == 0)
    if most > 2 or lib_empty != 1 or lib_own != 0 or lib_opp < 2:
        return True
    for s in (p, lib):
        for d in (w + 1, w - 1, -w + 1, -w - 1):
            if board[s + d] == EMPTY:
                return True
    return False
