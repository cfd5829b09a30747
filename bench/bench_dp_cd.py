"""Benchmark: DP-CD ms per pass vs its compute floor, numpy and the paper.

Run: ``DPCD_DATA_MIRROR=/path/to/copies python bench/bench_dp_cd.py`` (prints
tables; no assertions).

Shapes: California (20640 x 8, least squares + L1) and Electricity
(45312 x 8, logistic + L2), random data of those shapes with imbalanced
feature scales; plus the real Electricity data, standardised, read from
``$DPCD_DATA_MIRROR/electricity/electricity.csv`` (without that variable, the
real-data table is left out and the script says so). The paper's C++ times
(Mangold et al. 2022, Table 3, 50 passes, imbalanced): 0.0647 s and 0.2457 s,
i.e. 1.294 and 4.914 ms per pass.

Floors (what one pass must do, p coordinate updates, timed in the same run as
the solver, interleaved, so machine load hits both alike):

- squares: ``X^T r`` column by column: n p multiply-adds, each column and the
  residuals read once per update;
- logistic: ``sum_i x_ij exp(u_i)`` for every column j: n p SIMD exps (the
  kernels' ``_exp``, same fastmath flags) plus the column and the margins
  read once per update. DP-CD must evaluate ``l'(u_i)`` for all n samples at
  each of the p updates of a pass, since the margins change after each update.

Timings are medians over ``REPEATS`` interleaved runs with [min, max], as
wall time and as thread CPU time (the latter does not count waiting for a core
on a loaded machine; for the solvers it covers the whole call, setup included).
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from dpcd.problems import make_problem
from dpcd.problems._jit import (
    FAST,
    FAST_FMA,
    _coordinate_gradient,
    _datafit_value,
    _exp,
    _update_state,
)
from dpcd.algorithms.dp_cd import coordinate_clip
from dpcd.solvers import dp_cd, dp_sgd

PAPER_MS_PER_PASS = {"california": 0.0647 / 50 * 1e3, "electricity": 0.2457 / 50 * 1e3}
PAPER_SGD_MS_PER_PASS = {"california": 0.6476 / 50 * 1e3,
                         "electricity": 1.8588 / 50 * 1e3}
PASSES = 50
REPEATS = 9


def make_data(name, seed=0):
    rng = np.random.default_rng(seed)
    n = {"california": 20640, "electricity": 45312}[name]
    p = 8
    X = rng.standard_normal((n, p)) * rng.uniform(0.1, 100.0, size=p)
    y = X @ (rng.standard_normal(p) / 50) + rng.standard_normal(n)
    if name == "electricity":
        y = np.where(y > 0, 1.0, -1.0)
        return np.asfortranarray(X), y, make_problem("logistic", "l2", 1e-3)
    return np.asfortranarray(X), y, make_problem("squares", "l1", 1e-3)


def real_electricity():
    """Electricity (OpenML 151), 8 standardised features, y = +1 for UP; or None."""
    mirror = os.environ.get("DPCD_DATA_MIRROR")
    if not mirror:
        print("\nDPCD_DATA_MIRROR is not set: no real Electricity table "
              "(set DPCD_DATA_MIRROR=/path/to/copies to add it)")
        return None
    path = Path(mirror) / "electricity" / "electricity.csv"
    if not path.exists():
        print(f"\n{path} not found: no real Electricity table")
        return None
    raw = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=str)
    X = raw[:, :8].astype(float)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(raw[:, 8] == "UP", 1.0, -1.0)
    return np.asfortranarray(X), y, make_problem("logistic", "l2", 1e-3)


def numpy_dp_cd(X, y, datafit, penalty, M, step, clip, sigma, passes, seed):
    """Plain numpy DP-CD (vectorised over samples, python loop over updates)."""
    n, p = X.shape
    rng = np.random.default_rng(seed)
    w = np.zeros(p)
    logistic = datafit.name == "logistic"
    u = y * (X @ w) if logistic else X @ w - y
    steps = step / M
    coords = rng.integers(0, p, size=passes * p)
    z = rng.standard_normal(passes * p)
    objs = []
    t0 = time.perf_counter()
    for q in range(passes):
        for k in range(q * p, (q + 1) * p):
            j = coords[k]
            xj = X[:, j]
            if logistic:
                gi = -xj * y / (1.0 + np.exp(u))
            else:
                gi = 2.0 * xj * u
            g = np.clip(gi, -clip[j], clip[j]).mean() + sigma[j] * z[k]
            new = penalty.prox(np.array([w[j] - steps[j] * g]), steps[j])[0]
            d = new - w[j]
            if d != 0.0:
                u += d * (y * xj if logistic else xj)
                w[j] = new
        loss = np.logaddexp(0, -u).mean() if logistic else (u @ u) / n
        objs.append(loss + penalty.value(w))
    return time.perf_counter() - t0


@njit(cache=True, fastmath={"reassoc", "nsz"})
def _stream_floor(X, r, out):
    """Squares floor: out = X^T r, one read of each column and of r."""
    n, p = X.shape
    for j in range(p):
        acc = 0.0
        for i in range(n):
            acc += X[i, j] * r[i]
        out[j] = acc


@njit(cache=True, fastmath=FAST_FMA, error_model="numpy")
def _logistic_floor(X, u, out):
    """Logistic floor: n p SIMD exps, each column and the margins read once per column."""
    n, p = X.shape
    for j in range(p):
        acc = 0.0
        for i in range(n):
            acc += X[i, j] * _exp(u[i])
        out[j] = acc


@njit(cache=True, error_model="numpy")
def _gradients_only(code, X, y, u, clip):
    """The p clipped coordinate gradients of one pass (no update, no objective)."""
    acc = 0.0
    for j in range(X.shape[1]):
        acc += _coordinate_gradient(code, X, y, u, j, clip[j])
    return acc


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _logistic_gradients_no_fma(X, y, u, clip):
    """The logistic gradient loop as it was before FMA contraction (reference)."""
    n, p = X.shape
    tot = 0.0
    for j in range(p):
        acc = 0.0
        for i in range(n):
            g = -X[i, j] * y[i] / (1.0 + _exp(u[i]))
            acc += min(max(g, -clip[j]), clip[j])
        tot += acc / n
    return tot


@njit(cache=True, error_model="numpy")
def _updates_only(code, X, y, u):
    """The p state updates of one pass (delta = 0 keeps u unchanged)."""
    for j in range(X.shape[1]):
        _update_state(code, X, y, u, j, 0.0)


def per_pass(fn, reps=PASSES):
    """Wall and thread-CPU seconds per call of ``fn`` (called ``reps`` times)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps, (time.thread_time() - c0) / reps


