"""The formulation parts: each conjugate against scipy's numerical supremum, Fenchel-Young
(f(x) + f*(y) >= x.y, with equality at the dual point the part gives), the scalings along a
ray that the certificates maximise over; the free margin of the L2-SVM; and the metric names a
formulation builds and reads back."""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from svmlab.estimator.certificates import KernelImage, LinearImage, certify, dual_bound
from svmlab.estimator.formulations import (
    BIASES,
    L1,
    L2,
    L2SVM,
    METRIC_KINDS,
    ElasticNet,
    Formulation,
    FreeBias,
    FreeMargin,
    Hinge,
    MetricName,
    NoBias,
    PenalisedBias,
    PowerHinge,
    Scaling,
    SmoothedHinge,
    Squared,
    SquaredHinge,
    metric_name,
    parse_metric,
)
from svmlab.estimator.formulations import (
    LOSSES as LOSS_TABLE,
)
from svmlab.estimator.formulations import (
    PENALTIES as PENALTY_TABLE,
)
from svmlab.estimator.kernels import Kernel

LOSSES = [
    Hinge(),
    SquaredHinge(),
    Squared(),
    PowerHinge(1.5),
    PowerHinge(3.0),
    SmoothedHinge(np.full(1, 0.7)),
]
PENALTIES = [L2(), L1(), ElasticNet(0.7, 0.3), ElasticNet(0.0, 0.4)]
rng = np.random.default_rng(0)
MARGINS = rng.normal(1.0, 1.5, size=12)


def numeric_sup(f, u: float, bound: float = 60.0) -> float:
    """sup_z u z - f(z) over |z| <= bound, by scipy (f of one number)."""
    result = minimize_scalar(
        lambda z: f(z) - u * z, bounds=(-bound, bound), method="bounded", options={"xatol": 1e-12}
    )
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
        assert t**scaling.degree * scaling.coef == pytest.approx(expected, rel=1e-12)
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


@pytest.mark.parametrize("quadratic", [0.0, 0.35])  # the hinge's loss term, a smoothed one's
def test_elastic_net_best_scale_is_the_maximum_over_t(quadratic):
    X, y = rng.normal(size=(6, 6)), np.ones(6)
    image, a = LinearImage(X, y, np.zeros(6)), rng.uniform(0.0, 1.0, size=6)
    v, s = image.vector(a), 0.9
    loss = Scaling(2.0, quadratic, 0.0, 2.0)
    for penalty in (ElasticNet(0.7, 0.3), ElasticNet(0.0, 0.4 * np.abs(v).max())):
        grid = np.linspace(0.0, 2.0, 20001)  # the slope is at most s: a step gains <= s 1e-4
        best = max(t * s - t * t * quadratic - penalty.conjugate(t * v) for t in grid)
        assert best - 1e-12 <= penalty.best_scaled_dual(s, loss, image, a) <= best + s * 1e-4


def test_elastic_net_gives_the_certificates_what_the_other_penalties_give():
    w, net = rng.normal(size=5) * (rng.random(5) < 0.6), ElasticNet(0.7, 0.3)
    assert net.from_norms(float(w @ w), float(np.abs(w).sum())) == pytest.approx(net.value(w))
    rows, target = net.optimality_target(w)
    np.testing.assert_array_equal(rows, np.flatnonzero(w))
    assert net.value(w) + net.conjugate(target[rows]) == pytest.approx(w[rows] @ target[rows])


def test_biases_balance_and_penalise_the_constant_feature():
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    a = np.array([0.5, 0.9, 0.1, 0.2, 0.3])
    assert FreeBias().balance(a, y, signed=False) @ y == pytest.approx(0.0, abs=1e-15)
    assert FreeBias().balance(a - 0.4, y, signed=True) @ y == pytest.approx(0.0, abs=1e-15)
    assert PenalisedBias(2.0).penalty_part(3.0, L2()) == 0.5 * 1.5**2
    assert PenalisedBias(2.0).penalty_part(-3.0, L1()) == 1.5


def test_a_formulation_is_named_by_its_parts():
    assert Formulation(PowerHinge(1.5), L2(), FreeBias()).name == "hinge_p1.5_l2_bias"
    assert Formulation(Squared(), L1(), PenalisedBias(2.0)).name == "squared_l1_penalised_bias"
    assert Formulation(Hinge(), ElasticNet(0.1, 0.2)).name == "hinge_elastic_net"
    assert L2SVM.name == "l2svm"
    with pytest.raises(ValueError, match="a free margin needs the squared hinge; got hinge"):
        Formulation(Hinge(), L2(), margin=FreeMargin())


