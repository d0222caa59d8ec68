"""``lemma1`` and ``thm1``: the NFM loss's identity and its second-order expansion, held against
the exact loss (``theory.nfm``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from noisymix import generator_for
from theory.calculus import fit_slope
from theory.checks import (
    Check,
    Form,
    coefficient,
    expansion_check,
    grid_values,
    identity_verdict,
    rescaling_checks,
    residual_curve,
)
from theory.laws import beta_law, joint_noise, point_law, vicinal_law, vicinal_moments
from theory.models import Model
from theory.nfm import nfm_loss, theorem1_autograd, theorem1_expansion, theorem1_terms
from theory.problems import Data, Family, Instance, independent_family, random_covariance

__all__ = ["lemma1_checks", "theorem1_checks"]

LEMMA1 = (
    "Lemma 1 (sm_aux): L_n^NFM (Beta(alpha, beta), mixed labels) = 1/n sum_i E_{lambda ~ tilde-D} E_{x_r} "
    "E_xi l(p(x_i + eps e_i^NFM), y_i), tilde-D = a/(a+b) Beta(a+1, b) + b/(a+b) Beta(b+1, a)"
)
THM1 = (
    "Theorem 1 (thm_implicitreg): L_n^NFM = L_n^std + eps R1 + eps^2 (R2~ + R3~) + eps^2 phi(eps), phi -> 0"
)
IDENTITY_RTOL = 1e-10
NODES_IDENTITY = 32
SIGMA_ADD, SIGMA_MULT = 0.7, 0.5


LEMMA1_INSTANCES = (
    Instance("tanh-mlp", 3, None, 1, 2.0, 0.7),
    Instance("softplus-mlp", 3, 3, 2, 0.4, 1.3),
    Instance("tanh-mlp", 2, None, 3, 1.5, 1.5),
)
THM1_INSTANCES = (
    Instance("tanh-mlp", 3, None, 0, 2.0, 0.7),
    Instance("softplus-mlp", 4, None, 1, 0.5, 1.5),
)


# --------------------------------------------------------------------------------- Lemma 1
UNIFORM_MIXTURE_ERRATUM = {
    "erratum": "tilde-D_lambda is called a 'uniform mixture', but its weights are a/(a+b) and b/(a+b) "
    "(uniform only when alpha = beta)",
    "fix": "call it the mixture a/(a+b) Beta(a+1, b) + b/(a+b) Beta(b+1, a); its formula is right",
    "erratum_kind": "typo or notation",  # a word: the formula printed beside it is right
}
BETA_LAW_ERRATUM = {
    "erratum": "the lemma ends 'and lambda ~ Beta(alpha, beta)' while its expectation is over tilde-D_lambda",
    "fix": "lambda ~ tilde-D_lambda in the vicinal form (Beta(alpha, beta) only in Eq. emp_NFMloss)",
    "erratum_kind": "typo or notation",  # the law named in the closing words, not the one the proof uses
}


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def _lemma1_differences(seed: int) -> tuple[dict[str, list[tuple[str, float]]], dict[str, list[float]]]:
    """Per instance, the relative difference between the label-mixing loss under Beta(alpha, beta)
    and the vicinal loss under each reading of its law ("printed": tilde-D; "uniform": weights 1/2;
    "beta": Beta itself), and the printed reading's difference as the quadrature grows."""
    rows: dict[str, list[tuple[str, float]]] = {"printed": [], "uniform": [], "beta": []}
    convergence: dict[str, list[float]] = {}
    for inst in (i.shifted(seed) for i in LEMMA1_INSTANCES):
        model, data = inst.build()
        noise = independent_family(
            inst.dim, point_law(), sigma_add=SIGMA_ADD, sigma_mult=SIGMA_MULT, seed=inst.seed
        ).noise

        def loss(law, mixing: bool, noise=noise, model=model, data=data) -> float:
            return float(
                nfm_loss(model, data, Family(law, noise, SIGMA_ADD, SIGMA_MULT), 1.0, label_mixing=mixing)
            )

        a, b, tag = inst.alpha, inst.beta, f"{model.describe()}, alpha={inst.alpha:g}, beta={inst.beta:g}"
        pairwise = loss(beta_law(a, b, NODES_IDENTITY), True)
        rows["printed"].append((tag, _relative(pairwise, loss(vicinal_law(a, b, NODES_IDENTITY), False))))
        rows["uniform"].append(
            (tag, _relative(pairwise, loss(vicinal_law(a, b, NODES_IDENTITY, uniform=True), False)))
        )
        rows["beta"].append((tag, _relative(pairwise, loss(beta_law(a, b, NODES_IDENTITY), False))))
        convergence[tag] = [
            _relative(loss(beta_law(a, b, m), True), loss(vicinal_law(a, b, m), False))
            for m in (4, 8, 16, 32)
        ]
    return rows, convergence


