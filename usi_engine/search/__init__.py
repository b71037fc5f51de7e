"""Game-agnostic Monte-Carlo Softmax Search core."""
