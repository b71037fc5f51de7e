"""The shogi evaluation: a linear function of sparse features (material, KP, PP, king and effect terms), its
exact gradient, the search's incremental form, and its weight files with the shipped weights.

Layers point one way: the rules (usi_engine/shogi) <- this evaluation <- the shogi search glue
(usi_engine/shogi_search) and learning. Modules: features.py (the feature set and the layout of the weight
vector), king_terms.py (the king and effect terms), linear.py (the full evaluation and its gradient, the
reference), incremental.py (the differential evaluation the search runs), evalfile.py (weight files, the shipped
weights/ and their names), bench.py (`usi-engine bench eval`). The recipes that made the shipped files are the
top-level package eval/.
"""
