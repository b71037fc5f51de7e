"""Searching shogi positions: the glue between the rules (usi_engine/shogi), the evaluation
(usi_engine/shogi_eval) and the game-agnostic MCSS core (usi_engine/search).

Layers point one way: shogi (rules) <- shogi_eval (features, weights) <- shogi_search <- engine <- protocol
(docs/README.md "Layers", tests/test_layers.py). The quiescence search, the game contract the core expands
through (ShogiAdapter), and the df-pn mate solver live here rather than beside the rules so that the rules
package never imports the evaluation.
"""
