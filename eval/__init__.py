"""The recipes of the shogi evaluation's shipped weights (usi_engine/shogi_eval/weights/): the material-only
start of learning (make_material_weights.py), the hand-made file, the learned weights plus hand-made king terms
(make_handmade_weights.py), and the engine's default, a self-play checkpoint started from the hand-made file
(make_default_weights.py). Above the engine: eval imports usi_engine, never the other way round."""