def _every_formulation():
    """One formulation of every loss, penalty and bias of the tables, and the L2-SVM."""
    losses = [
        Hinge(),
        SquaredHinge(),
        Squared(),
        PowerHinge(1.5),
        PowerHinge(3.0),
        SmoothedHinge(np.ones(2)),
    ]
    penalties = [L2(), L1(), ElasticNet(0.5, 0.1)]
    biases = [NoBias(), FreeBias(), PenalisedBias(2.0)]
    assert {type(p) for p in losses} == set(LOSS_TABLE.values())
    assert {type(p) for p in penalties} == set(PENALTY_TABLE.values())
    assert {type(p) for p in biases} == set(BIASES.values())
    return [
        Formulation(loss, penalty, bias)
        for loss in losses
        for penalty in penalties
        for bias in biases
    ] + [L2SVM]


@pytest.mark.parametrize("kind", METRIC_KINDS)
def test_every_metric_name_is_read_back_as_it_was_built(kind):
    for form in _every_formulation():
        name = form.metric(kind)
        parsed = parse_metric(name)
        assert parsed.kind == kind and name == f"{kind}_{parsed.formulation}"
        assert metric_name(*parsed) == name
        # an objective names the loss and penalty alone (its bias is never penalised)
        expected = form.name.removesuffix(form.bias.suffix) if kind == "objective" else form.name
        assert parsed == MetricName(kind, expected)


@pytest.mark.parametrize(
    "name",
    [
        "objective_smoothed",
        "objective_l2svm_dual",
        "dual_hybrid",
        "dual_gap",
        "primal_residual",
        "rel_gap_hinge",
        "fw_gap",
        "gap_hinge_l3",
        "rel_gap_hinge_l2_biased",
        "test_accuracy",
    ],
)
def test_other_names_are_no_formulation_metric(name):
    assert parse_metric(name) is None


def test_a_metric_of_an_unknown_kind_or_formulation_is_refused():
    with pytest.raises(ValueError, match="no metric 'loss' of 'hinge_l2'; kinds"):
        metric_name("loss", "hinge_l2")
    with pytest.raises(ValueError, match="no metric 'gap' of 'logistic_l2'"):
        metric_name("gap", "logistic_l2")


def test_the_l2svm_is_the_frank_wolfe_dual_with_a_free_margin():
    """The L2-SVM, min over rho of 1/2 (||w||^2 + b^2) + C/2 sum (rho - m_i)_+^2 - rho: its
    closed-form rho matches a numerical minimisation; the dual bound of alpha on the simplex is
    -alpha^T K~ alpha / 2 with K~ = y y^T (K + 1) + I / C (also for a multiple of alpha); and
    every certificate lies below the dual optimum (SLSQP on the simplex), every primal above."""
    X, y = rng.normal(size=(15, 3)), np.where(rng.random(15) < 0.5, -1.0, 1.0)
    C, kernel = 3.0, Kernel("rbf", 0.5, 3, 0.0)
    K = kernel.matrix(X, X)
    modified = np.outer(y, y) * (K + 1.0) + np.eye(15) / C
    simplex = minimize(
        lambda a: a @ modified @ a,
        np.full(15, 1 / 15),
        jac=lambda a: 2 * modified @ a,
        bounds=[(0, 1)] * 15,
        method="SLSQP",
        constraints={"type": "eq", "fun": lambda a: a.sum() - 1},
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    d_star = -0.5 * simplex.fun
    for scale in (1.0, 0.3, 0.0):
        alpha = np.clip(simplex.x, 0, None) + scale * rng.random(15)
        alpha /= alpha.sum()
        coef, b = alpha * y, float(alpha @ y)  # the classifier of alpha (Frank-Wolfe's)
        margins = y * (K @ coef + b)
        image = KernelImage(X, y, kernel, X, coef, b, bias_scale=1.0)
        regulariser = L2SVM.regulariser(float(coef @ K @ coef), None, b)
        rho = lambda r: 0.5 * C * np.sum(np.maximum(r - margins, 0.0) ** 2) - r
        best = minimize_scalar(
            rho, bounds=(-20.0, 20.0), method="bounded", options={"xatol": 1e-12}
        ).fun
        assert L2SVM.primal(margins, regulariser, C / 2) == pytest.approx(
            regulariser + best, rel=1e-9
        )
        for a in (alpha, 3.0 * alpha):  # scaled back onto the simplex
            assert dual_bound(L2SVM, C / 2, a, image) == pytest.approx(
                -0.5 * alpha @ modified @ alpha, rel=1e-12
            )
        cert = certify(L2SVM, C / 2, margins, regulariser, image, (alpha,))
        assert cert.dual <= d_star + 1e-12 and cert.primal >= d_star - 1e-12
    assert cert.rel_gap < 1e-6  # at the optimum the gap closes