def lemma1_checks(eps: np.ndarray, seed: int = 0) -> list[Check]:
    """The identity as printed and corrected (the law of lambda, the 'uniform mixture' of the
    notation), then the rescaled family (``_rescaling_checks``)."""
    rows, convergence = _lemma1_differences(seed)

    def listing(key: str) -> str:
        return "; ".join(f"{t}: rel. diff {e:.1e}" for t, e in rows[key])

    conditions = "any alpha, beta > 0, any noise levels, any loss linear in the label (binary and K-class CE)"

    def row(reading: str, statement: str, form: Form, term: str, detail: str, conditions: str, **extra) -> Check:
        """One identity row judged on the instances' differences under ``reading`` (a key of ``rows``)."""
        ok = identity_verdict([e for _, e in rows[reading]], IDENTITY_RTOL)
        return Check(id="lemma1", statement=statement, form=form, term=term, kind="identity",
                     verdict="holds" if ok else "fails", detail=detail, conditions=conditions,
                     model="; ".join(t for t, _ in rows[reading]), extra=extra)

    notation, vicinal = "uniform mixture (notation)", "law of lambda in the vicinal form"
    checks = [
        row(
            "printed", LEMMA1, "as_printed", "identity (eps = 1)",
            "Beta(alpha, beta) with label mixing vs tilde-D without, exact sums with "
            f"{NODES_IDENTITY}-point Gauss-Jacobi rules: {listing('printed')} (tolerance "
            f"{IDENTITY_RTOL:g}); the difference falls geometrically with the number of nodes (4, 8, "
            "16, 32), see 'convergence'",
            conditions,
            convergence_in_nodes=convergence,
        ),
        row(
            "uniform", "Notation: tilde-D_lambda 'is a uniform mixture of two Beta distributions'", "as_printed",
            notation,
            "reading tilde-D as the uniform mixture 1/2 Beta(a+1, b) + 1/2 Beta(b+1, a): "
            f"{listing('uniform')}; it equals the loss only when alpha = beta",
            "alpha = beta only",
            **UNIFORM_MIXTURE_ERRATUM,
        ),
        row(
            "printed", "Notation: tilde-D_lambda as a mixture with weights a/(a+b), b/(a+b)", "corrected", notation,
            f"with the weights of the formula: {listing('printed')}", conditions,
        ),
        row(
            "beta", "Lemma 1's closing clause 'lambda ~ Beta(alpha, beta)' for the vicinal form", "as_printed",
            vicinal,
            f"vicinal form with lambda ~ Beta(alpha, beta) instead of tilde-D: {listing('beta')}",
            "never (the label-mixing weights tilt Beta into tilde-D)",
            **BETA_LAW_ERRATUM,
        ),
        row(
            "printed", "Lemma 1's identity, read with tilde-D_lambda", "corrected", vicinal,
            f"vicinal form with lambda ~ tilde-D: {listing('printed')}", conditions,
        ),
    ]
    checks.extend(_rescaling_checks(eps, seed))
    return checks


