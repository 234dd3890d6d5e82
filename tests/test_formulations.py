"""The formulation parts: each conjugate against scipy's numerical supremum, Fenchel-Young
(f(x) + f*(y) >= x.y, with equality at the dual point the part gives), and the scalings along a
ray that the certificates maximise over."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from svmlab.estimator.certificates import Formulation, LinearImage
from svmlab.estimator.formulations import (
    L1,
    L2,
    ElasticNet,
    FreeBias,
    Hinge,
    PenalisedBias,
    PowerHinge,
    SmoothedHinge,
    Squared,
    SquaredHinge,
)

LOSSES = [Hinge(), SquaredHinge(), Squared(), PowerHinge(1.5), PowerHinge(3.0),
          SmoothedHinge(np.full(1, 0.7))]
PENALTIES = [L2(), L1(), ElasticNet(0.7, 0.3), ElasticNet(0.0, 0.4)]
rng = np.random.default_rng(0)
MARGINS = rng.normal(1.0, 1.5, size=12)


def numeric_sup(f, u: float, bound: float = 60.0) -> float:
    """sup_z u z - f(z) over |z| <= bound, by scipy (f of one number)."""
    result = minimize_scalar(lambda z: f(z) - u * z, bounds=(-bound, bound), method="bounded",
                             options={"xatol": 1e-12})
    return -result.fun


def inside(loss, u: np.ndarray) -> np.ndarray:
    """u moved into the conjugate's domain (hinge: [0, 1]; one-sided losses: u >= 0)."""
    if isinstance(loss, Hinge | SmoothedHinge):
        return np.clip(u, 0.0, 1.0)
    return u if loss.signed else np.abs(u)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_loss_conjugate_is_the_numerical_supremum(loss):
    phi = lambda z: loss.value(np.array([1.0 - z]))  # phi of the violation z
    for u in inside(loss, rng.uniform(-1.0, 2.0, size=6)):
        assert loss.conjugate(np.array([u])) == pytest.approx(numeric_sup(phi, u), abs=1e-7)
    if not loss.signed:
        assert loss.conjugate(np.array([0.5, -0.1])) == np.inf


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_loss_fenchel_young_holds_with_equality_at_the_model_dual_point(loss):
    z = 1.0 - MARGINS
    u = loss.dual_candidate(MARGINS, 1.0)  # phi'(z), a subgradient for the hinge
    assert loss.value(MARGINS) + loss.conjugate(u) == pytest.approx(z @ u, rel=1e-12, abs=1e-12)
    for _ in range(5):
        other = inside(loss, rng.uniform(-1.0, 2.0, size=len(z)))
        assert loss.value(MARGINS) + loss.conjugate(other) >= z @ other - 1e-12


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_loss_scaling_is_the_conjugate_along_a_ray(loss):
    C = 0.8
    a = loss.feasible(C * inside(loss, rng.uniform(0.0, 1.0, size=10)))
    scaling = loss.scaling(a, C)
    for t in (0.3, 0.9, min(1.0, scaling.upper)):
        expected = C * loss.conjugate(t * a / C)
        assert t ** scaling.degree * scaling.coef == pytest.approx(expected, rel=1e-12)
    if np.isfinite(scaling.upper):  # the hinge's box a_i <= C
        assert loss.conjugate(1.01 * scaling.upper * a / C) == np.inf


@pytest.mark.parametrize("penalty", PENALTIES, ids=lambda p: f"{p.name}{vars(p)}")
def test_penalty_conjugate_and_fenchel_young(penalty):
    w = rng.normal(size=7)
    v = w if isinstance(penalty, L2) else np.sign(w)  # a subgradient of R at w
    if isinstance(penalty, ElasticNet):
        v = penalty.lam * w + penalty.mu * np.sign(w)
    assert penalty.value(w) + penalty.conjugate(v) == pytest.approx(w @ v, rel=1e-12)
    for _ in range(5):
        other = rng.normal(size=7) * 0.3
        assert penalty.value(w) + penalty.conjugate(other) >= w @ other - 1e-12
    for x in (-0.9, 0.2, 1.7):  # separable: R*(v) is the sum of one-coordinate suprema
        conjugate = penalty.conjugate(np.array([x]))
        if np.isfinite(conjugate):
            one = lambda t: penalty.value(np.array([t]))
            assert conjugate == pytest.approx(numeric_sup(one, x), abs=1e-7)
        else:  # linear growth beyond the l1 ball: the supremum is unbounded
            assert not isinstance(penalty, L2) and abs(x) > getattr(penalty, "mu", 1.0)


def test_penalty_scalings_on_a_linear_image():
    X, y = rng.normal(size=(9, 4)), np.where(rng.random(9) < 0.5, -1.0, 1.0)
    image, a = LinearImage(X, y, np.zeros(4)), rng.uniform(0.0, 1.0, size=9)
    v = image.vector(a)
    l2 = L2().scaling(image, a)
    assert 0.7**2 * l2.coef == pytest.approx(L2().conjugate(0.7 * v), rel=1e-12)
    l1 = L1().scaling(image, a)
    assert L1().conjugate(l1.upper * v * (1 - 1e-12)) == 0.0
    assert L1().conjugate(l1.upper * v * 1.01) == np.inf


def test_elastic_net_best_scale_is_the_maximum_over_t():
    v, s = rng.normal(size=6), 0.9
    for penalty in (ElasticNet(0.7, 0.3), ElasticNet(0.0, 0.4)):
        grid = np.linspace(0.0, 2.0, 20001)  # the slope is at most s: a step gains <= s 1e-4
        best = max(t * s - penalty.conjugate(t * v) for t in grid)
        assert best - 1e-12 <= penalty.best_scaled_dual(s, v, 2.0) <= best + s * 1e-4


def test_biases_balance_and_penalise_the_constant_feature():
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    a = np.array([0.5, 0.9, 0.1, 0.2, 0.3])
    assert FreeBias().balance(a, y, signed=False) @ y == pytest.approx(0.0, abs=1e-15)
    assert FreeBias().balance(a - 0.4, y, signed=True) @ y == pytest.approx(0.0, abs=1e-15)
    assert PenalisedBias(2.0).penalty_part(3.0, L2()) == 0.5 * 1.5**2
    assert PenalisedBias(2.0).penalty_part(-3.0, L1()) == 1.5


def test_formulation_resolves_names_to_parts():
    form = Formulation("power_hinge", "l2", "free", power=1.5)
    assert isinstance(form.loss_term, PowerHinge) and form.loss_term.power == 1.5
    assert form.name == "hinge_p1.5_l2_bias"
    assert Formulation("squared", "l1", "penalised", 2.0).name == "squared_l1_penalised_bias"
    assert Formulation("hinge") == Formulation("hinge", "l2", "none")
    with pytest.raises(ValueError, match="unknown formulation"):
        Formulation("hinge", "l3")


def test_smoothed_hinge_lies_within_half_its_width_below_the_hinge():
    width = np.where(np.arange(len(MARGINS)) % 3 == 0, 0.0, 0.8)  # zero width: the hinge
    smoothed = SmoothedHinge(width)
    for i in range(len(MARGINS)):
        one, exact = SmoothedHinge(width[i:i + 1]), Hinge().value(MARGINS[i:i + 1])
        assert 0.0 <= exact - one.value(MARGINS[i:i + 1]) <= width[i] / 2 + 1e-15
    assert smoothed.value(np.ones(len(width))) == 0.0  # z = 0 on every row, zero widths too
    assert np.array_equal(smoothed.dual_candidate(np.ones(len(width)), 2.0),
                          np.zeros(len(width)))