def solver_pass(run, passes):
    """(solver's own timer, thread CPU time of the whole call) per pass."""
    c0 = time.thread_time()
    res = run()
    return res.time / passes, (time.thread_time() - c0) / passes


def summary(times, k):
    ms = 1e3 * np.asarray([t[k] for t in times])
    return np.median(ms), ms.min(), ms.max()


def bench_shape(name, X, y, datafit, penalty, paper_key, with_baselines=True):
    n, p = X.shape
    logistic = datafit.name == "logistic"
    M = datafit.coordinate_smoothness(X)
    clip = coordinate_clip(M, 1.0)
    sigma = 0.01 * np.sqrt(M)
    kw = dict(smoothness=M, step=0.5, clip=clip, noise_scales=sigma, passes=PASSES)
    res = dp_cd(X, y, datafit, penalty, seed=0, **{**kw, "passes": 2})  # JIT
    # margins/residuals of a typical iterate for the component timings
    u = np.random.default_rng(1).standard_normal(n) * (3.0 if logistic else 1.0)
    out = np.empty(p)
    code = datafit.code
    _stream_floor(X, u, out)
    _logistic_floor(X, u, out)
    _gradients_only(code, X, y, u, clip)
    _updates_only(code, X, y, u)
    _datafit_value(code, u)
    floor_fn = ((lambda: _logistic_floor(X, u, out)) if logistic
                else (lambda: _stream_floor(X, u, out)))
    rows = {"dp_cd (solver timer)": [], "  p coordinate gradients": [],
            "  p state updates": [], "  objective (once per pass)": [],
            "floor": []}
    if logistic:
        _logistic_gradients_no_fma(X, y, u, clip)
        rows["p coord. gradients, no FMA"] = []
    for _ in range(REPEATS):
        rows["dp_cd (solver timer)"].append(solver_pass(
            lambda: dp_cd(X, y, datafit, penalty, seed=0, **kw), PASSES))
        rows["  p coordinate gradients"].append(
            per_pass(lambda: _gradients_only(code, X, y, u, clip)))
        rows["  p state updates"].append(per_pass(lambda: _updates_only(code, X, y, u)))
        rows["  objective (once per pass)"].append(
            per_pass(lambda: _datafit_value(code, u)))
        rows["floor"].append(per_pass(floor_fn))
        if logistic:
            rows["p coord. gradients, no FMA"].append(
                per_pass(lambda: _logistic_gradients_no_fma(X, y, u, clip)))
    if with_baselines:
        rows["numpy DP-CD"] = [per_pass(lambda: numpy_dp_cd(
            X, y, datafit, penalty, M, 0.5, clip, sigma, 5, r), 1) for r in range(2)]
        rows["numpy DP-CD"] = [(w / 5, c / 5) for w, c in rows["numpy DP-CD"]]
        Xc = np.ascontiguousarray(X)
        sgd_kw = dict(step=1e-3, clip=1.0, noise_scale=1.0, batch_size=1)
        dp_sgd(Xc, y, datafit, penalty, passes=1, seed=0, **sgd_kw)  # JIT
        rows["dp_sgd batch 1"] = [solver_pass(lambda: dp_sgd(
            Xc, y, datafit, penalty, passes=3, seed=r, **sgd_kw), 3) for r in range(2)]
    floor_wall, floor_cpu = (summary(rows["floor"], k)[0] for k in (0, 1))
    paper = PAPER_MS_PER_PASS[paper_key]
    floor_what = ("n*p SIMD exps + column & margin reads" if logistic
                  else "n*p multiply-adds, X^T r")
    print(f"\n{name}: n = {n}, p = {p}, {datafit.name} + {penalty.name}; "
          f"floor = {floor_what}")
    print(f"  {'ms per pass':30s} {'wall median':>11s} {'[min, max]':>19s} {'/floor':>7s}"
          f" {'cpu median':>11s} {'[min, max]':>19s} {'/floor':>7s}")
    for label, times in rows.items():
        w, wlo, whi = summary(times, 0)
        c, clo, chi = summary(times, 1)
        print(f"  {label:30s} {w:11.4f} [{wlo:8.4f}, {whi:8.4f}] {w / floor_wall:7.2f}"
              f" {c:11.4f} [{clo:8.4f}, {chi:8.4f}] {c / floor_cpu:7.2f}")
    cd_w, cd_c = (summary(rows["dp_cd (solver timer)"], k)[0] for k in (0, 1))
    print(f"  {'paper C++ DP-CD':30s} {paper:11.4f} {'':19s} {paper / floor_wall:7.2f}"
          f" {'':11s} {'':19s} {paper / floor_cpu:7.2f}   (paper / dp_cd: wall "
          f"{paper / cd_w:.2f}, cpu {paper / cd_c:.2f})")
    if with_baselines:
        print(f"  {'paper C++ DP-SGD':30s} {PAPER_SGD_MS_PER_PASS[paper_key]:11.4f}")


def main():
    print(f"numpy {np.__version__}; DP-CD {PASSES} passes x {REPEATS} interleaved "
          "repeats; times in ms per pass (p coordinate updates)")
    for name in ("california", "electricity"):
        X, y, (datafit, penalty) = make_data(name)
        bench_shape(f"{name}-shaped (random)", X, y, datafit, penalty, name)
    real = real_electricity()
    if real is not None:
        X, y, (datafit, penalty) = real
        bench_shape("electricity (real, standardised)", X, y, datafit, penalty,
                    "electricity", with_baselines=False)
    print("\ndp_cd and dp_sgd wall times = the solvers' own timers (kernel, objective "
          "once per pass, drawing coordinates/batches and noise); component rows "
          "are numba loops over the _jit helpers the kernel calls; 'no FMA': the "
          "logistic gradient loop compiled without contraction (as the kernel "
          "was before it allowed FMA); numpy DP-CD and dp_sgd: 2 runs of 5 / 3 passes.")


if __name__ == "__main__":
    argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Set DPCD_DATA_MIRROR=/path/to/copies to add the real Electricity "
               "table.").parse_args()
    main()