def _rescaling_checks(eps: np.ndarray, seed: int) -> list[Check]:
    """Lemma 1 is stated after 'rescale 1 - lambda -> eps (1 - lambda)'; the identity holds for the
    unscaled loss (any noise level), not between the two rescaled families."""
    inst = LEMMA1_INSTANCES[0].shifted(seed)
    model, data = inst.build()
    base = independent_family(
        inst.dim, point_law(), sigma_add=SIGMA_ADD, sigma_mult=SIGMA_MULT, seed=inst.seed
    )
    a, b = inst.alpha, inst.beta
    fam_beta = Family(beta_law(a, b, NODES_IDENTITY), base.noise, SIGMA_ADD, SIGMA_MULT)
    fam_vic = Family(vicinal_law(a, b, NODES_IDENTITY), base.noise, SIGMA_ADD, SIGMA_MULT)
    grid = torch.as_tensor(eps, dtype=torch.float64)
    printed = (
        nfm_loss(model, data, fam_beta, grid, label_mixing=True) - nfm_loss(model, data, fam_vic, grid)
    ).numpy()
    corrected = []
    for e in eps:
        fb = Family(fam_beta.lam, base.noise, e * SIGMA_ADD, e * SIGMA_MULT)
        fv = Family(fam_vic.lam, base.noise, e * SIGMA_ADD, e * SIGMA_MULT)
        corrected.append(
            float(nfm_loss(model, data, fb, 1.0, label_mixing=True)) - float(nfm_loss(model, data, fv, 1.0))
        )
    corrected = np.array(corrected)
    slope = fit_slope(eps, printed, 1e-14)
    return rescaling_checks(
        "lemma1", "Lemma 1", LEMMA1, eps=eps, printed=printed, corrected=corrected, slope=slope,
        tolerance=IDENTITY_RTOL, model=model.describe(),
        printed_detail=(
            "rescaling lambda inside Eq. emp_NFMloss (labels mixed with the rescaled lambda) and inside "
            "the vicinal form gives two different families: their difference is O(eps) (fitted slope "
            f"{slope:.2f}, {np.abs(printed).max():.1e} at eps = {eps[0]:g}); the label-mixing term "
            "eps(1 - lambda)(l(., y_r) - l(., y_i)) does not vanish to first order"
        ),
        corrected_detail=(
            f"max |difference| over the eps grid {np.abs(corrected).max():.1e}: the identity holds at "
            "every noise level; 1 - lambda -> eps(1 - lambda) is then applied in the vicinal form"
        ),
        erratum="Lemma 1 is stated after the rescaling 1 - lambda -> eps (1 - lambda); the two "
        "sides rescaled that way differ at O(eps)",
        fix="Lemma 1 is an identity of the unscaled loss (for every noise level); the "
        "small-parameter family of Theorem 1 is defined by rescaling in the vicinal (tilde-D) form",
        # the identity is right, for eps = 1 (the unscaled loss): a condition the statement leaves out
        erratum_kind="unstated assumption",
    )


# ------------------------------------------------------------------------------- Theorem 1
def _families(inst: Instance) -> dict[str, Family]:
    lam = vicinal_law(inst.alpha, inst.beta, 4)
    full = independent_family(inst.dim, lam, sigma_add=SIGMA_ADD, sigma_mult=SIGMA_MULT, seed=inst.seed)
    g = generator_for(inst.seed + 2000)
    d = inst.dim
    cov = random_covariance(2 * d, g)
    return {
        "full": full,
        "mixup only": Family(lam, full.noise, 0.0, 0.0),
        "additive noise only": Family(point_law(), full.noise, SIGMA_ADD, 0.0),
        "multiplicative noise only": Family(point_law(), full.noise, 0.0, SIGMA_MULT),
        "correlated xi_add, xi_mult": Family(lam, joint_noise(cov), SIGMA_ADD, SIGMA_MULT),
    }


