"""Learning (policy-gradient expectation over MCSS trees), self-play and engine-vs-engine matches."""
