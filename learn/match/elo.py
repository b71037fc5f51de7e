"""Match statistics: Elo difference with a confidence interval, LOS, and a GSPRT (SPRT) verdict.

Two models of the same match:
- trinomial: every game is an independent draw from {loss 0, draw 1/2, win 1};
- pentanomial: games come in pairs (same opening, colours swapped) and every *pair* is one draw from
  {0, 1/4, 1/2, 3/4, 1} (pair score / 2). Paired games are correlated through the opening, so the
  pentanomial variance is the honest one for a paired match (fishtest, fastchess use it).

Both use the normal approximation of the mean score mu with its sample variance:
  se = sqrt(var / N),  Elo(mu) = -400 log10(1/mu - 1)  (logistic Elo),
  interval = Elo(mu -/+ z se)  with z = Phi^-1((1 + confidence) / 2).
The half-width reported by cutechess is (Elo(mu + z se) - Elo(mu - z se)) / 2; we report it too.

LOS (likelihood of superiority) uses the classic draw-free formula of cutechess / chessprogramming.org:
  LOS = 1/2 (1 + erf((W - L) / sqrt(2 (W + L)))).

SPRT: the generalised SPRT of fishtest ("logistic" Elo model) with the normal approximation of the
log-likelihood ratio (M. Van den Bergh, "A practical introduction to the GSPRT", 2016):
  LLR = N (s1 - s0) (2 mu - s0 - s1) / (2 var),   s_i = 1 / (1 + 10^(-elo_i / 400)),
with N, mu, var taken per game (trinomial) or per pair (pentanomial). Bounds: accept H0 when
LLR <= ln(beta / (1 - alpha)), accept H1 when LLR >= ln((1 - beta) / alpha) (Wald).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

DEFAULT_CONFIDENCE = 0.95
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)  # pentanomial outcomes: pair points (0..2) / 2
ZERO_COUNT = 1e-3  # stand-in count for an outcome not observed yet (SPRT only)


def score_to_elo(score: float) -> float:
    """Logistic Elo difference for an expected score in (0, 1); +-inf at the ends."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_to_score(elo: float) -> float:
    """Expected score of a side `elo` logistic-Elo points stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def mean_var(scores, counts) -> tuple[float, float, int]:
    """Mean and (population) variance of a discrete sample given as outcome values and their counts."""
    n = sum(counts)
    if n == 0:
        return 0.5, 0.0, 0
    mu = sum(s * c for s, c in zip(scores, counts)) / n
    var = sum(c * (s - mu) ** 2 for s, c in zip(scores, counts)) / n
    return mu, var, n


@dataclass
class EloEstimate:
    """Elo difference (first player minus second) with a two-sided interval."""

    model: str
    n: int  # games (trinomial) or pairs (pentanomial)
    score: float
    elo: float
    lower: float
    upper: float
    error: float  # cutechess-style half width (upper - lower)/2 on the Elo scale
    confidence: float

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def elo_estimate(scores, counts, model: str, confidence: float = DEFAULT_CONFIDENCE) -> EloEstimate:
    """Normal-approximation Elo interval for outcomes `scores` observed `counts` times. A clean sweep (every
    outcome the best or every one the worst) has no variance to approximate: its finite bound is the exact
    Clopper-Pearson one, (alpha/2)^(1/n) for n straight wins, so 20-0 still says ">= +X Elo"."""
    mu, var, n = mean_var(scores, counts)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    se = math.sqrt(var / n) if n else math.inf
    lo, hi = score_to_elo(mu - z * se), score_to_elo(mu + z * se)
    if n and var == 0.0 and mu in (min(scores), max(scores)):
        bound = ((1.0 - confidence) / 2.0) ** (1.0 / n)
        lo, hi = (score_to_elo(bound), math.inf) if mu == max(scores) else (-math.inf, score_to_elo(1.0 - bound))
    return EloEstimate(model, n, mu, score_to_elo(mu), lo, hi, (hi - lo) / 2.0, confidence)


def trinomial(wins: int, losses: int, draws: int, confidence: float = DEFAULT_CONFIDENCE) -> EloEstimate:
    """Elo interval treating games as independent."""
    return elo_estimate((1.0, 0.0, 0.5), (wins, losses, draws), "trinomial", confidence)


def pentanomial(pairs, confidence: float = DEFAULT_CONFIDENCE) -> EloEstimate:
    """Elo interval from pair counts [n0, n1/2, n1, n3/2, n2] (pair points 0, 0.5, 1, 1.5, 2)."""
    return elo_estimate(PAIR_SCORES, pairs, "pentanomial", confidence)


def los(wins: int, losses: int) -> float:
    """Likelihood of superiority (draws carry no information in this formula)."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


@dataclass
class SprtResult:
    llr: float
    lower_bound: float
    upper_bound: float
    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str
    verdict: str  # "H0" (elo0 accepted), "H1" (elo1 accepted) or "continue"

    def as_dict(self) -> dict:
        return asdict(self)


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds for the log-likelihood ratio."""
    if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
        raise ValueError(f"SPRT needs 0 < alpha, beta and alpha + beta < 1 (got {alpha}, {beta})")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr_normal(scores, counts, elo0: float, elo1: float) -> float:
    """Normal approximation of the GSPRT log-likelihood ratio (module docstring).

    Outcomes never observed count as ZERO_COUNT games (as fastchess regularises), so a one-sided sample
    such as "every game lost" has a positive variance and reaches a verdict instead of LLR = 0."""
    n = sum(counts)
    if n == 0:
        return 0.0
    mu, var, _ = mean_var(scores, [c if c > 0 else ZERO_COUNT for c in counts])
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return n * (s1 - s0) * (2.0 * mu - s0 - s1) / (2.0 * var)


def sprt(scores, counts, model: str, elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05) -> SprtResult:
    """SPRT state and verdict for the sample so far."""
    if elo0 >= elo1:
        raise ValueError(f"SPRT needs elo0 < elo1 (got {elo0}, {elo1})")
    lower, upper = sprt_bounds(alpha, beta)
    llr = llr_normal(scores, counts, elo0, elo1)
    verdict = "H1" if llr >= upper else "H0" if llr <= lower else "continue"
    return SprtResult(llr, lower, upper, elo0, elo1, alpha, beta, model, verdict)


def sprt_trinomial(wins: int, losses: int, draws: int, **kw) -> SprtResult:
    return sprt((1.0, 0.0, 0.5), (wins, losses, draws), "trinomial", **kw)


def sprt_pentanomial(pairs, **kw) -> SprtResult:
    return sprt(PAIR_SCORES, pairs, "pentanomial", **kw)