THM1_CONDITIONS = (
    "h, p twice differentiable (C^3 for the O(eps^3) remainder); xi zero-mean, independent of (lambda, "
    "x_r), xi_add and xi_mult uncorrelated; lambda ~ tilde-D (the vicinal family); any d, n, alpha, beta, "
    "sigma"
)


def theorem1_checks(eps: np.ndarray, seed: int = 0) -> list[Check]:
    checks = []
    for inst in (i.shifted(seed) for i in THM1_INSTANCES):
        checks.extend(_theorem1_instance(inst, eps))
    return checks


def _theorem1_instance(inst: Instance, eps: np.ndarray) -> list[Check]:
    """Every Theorem 1 check of one instance, in report order."""
    setting = _Thm1Setting.build(inst, eps)
    return _thm1_expansion(setting) + _thm1_second_order_terms(setting) + _thm1_cross_term(setting)


R1_ERRATUM = {
    "erratum": "R1 is printed with h'(p(x_i) - y_i) (equal to the right h'(p(x_i)) - y_i only where "
    "y_i = 0)",
    "fix": "R1 = E[1-lambda]/n sum_i (h'(p(x_i)) - y_i) grad p(x_i)^T E_{x_r}[x_r - x_i] (as in R3)",
    "erratum_kind": "wrong term",  # another first-order coefficient: the expansion fails at O(eps)
}


@dataclass
class _Thm1Setting:
    """One Theorem 1 instance: the model, data and families, tilde-D's moments of lambda, and each
    family's exact loss on the eps grid (computed once)."""

    model: Model
    data: Data
    fams: dict[str, Family]
    eps: np.ndarray
    name: str
    moments: tuple[float, float]  # (E[1 - lambda], E[(1 - lambda)^2]) under tilde-D
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def build(cls, inst: Instance, eps: np.ndarray) -> _Thm1Setting:
        model, data = inst.build()
        name = f"{model.describe()}, n={data.n}, alpha={inst.alpha:g}, beta={inst.beta:g}"
        return cls(model, data, _families(inst), eps, name, vicinal_moments(inst.alpha, inst.beta))

    def terms(self, fam_name: str) -> dict[str, float]:
        """Theorem 1's R-terms in this family (lambda moments 0 where it does not mix)."""
        fam = self.fams[fam_name]
        c1, c2 = self.moments if fam.mixes else (0.0, 0.0)
        return theorem1_terms(self.model, self.data, c1, c2, fam)

    def autograd(self, fam_name: str) -> dict[str, float]:
        """The exact loss's Taylor coefficients in this family, split by path (autograd)."""
        return theorem1_autograd(self.model, self.data, self.fams[fam_name])

    def check(
        self,
        term: str,
        form: str,
        fam_name: str,
        first: float,
        second: float,
        coefs: dict,
        detail: str,
        expected: float = 3.0,
        conditions: str = THM1_CONDITIONS,
        extra: dict | None = None,
    ) -> Check:
        """The residual of L(eps) - L_std - eps first - eps^2 second in family ``fam_name``."""
        if fam_name not in self.values:  # the exact loss on the grid, once per family
            fam = self.fams[fam_name]
            self.values[fam_name] = grid_values(
                self.eps, lambda e: nfm_loss(self.model, self.data, fam, e, increment=True), vectorized=True
            )
        residuals, floor = residual_curve(self.eps, self.values[fam_name], first, second)
        return expansion_check(
            id="thm1", statement=THM1, form=form, term=term, detail=f"[{fam_name}] {detail}",
            conditions=conditions, model=self.name, eps=self.eps, residuals=residuals, floor=floor,
            expected=expected, coefficients=coefs, extra=extra,
        )


