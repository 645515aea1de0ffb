"""Kernel regression the way people already work: a scikit-learn estimator
(:class:`NadarayaWatson`) and a statsmodels-like result object (:class:`NWResults`) with the fit,
its bands, derivatives and summary. NadarayaWatson lives in _estimator.py (scikit-learn is
optional and imported only when nwattn.NadarayaWatson is first used); NWResults needs only numpy.
"""
import math

import numpy as np

from . import _stats
from ._errors import NWAttnError
from ._regression import bandwidth_rule_of_thumb, select_bandwidth

_Z975 = 1.959963984540054


def _normal_quantile(p):
    """Inverse standard normal CDF (Acklam's rational approximation refined by one Halley step:
    ~1e-15 relative), so that the result object needs no scipy."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p} not in (0, 1)")
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    e = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
         3.754408661907416e+00)
    q = min(p, 1 - p)
    if q < 0.02425:
        t = math.sqrt(-2 * math.log(q))
        x = (((((c[0] * t + c[1]) * t + c[2]) * t + c[3]) * t + c[4]) * t + c[5]) / \
            ((((e[0] * t + e[1]) * t + e[2]) * t + e[3]) * t + 1)
    else:
        t = q - 0.5
        r = t * t
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * t / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    err = 0.5 * math.erfc(-x / math.sqrt(2)) - q
    x -= err * math.sqrt(2 * math.pi) * math.exp(x * x / 2) / (1 + x * err * math.sqrt(
        2 * math.pi) * math.exp(x * x / 2) / 2)
    return x if p < 0.5 else -x


class NWResults:
    """The fit of a kernel regression at fixed bandwidths, like statsmodels' results objects.

    ``NWResults(x, y, bandwidth, kernel=..., degree=..., weights=None)``; methods compute at
    any query points: :meth:`fit` (values), :meth:`conf_int` (asymptotic pointwise bands),
    :meth:`bootstrap_bands` (wild bootstrap, pointwise and simultaneous), :meth:`derivative`
    (slopes or local constant derivatives with standard errors); attributes from the training
    fit: ``r2``, ``r2_corr``, ``dof`` (trace of the smoother), ``sigma2``, ``cv``, ``fitted``,
    ``resid``, ``leverage``; ``cv_curve`` (scales, CV) when the bandwidth was chosen by CV;
    :meth:`summary` a text table."""

    def __init__(self, x, y, bandwidth, *, kernel="gaussian", degree="constant", weights=None,
                 cv_curve=None, ctx=None):
        self.x = np.asarray(x, np.float32)
        self.y = np.asarray(y, np.float32).reshape(-1)
        self.d = 1 if self.x.ndim == 1 else self.x.shape[1]
        self.bandwidth = np.asarray(bandwidth, np.float32).reshape(-1)
        if self.bandwidth.size == 1:
            self.bandwidth = np.repeat(self.bandwidth, self.d)
        self.kernel, self.degree, self.weights, self._ctx = kernel, degree, weights, ctx
        self.cv_curve = cv_curve
        s = _stats.nw_summary(self.x, self.y, self.bandwidth, kernel=kernel, degree=degree,
                              weights=weights, ctx=ctx)
        self.r2, self.r2_corr, self.dof, self.dof_resid = s.r2, s.r2_corr, s.dof, s.dof_resid
        self.sigma2, self.rss, self.cv, self.flagged_rows = s.sigma2, s.rss, s.cv, s.flagged_rows
        self.fitted, self.leverage = s.fitted.astype(np.float64), s.leverage
        self.resid = self.y - self.fitted
        self.nobs = self.y.size

    def _args(self):
        return dict(kernel=self.kernel, degree=self.degree, weights=self.weights, ctx=self._ctx)

    def inference(self, xq, variance="homoscedastic"):
        return _stats.nw_inference(xq, self.x, self.y, self.bandwidth, variance=variance,
                                   **self._args())

    def fit(self, xq):
        return self.inference(xq).fit

    def conf_int(self, xq, alpha=0.05, variance="homoscedastic"):
        """(lower, upper): fit ± z_{1-alpha/2} se, pointwise (bands of E yhat; the truth where
        the smoothing bias is small against se)."""
        inf = self.inference(xq, variance)
        z = _normal_quantile(1 - alpha / 2)
        return inf.fit - z * inf.se, inf.fit + z * inf.se

    def bootstrap_bands(self, xq, alpha=0.05, replicates=999, seed=0, method="percentile"):
        """Wild bootstrap bands (:func:`nwattn.nw_bootstrap_bands`): ``method`` is
        "percentile" or "studentized" (bootstrap-t, closer to the nominal coverage)."""
        return _stats.nw_bootstrap_bands(xq, self.x, self.y, self.bandwidth, replicates=replicates,
                                         seed=seed, level=1 - alpha, method=method,
                                         **self._args())

    def derivative(self, xq, variance="homoscedastic"):
        """(deriv, se): (m, d) arrays; local linear: the slopes (statsmodels' marginal
        effects); local constant: the derivative of the fit."""
        inf = self.inference(xq, variance)
        return inf.deriv, inf.deriv_se

    def summary(self):
        bw = ", ".join(f"{h:.6g}" for h in self.bandwidth)
        rows = [("Kernel", str(self.kernel)), ("Degree", str(self.degree)),
                ("Observations", str(self.nobs)), ("Bandwidths", bw),
                ("R-squared (1 - RSS/TSS)", f"{self.r2:.6f}"),
                ("R-squared (corr^2)", f"{self.r2_corr:.6f}"),
                ("Effective dof (tr L)", f"{self.dof:.4f}"),
                ("Residual dof", f"{self.dof_resid:.4f}"),
                ("Residual variance", f"{self.sigma2:.6g}"),
                ("Leave-one-out CV", f"{self.cv:.6g}"),
                ("Flagged rows", str(self.flagged_rows))]
        width = max(len(k) for k, _ in rows)
        line = "=" * (width + 24)
        body = "\n".join(f"{k:<{width}}  {v:>20}" for k, v in rows)
        return f"Kernel regression results\n{line}\n{body}\n{line}"

    def __repr__(self):
        return self.summary()
