"""The match runner and referee: engines over real pipes (USI, GTP), strict shogi and Go referees, clocks,
openings, game records, Elo/SPRT statistics, and the in-process arena. Learning (learn/) uses it to
measure checkpoints; it knows nothing of learning."""