def _thm1_expansion(s: _Thm1Setting) -> list[Check]:
    """The whole expansion and R1 alone, as printed (R1's sign erratum) and corrected."""
    t_full = s.terms("full")
    auto_full = s.autograd("full")
    checks = []
    for form, printed in (("as_printed", True), ("corrected", False)):
        first, second = theorem1_expansion(t_full, s.fams["full"], printed=printed)
        coefs = {
            "R1": coefficient(first, auto_full["first"]),
            "R2~ + R3~": coefficient(second, auto_full["second_total"]),
        }
        checks.append(
            s.check("expansion", form, "full", first, second, coefs,
                    "mixup + additive + multiplicative noise, L(eps) - L_std against eps R1 + eps^2 (R2~ + R3~)",
                    extra=R1_ERRATUM if printed else {})
        )
        r1 = t_full["R1_printed" if printed else "R1"]
        checks.append(
            s.check("R1", form, "full", r1, 0.0, {"R1": coefficient(r1, auto_full["first"])},
                    "first-order expansion L(eps) - L_std - eps R1 = O(eps^2)", expected=2.0,
                    extra=R1_ERRATUM if printed else {})
        )
    return checks


def _thm1_second_order_terms(s: _Thm1Setting) -> list[Check]:
    """Each second-order term, isolated by its family: R2-type = h'' part, R3-type = (h' - y) part."""
    checks = []
    for fam_name, keys, scale in (
        ("mixup only", ("R2", "R3"), 1.0),
        ("additive noise only", ("R2_add", "R3_add"), SIGMA_ADD**2),
        ("multiplicative noise only", ("R2_mult", "R3_mult"), SIGMA_MULT**2),
    ):
        t = s.terms(fam_name)
        auto = s.autograd(fam_name)
        first = t["R1"]
        second = scale * (t[keys[0]] + t[keys[1]])
        label = {k: k.replace("_add", "^add").replace("_mult", "^mult") for k in keys}
        for key, part in zip(keys, ("second_h2", "second_h1")):
            coefs = {label[key]: coefficient(scale * t[key], auto[part])}
            what = "h''(p) part" if part == "second_h2" else "(h'(p) - y) part"
            checks.append(
                s.check(label[key], "as_printed", fam_name, first, second, coefs,
                        f"{label[key]} against the {what} of (1/2) d^2L/deps^2 (autograd along every atom's "
                        "path); residual of the whole expansion in this family")
            )
    return checks


def _thm1_cross_term(s: _Thm1Setting) -> list[Check]:
    """Correlated xi_add, xi_mult: the printed expansion misses a sigma_add sigma_mult term."""
    fam_name = "correlated xi_add, xi_mult"
    t = s.terms(fam_name)
    auto = s.autograd(fam_name)
    cross_cond = THM1_CONDITIONS.replace(
        "xi_add and xi_mult uncorrelated", "xi_add, xi_mult possibly correlated"
    )
    erratum = {
        "erratum": "the expansion assumes E[xi_add (xi_mult)^T] = 0, which the statement "
        "(zero mean, finite second moments) does not require",
        "fix": "assume xi_add, xi_mult uncorrelated, or add the sigma_add sigma_mult cross term",
        "erratum_kind": "unstated assumption",  # the printed terms are right for uncorrelated noises
    }
    checks = []
    for form, printed in (("as_printed", True), ("corrected", False)):
        first, second = theorem1_expansion(t, s.fams[fam_name], printed=False)
        if printed:
            second -= t["cross"]
        coefs = {"R2~ + R3~": coefficient(second, auto["second_total"])}
        checks.append(
            s.check(
                "add x mult cross term", form, fam_name, first, second, coefs,
                (
                    "printed second-order terms only (no sigma_add sigma_mult term)"
                    if printed
                    else "with the cross term sigma_add sigma_mult / n sum_i [h'' grad p^T C_i grad p + (h' "
                    f"- y) <grad^2 p, C_i>], C_i = E[xi_add (xi_mult ⊙ x_i)^T] (here {t['cross']:.3e})"
                ),
                conditions=("xi_add, xi_mult uncorrelated" if printed else cross_cond),
                extra=erratum if printed else {},
            )
        )
    return checks
