"""The scikit-learn estimator NadarayaWatson, in a module of its own so that ``import nwattn``
never imports scikit-learn (and through it scipy): ``nwattn.NadarayaWatson`` loads this module
on first access (nwattn/__init__.py), and raises AttributeError where scikit-learn is missing.
"""
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from sklearn.utils.validation import _check_sample_weight, check_array, check_X_y

from ._errors import NWAttnError
from ._regression import bandwidth_rule_of_thumb, select_bandwidth
from ._sklearn import NWResults


class NadarayaWatson(RegressorMixin, BaseEstimator):
    """Kernel regression (Nadaraya-Watson local constant, or local linear) as a
    scikit-learn regressor.

    kernel: 'gaussian', 'laplace', 'epanechnikov', 'tricube', 'uniform'.
    degree: 'constant' (0) or 'linear' (1).
    bandwidth: 'cv' (leave-one-out CV, :func:`nwattn.select_bandwidth`; with
    sample_weight the weighted CV), 'normal_reference' / 'silverman' / 'scott' (rules of
    thumb), or a float / one per feature.

    After fit: bandwidth_ (n_features_in_,), results_ (:class:`NWResults`: bands,
    derivatives, R², dof, summary), cv_curve_ (scales, CV) for bandwidth='cv'. predict is
    computed in double from the smoother weights. Features without spread are left out of
    the kernel (they cannot discriminate between points)."""

    def __init__(self, kernel="gaussian", degree="constant", bandwidth="cv"):
        self.kernel = kernel
        self.degree = degree
        self.bandwidth = bandwidth

    def _choose_bandwidth(self, x, y, w):
        bw = self.bandwidth
        if isinstance(bw, str):
            if bw == "cv":
                sel = select_bandwidth(x, y, kernel=self.kernel, degree=self.degree, weights=w)
                self.cv_curve_ = (sel.curve_scales, sel.curve_cv)
                return np.asarray(sel.bandwidths, np.float32)
            return bandwidth_rule_of_thumb(x, bw)
        bw = np.asarray(bw, np.float64).reshape(-1)
        if bw.size == 1:
            bw = np.repeat(bw, x.shape[1])
        if bw.size != self.n_features_in_:
            raise ValueError(f"bandwidth: expected 1 or n_features_in_ = "
                             f"{self.n_features_in_} values, got {bw.size}")
        if not np.all(np.isfinite(bw) & (bw > 0)):
            raise ValueError("bandwidth: every value must be finite and > 0")
        return bw[self.keep_].astype(np.float32)

    def fit(self, X, y, sample_weight=None):
        X, y = check_X_y(X, y, y_numeric=True, dtype=np.float64)
        self.n_features_in_ = X.shape[1]
        w = None
        if sample_weight is not None:
            w = _check_sample_weight(sample_weight, X, dtype=np.float64)
            if np.any(w < 0):
                raise ValueError("sample_weight must be >= 0")
        n_pos = X.shape[0] if w is None else int(np.count_nonzero(w))
        if n_pos < 3:
            raise ValueError(f"NadarayaWatson needs at least 3 samples with positive "
                             f"weight, got n_samples = {n_pos}")
        self.keep_ = np.ptp(X, axis=0) > 0
        self.cv_curve_ = None
        self.X_ = X.astype(np.float32)
        self.y_ = y.astype(np.float32)
        self.sample_weight_ = None if w is None else w.astype(np.float32)
        if not np.any(self.keep_):  # no feature varies: the (weighted) mean
            self.bandwidth_ = np.full(self.n_features_in_, np.inf)
            self.mean_ = float(np.average(y, weights=w))
            self.results_ = None
            return self
        xk = self.X_[:, self.keep_]
        try:
            h = self._choose_bandwidth(xk, self.y_, self.sample_weight_)
        except NWAttnError as exc:
            raise ValueError(f"NadarayaWatson: bandwidth selection failed: {exc}") from exc
        self.bandwidth_ = np.full(self.n_features_in_, np.inf)
        self.bandwidth_[self.keep_] = h
        self.results_ = NWResults(xk, self.y_, h, kernel=self.kernel, degree=self.degree,
                                  weights=self.sample_weight_, cv_curve=self.cv_curve_)
        return self

    def predict(self, X):
        check_is_fitted(self, "bandwidth_")
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but NadarayaWatson is "
                             f"expecting {self.n_features_in_} features as input")
        if self.results_ is None:
            return np.full(X.shape[0], self.mean_)
        xq = X[:, self.keep_].astype(np.float32)
        inf = self.results_.inference(xq)
        out = inf.fit
        bad = ~np.isfinite(out)  # empty rows of a compact kernel: the nearest point's y
        if np.any(bad):
            from ._regression import nw_predict
            out[bad] = nw_predict(xq[bad], self.results_.x, self.results_.y,
                                  self.results_.bandwidth, kernel=self.kernel,
                                  degree=self.degree)
        return out

    def _more_tags(self):
        return {"poor_score": True}
