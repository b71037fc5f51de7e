"""The node pool's layout: the arrays of the tree tuple (indices T_*) and their constructor new_tree, node
states and flags, the control words of ``ctl`` (indices C_*) and the parameter vectors of run_samples
(FP_*, IP_*).

Pool (structure of arrays, preallocated; ``tree`` is a tuple of them, indices T_*):
  nodes  value f64 (negamax E, from the node's side to move), first i64 (first edge), count i32 (edges),
         key i64 (position key), state i64 (low 2 bits UNEXPANDED / EXPANDING / EXPANDED, upper bits a backup
         sequence counter), flags i8 (FLAG_TERMINAL), depth i16 (plies below the search root at creation)
  edges  move i32, child i32 (node index), visits i64 (only for the UCT policy; length 1 otherwise),
         MC-RAVE statistics rn, rw, an, aw f64 (only for the RAVE policy; length 1 otherwise): MC count
         N(s,a) and summed outcome, AMAF count N~(s,a) and summed outcome (seed 000 eq. 13-17), outcomes
         in [0, 1] from the mover's side, virtual prior visits included (eq. 48-51); rc f64 (only for the
         RAVE policy with per-child prior counts; length 1 otherwise): the prior's virtual MC visits C(s,a)
         of the edge (eq. 49), which the real visit count N(s,a) - C(s,a) leaves out
  table  key i64, node i64 (open addressing, graph mode only; node -1 empty, -2 being written)
  widening (progressive widening only; length 1 otherwise): moves i32 per node, the edges reserved at its
         expansion (all its moves, the ones not yet entered after the `count` entered ones, child -1), and
         wide i64 per node, the entered children plus one while a thread is entering the next (widen_claim)
A node is *proven* when |value| >= MATE_THRESHOLD; that is derived from the value, not stored.
``ctl`` is one shared int64 array of control words and counters (indices C_*); hot counters sit on their
own cache lines.
"""

import numpy as np

# --- node state (low two bits of state[]) and flags ---------------------------------------------
UNEXPANDED, EXPANDING, EXPANDED = 0, 1, 2
PHASE_MASK = 3
SEQ_STEP = 4  # added to state[] by every child update (see backup_node)
FLAG_TERMINAL = 1  # the game marked the position terminal: its value is exact
FLAG_NO_SIM = 2  # expand_amaf: the child's value is a guess (its prior), no playout ran from it
FLAG_LAZY = 4  # the value is the game's cheap estimate; leaf_value refines it when first reached
FLAG_FORCING = 8  # the move to this child is forcing (shogi: a check): selection adds FP_FORCING to its value

# --- tree tuple indices ---------------------------------------------------------------------------
T_VALUE, T_FIRST, T_COUNT, T_KEY, T_STATE, T_FLAGS, T_DEPTH = 0, 1, 2, 3, 4, 5, 6
T_EMOVE, T_ECHILD, T_EVISITS, T_TKEY, T_TNODE = 7, 8, 9, 10, 11
T_RN, T_RW, T_AN, T_AW = 12, 13, 14, 15
T_NMOVES, T_WIDE = 16, 17
T_EBIAS = 18  # per edge under progressive widening: log p of the move by the game's prior (order_children)
T_RC = 19  # per edge under RAVE with per-child prior counts: the prior's virtual MC visits C(s,a) (rave_init_edges)

# --- ctl indices ------------------------------------------------------------------------------------
C_STOP, C_NODE_LIMIT, C_SAMPLE_LIMIT, C_ROOT, C_MEMFULL = 0, 1, 2, 3, 4
C_SAMPLES = 8  # samples started (claimed against C_SAMPLE_LIMIT)
C_WORK = 16  # positions evaluated (the games' `work`), the `nodes` statistic
C_NODES = 24  # node slots used
C_EDGES = 32  # edge slots used
C_TABLE, C_PRIVATE, C_CHILDREN, C_WASTED_EDGES = 40, 41, 42, 43
C_SELDEPTH, C_COLLISIONS, C_CYCLES, C_EXPANSIONS = 44, 45, 46, 47
C_REFINED = 48  # lazy leaves refined by the game's leaf_value
C_JOINED = 49  # children evaluated by a thread that joined another thread's expansion
CTL_SIZE = 56

# --- float / int parameter vectors of run_samples ---------------------------------------------------
FP_TSEL, FP_TBACK, FP_CUCT, FP_VSCALE, FP_RAVE_BIAS, FP_PRIOR_N, FP_PRIOR_AMAF, FP_FORCING = 0, 1, 2, 3, 4, 5, 6, 7
FP_ANNEAL_N, FP_TSEL_MIN = 8, 9  # visit-annealed selection temperature (annealed_temperature)
FP_BACK_ANNEAL_N, FP_TBACK_MIN = 10, 11  # visit-annealed backup temperature (backup_node)
FP_WIDEN_K0, FP_WIDEN_A, FP_WIDEN_B = 12, 13, 14  # progressive widening (widen_target); k0 = 0: off
FP_PRIOR_BETA = 15  # progressive bias: selection weighs a child by p^beta (select_softmax); 0 = off
FP_EXPAND_N = 16  # RAVE: real MC visits of a leaf's edge before it is expanded (leaf playouts until then); 0 = off
FP_AMAF_DISTANCE = 17  # RAVE: AMAF credits weighted from 1 + d near the node down to 1 (rave.amaf_weight); 0 = off
FP_SIZE = 18
IP_POLICY, IP_GRAPH, IP_MAXDEPTH, IP_THREAD, IP_JOINT, IP_PUBLISH = 0, 1, 2, 3, 4, 5
IP_SIZE = 6
POLICY_SOFTMAX, POLICY_UCT, POLICY_RAVE = 0, 1, 2
NO_MOVE = -1  # a trace entry that is no move (a pass in a Go playout): keeps the parity

TABLE_EMPTY, TABLE_BUSY = -1, -2
NO_LIMIT = np.iinfo(np.int64).max


def new_tree(n_nodes, n_edges, table_slots=1, uct=False, rave=False, widen=False, prior_counts=False):
    """The one constructor of the pool's tree tuple (indices T_*): every pool has the same array types, so
    numba compiles each tree kernel once. Per-edge visit counts only for UCT, RAVE statistics only for
    RAVE, the per-edge virtual visits of the prior only for RAVE with per-child prior counts (`prior_counts`),
    and the per-node widening arrays and per-edge log priors only for progressive widening (length 1
    otherwise); table_slots a power of two (graph mode) or 1."""
    er = n_edges if rave else 1
    rc = n_edges if rave and prior_counts else 1
    wn = n_nodes if widen else 1
    we = n_edges if widen else 1
    return (
        np.zeros(n_nodes, np.float64),
        np.full(n_nodes, -1, np.int64),
        np.zeros(n_nodes, np.int32),
        np.zeros(n_nodes, np.int64),
        np.zeros(n_nodes, np.int64),
        np.zeros(n_nodes, np.int8),
        np.zeros(n_nodes, np.int16),
        np.zeros(n_edges, np.int32),
        np.full(n_edges, -1, np.int32),
        np.zeros(n_edges if uct else 1, np.int64),
        np.zeros(table_slots, np.int64),
        np.full(table_slots, TABLE_EMPTY, np.int64),
        np.zeros(er),
        np.zeros(er),
        np.zeros(er),
        np.zeros(er),
        np.zeros(wn, np.int32),
        np.zeros(wn, np.int64),
        np.zeros(we, np.float32),
        np.zeros(rc),
    )
