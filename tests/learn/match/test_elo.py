"""Elo, interval, LOS and SPRT numbers against closed formulas and published cutechess / fastchess values."""

import math
from statistics import NormalDist

import pytest

from learn.match import elo

# cutechess-cli prints the interval with its own inverse-erf approximation, whose z for 95% is 1.95716
# instead of 1.95996; feeding the matching confidence reproduces its published numbers exactly.
CUTECHESS_CONFIDENCE = 2 * NormalDist().cdf(1.9571619316560775) - 1


def test_score_elo_round_trip_and_known_points():
    assert elo.score_to_elo(0.5) == 0.0
    assert elo.score_to_elo(10 / 11) == pytest.approx(400.0)  # 10:1 odds = 400 Elo
    assert elo.elo_to_score(400.0) == pytest.approx(10 / 11)
    for e in (-350.0, -20.0, 0.0, 3.5, 700.0):
        assert elo.score_to_elo(elo.elo_to_score(e)) == pytest.approx(e)
    assert elo.score_to_elo(0.0) == -math.inf and elo.score_to_elo(1.0) == math.inf


def test_trinomial_interval_matches_hand_computation():
    w, l, d = 30, 20, 50
    n = w + l + d
    mu = (w + d / 2) / n  # 0.55
    var = (w * (1 - mu) ** 2 + d * (0.5 - mu) ** 2 + l * mu**2) / n
    se = math.sqrt(var / n)
    z = 1.959963984540054
    est = elo.trinomial(w, l, d)
    assert est.score == pytest.approx(0.55)
    assert est.elo == pytest.approx(-400 * math.log10(1 / 0.55 - 1))  # 34.86
    assert est.elo == pytest.approx(34.86, abs=0.01)
    assert est.lower == pytest.approx(-400 * math.log10(1 / (mu - z * se) - 1))
    assert est.upper == pytest.approx(-400 * math.log10(1 / (mu + z * se) - 1))
    assert est.lower < est.elo < est.upper


@pytest.mark.parametrize(
    "w,l,d,elo_,err,los_pct",
    [
        (63, 17, 26, 161.5, 62.3, 100.0),  # published cutechess-cli outputs ("Score of X vs Y: W - L - D")
        (5383, 5132, 4808, 5.7, 4.6, 99.3),
        (162, 201, 87, -30.2, 28.9, 2.0),
    ],
)
def test_reproduces_published_cutechess_results(w, l, d, elo_, err, los_pct):
    est = elo.trinomial(w, l, d, confidence=CUTECHESS_CONFIDENCE)
    assert round(est.elo, 1) == elo_
    assert round(est.error, 1) == err
    assert round(100 * elo.los(w, l), 1) == los_pct
    exact = elo.trinomial(w, l, d)  # exact 95% z: at most 0.1 Elo wider than cutechess prints
    assert 0 <= exact.error - est.error < 0.15


def test_los_closed_form():
    assert elo.los(10, 10) == 0.5
    assert elo.los(0, 0) == 0.5
    # W - L = 10 over 50 decisive games: Phi(10 / sqrt(50))
    assert elo.los(30, 20) == pytest.approx(NormalDist().cdf(10 / math.sqrt(50)))


def test_pentanomial_hand_computation_and_narrower_than_trinomial():
    pairs = [2, 10, 30, 12, 6]  # pair points 0, 1/2, 1, 3/2, 2
    n = sum(pairs)
    values = [0, 0.25, 0.5, 0.75, 1.0]
    mu = sum(v * c for v, c in zip(values, pairs)) / n
    var = sum(c * (v - mu) ** 2 for v, c in zip(values, pairs)) / n
    z = NormalDist().inv_cdf(0.975)
    est = elo.pentanomial(pairs)
    assert est.n == n and est.score == pytest.approx(mu)
    assert est.upper == pytest.approx(elo.score_to_elo(mu + z * math.sqrt(var / n)))
    # the same games as a trinomial sample, each 1-point pair being a win and a loss (the opening decided
    # the pair): the trinomial model overstates the variance, the pentanomial one does not
    w = 2 * pairs[4] + pairs[3] + pairs[2]
    l = 2 * pairs[0] + pairs[1] + pairs[2]
    d = pairs[1] + pairs[3]
    tri = elo.trinomial(w, l, d)
    assert tri.score == pytest.approx(mu)
    assert est.error < tri.error


@pytest.mark.parametrize(
    "wld,bounds,llr",
    [
        ((21404, 21184, 40708), (0.5, 2.5), -1.57),  # fastchess test suite, "logistic trinomial"
        ((57433, 57030, 106593), (0.0, 2.0), -2.59),
    ],
)
def test_sprt_trinomial_matches_fastchess(wld, bounds, llr):
    res = elo.sprt_trinomial(*wld, elo0=bounds[0], elo1=bounds[1])
    assert res.llr == pytest.approx(llr, abs=0.01)


@pytest.mark.parametrize(
    "ll_ld_wl_dd_wd_ww,bounds,llr",
    [
        ((223, 9863, 20279, 1000, 10037, 246), (0.5, 2.5), -3.07),  # fastchess, "logistic pentanomial"
        ((871, 26175, 55003, 980, 26678, 821), (0.0, 2.0), -4.98),
    ],
)
def test_sprt_pentanomial_matches_fastchess(ll_ld_wl_dd_wd_ww, bounds, llr):
    ll, ld, wl, dd, wd, ww = ll_ld_wl_dd_wd_ww
    res = elo.sprt_pentanomial([ll, ld, wl + dd, wd, ww], elo0=bounds[0], elo1=bounds[1])
    assert res.llr == pytest.approx(llr, abs=0.01)
    assert res.verdict == "H0"  # both are below ln(0.05/0.95) = -2.944


def test_sprt_bounds_formula_and_verdicts():
    lower, upper = elo.sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(math.log(0.05 / 0.95)) and upper == pytest.approx(math.log(0.95 / 0.05))
    assert upper == pytest.approx(2.944, abs=1e-3)
    # hand formula: N (s1 - s0)(2 mu - s0 - s1) / (2 var)
    w, l, d = 600, 400, 1000
    mu, n = (w + d / 2) / (w + l + d), w + l + d
    var = (w * (1 - mu) ** 2 + d * (0.5 - mu) ** 2 + l * mu**2) / n
    s0, s1 = elo.elo_to_score(0), elo.elo_to_score(10)
    res = elo.sprt_trinomial(w, l, d, elo0=0, elo1=10)
    assert res.llr == pytest.approx(n * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var))
    assert res.verdict == "H1"
    assert elo.sprt_trinomial(400, 600, 1000, elo0=0, elo1=10).verdict == "H0"
    assert elo.sprt_trinomial(5, 5, 5, elo0=0, elo1=10).verdict == "continue"
    assert elo.sprt_pentanomial([0, 0, 0, 0, 0], elo0=0, elo1=10).llr == 0.0
    # one-sided samples still decide (unseen outcomes regularised to 1e-3 games)
    assert elo.sprt_pentanomial([3, 0, 0, 0, 0], elo0=0, elo1=10).verdict == "H0"
    assert elo.sprt_pentanomial([0, 0, 0, 0, 3], elo0=0, elo1=10).verdict == "H1"


def test_sprt_rejects_bad_parameters():
    with pytest.raises(ValueError):
        elo.sprt_trinomial(1, 1, 1, elo0=5, elo1=0)
    with pytest.raises(ValueError):
        elo.sprt_trinomial(1, 1, 1, elo0=0, elo1=5, alpha=0.6, beta=0.5)


def test_degenerate_samples_give_infinite_bounds_not_errors():
    est = elo.trinomial(5, 0, 0)
    assert est.elo == math.inf and est.as_dict()["elo"] is None
    empty = elo.trinomial(0, 0, 0)
    assert empty.n == 0 and empty.as_dict()["error"] is None


def test_clean_sweep_has_the_exact_clopper_pearson_bound():
    """20-0: the 95 % lower bound of the score is 0.025^(1/20) = 0.8316 (the strength doc's hand figure)."""
    from learn.match.match import _fmt_elo

    est = elo.trinomial(20, 0, 0)
    assert elo.elo_to_score(est.lower) == pytest.approx(0.025 ** (1 / 20))
    assert est.lower == pytest.approx(277.4, abs=0.1)
    assert est.upper == math.inf
    assert _fmt_elo(est.as_dict()) == f">= {est.lower:+.1f}"
    lost = elo.pentanomial([10, 0, 0, 0, 0])
    assert elo.elo_to_score(lost.upper) == pytest.approx(1 - 0.025 ** (1 / 10))
    assert _fmt_elo(lost.as_dict()).startswith("<= -")
