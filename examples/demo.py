#!/usr/bin/python3
"""The seeds' pictures, computed by libnwattn through its Python binding.

d2l.ai, "Attention Pooling: Nadaraya-Watson Kernel Regression" (seed 2):
  50 training points, x sorted uniform on [0, 5), y = 2 sin x + x^0.8 + N(0, 0.5) noise;
  50 queries x = 0, 0.1, ..., 4.9; predictions by
  - average pooling (every y_i weighs 1/n),
  - nonparametric Nadaraya-Watson pooling, softmax(-(x - x_i)^2 / 2) · y,
  - the parametric model softmax(-((x - x_i) w)^2 / 2) · y with w trained by SGD
    (learning rate 0.5, 5 epochs, summed squared loss, leave-one-out keys),
  with the attention heatmaps (queries × sorted training inputs, colour map Reds) of the
  nonparametric and trained models and the training loss by epoch.
Seed 1: 80 points y = sin x + 0.2 N(0, 1) on [0, 10), Nadaraya-Watson predictions on
  linspace(-1, 11, 200) with bandwidths h = 0.05, 0.5 and 10; then its CV fit (local linear)
  with 95 % pointwise (asymptotic) and simultaneous (wild bootstrap) bands, its derivative
  with a 95 % pointwise band against cos x, and the density of x with its least-squares CV
  bandwidth.

It writes PNG files (and the numbers behind them as CSV) to --out (default examples/out/) and
prints the numbers it plots.

usage: /usr/bin/python3 examples/demo.py [--out DIR] [--seed N] [--full]
The library: NWATTN_LIBRARY, else an installed libnwattn, else build*/src of this checkout.
"""
import argparse
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))  # the binding of this checkout, if not installed

import numpy as np  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

import nwattn  # noqa: E402


# ---- Data: the library's generators, so that the C examples draw the same points ----------

def d2l_data(rng, ctx):
    """d2l: 50 points, x = 5·uniform sorted, y = 2 sin x + x^0.8 + N(0, 0.5); queries 0 .. 4.9."""
    x_train, y_train = nwattn.dataset_generate("d2l", 50, rng, ctx=ctx)
    x_test = np.arange(0, 5, 0.1, dtype=np.float32)
    return x_train, y_train, x_test, nwattn.dataset_truth("d2l", x_test, ctx=ctx)


def seed1_data(rng, ctx):
    """Seed 1: 80 points, x = 10·uniform, y = sin x + 0.2·N(0, 1); queries linspace(-1, 11, 200)."""
    x_train, y_train = nwattn.dataset_generate("sine", 80, rng, ctx=ctx)
    return x_train, y_train, np.linspace(-1, 11, 200, dtype=np.float32)


def col(x):
    """A vector as an n×1 matrix: n one-feature points (a view, no copy)."""
    return np.asarray(x, np.float32)[:, None]


# ---- The models, all computed by the library ---------------------------------------------

def gaussian_pool(x_query, x_train, y_train, h, ctx, **mask):
    """Nadaraya-Watson with the Gaussian kernel of bandwidth h: (predictions, weights)."""
    y, w = nwattn.pool(col(x_query), col(x_train), col(y_train), score="gaussian",
                       bandwidth=h, weights=True, ctx=ctx, **mask)
    return y[:, 0], w


def trained_pool(x_query, x_train, y_train, w, ctx):
    """d2l's parametric model softmax(-((x - x_i) w)^2 / 2) · y (the library's w-model)."""
    r = nwattn.wmodel_evaluate(w, x_query, x_train, y_train, weights=True, ctx=ctx)
    return r.yhat, r.weights


# ---- Pictures ------------------------------------------------------------------------------

def plot_kernel_reg(path, title, x_test, y_truth, y_hat, x_train, y_train):
    """d2l's plot_kernel_reg: Truth and Pred over the queries, the training data as circles."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(x_test, y_truth, "-", label="Truth")
    ax.plot(x_test, y_hat, "m--", label="Pred")
    ax.plot(x_train, y_train, "o", alpha=0.5, label="data")
    ax.set(xlabel="x", ylabel="y", xlim=(0, 5), ylim=(-1, 5), title=title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_heatmap(path, title, weights):
    """d2l's show_heatmaps: queries down, sorted training inputs across, cmap Reds."""
    fig, ax = plt.subplots(figsize=(4.8, 4))
    im = ax.imshow(weights, cmap="Reds", aspect="auto")  # indices, as d2l draws it
    ax.set(xlabel="Sorted training inputs", ylabel="Sorted testing inputs", title=title)
    fig.colorbar(im, ax=ax, shrink=0.8, label="attention weight")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_loss(path, losses):
    fig, ax = plt.subplots(figsize=(5, 3.5))
    epochs = np.arange(1, len(losses) + 1)
    ax.plot(epochs, losses, "o-", label="train loss")
    ax.set(xlabel="epoch", ylabel="loss", xlim=(1, len(losses)), xticks=epochs,
           title="Training w (SGD, lr 0.5)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_bandwidths(path, x_grid, preds, x_train, y_train):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for h, y in preds.items():
        ax.plot(x_grid, y, label=f"h={h}")
    ax.scatter(x_train, y_train, alpha=0.4, color="gray", label="data")
    ax.set(xlabel="x", ylabel="y", title="Nadaraya-Watson: bandwidth = focus of attention")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_inference(path, x_grid, res, bands, lo, hi, deriv, dse, x_train, y_train):
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    fit = res.fit(x_grid)
    ax.fill_between(x_grid, bands.sim_lower, bands.sim_upper, color="tab:blue", alpha=0.15,
                    label="95 % simultaneous (wild bootstrap)")
    ax.fill_between(x_grid, lo, hi, color="tab:blue", alpha=0.35, label="95 % pointwise")
    ax.plot(x_grid, fit, color="tab:blue", label=f"local linear, CV h = {res.bandwidth[0]:.3f}")
    ax.plot(x_grid, np.sin(x_grid), "k--", lw=1, label="sin x")
    ax.plot(x_train, y_train, "o", ms=3, color="tab:orange", alpha=0.6, label="data")
    ax.set_ylabel("y")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"Seed 1: CV fit, R² {res.r2:.3f}, effective dof {res.dof:.1f}")
    bx.fill_between(x_grid, deriv - 1.96 * dse, deriv + 1.96 * dse, color="tab:green",
                    alpha=0.3, label="95 % pointwise")
    bx.plot(x_grid, deriv, color="tab:green", label="local linear slope")
    bx.plot(x_grid, np.cos(x_grid), "k--", lw=1, label="cos x")
    bx.set_xlabel("x")
    bx.set_ylabel("dy/dx")
    bx.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_density(path, x_grid, dens, h, x_train):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.hist(x_train, bins=20, density=True, color="0.85", label="histogram")
    ax.plot(x_grid, dens, color="tab:purple", label=f"Gaussian KDE, LSCV h = {h:.3f}")
    ax.plot(x_train, np.zeros_like(x_train), "|", color="k", ms=8)
    ax.set_xlabel("x")
    ax.set_ylabel("density")
    ax.set_title("Seed 1: density of x (the Nadaraya-Watson denominator)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_csv(path, header, columns):
    np.savetxt(path, np.column_stack(columns), delimiter=",", header=",".join(header),
               comments="", fmt="%.7g")


# ---- Main ----------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(HERE / "out"), help="output folder (created)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the library's random generator (data and w0); draws as "
                             "examples/nw_experiments.c does, so the same seed gives its numbers")
    parser.add_argument("--full", action="store_true",
                        help="print every row of every table (default: every 5th / 20th)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.set_printoptions(precision=4, suppress=True, linewidth=100)
    step = 1 if args.full else 5

    print(f"libnwattn {nwattn.version()} from {nwattn.library_path}")
    rng = nwattn.Rng(args.seed)
    ctx = nwattn.Context()

    # -- seed 2: d2l's attention pooling --------------------------------------------------
    x_train, y_train, x_test, y_truth = d2l_data(rng, ctx)
    y_avg = nwattn.average_pool(col(y_train), len(x_test), ctx=ctx)[:, 0]
    y_nw, w_nw = gaussian_pool(x_test, x_train, y_train, 1.0, ctx)
    w0 = rng.uniform()  # d2l: torch.rand((1,))
    w, losses = nwattn.wmodel_train(x_train, y_train, w0, learning_rate=0.5, epochs=5, ctx=ctx)
    y_par, w_par = trained_pool(x_test, x_train, y_train, w, ctx)
    ent_nw, neff_nw = nwattn.weights_diagnostics(w_nw, ctx=ctx)
    ent_par, neff_par = nwattn.weights_diagnostics(w_par, ctx=ctx)

    def mse(y):
        return float(np.mean((y.astype(np.float64) - y_truth) ** 2))

    print("\n== d2l: attention pooling on y = 2 sin x + x^0.8 + noise "
          f"({len(x_train)} training points, {len(x_test)} queries)")
    print(f"mean of y_train (average pooling's constant): {float(np.mean(y_train)):.4f}")
    print("nwattn_wmodel_train: SGD on w, lr 0.5, 5 epochs, leave-one-out keys, "
          "loss = sum (yhat - y)^2 / 2:")
    print(f"  w0 = {w0:.4f}")
    for epoch, loss in enumerate(losses, 1):
        print(f"  epoch {epoch}, loss {loss:.6f}")
    print(f"  trained w = {w:.4f} (Gaussian bandwidth 1/|w| = {1 / abs(w):.4f})")
    print(f"MSE against the true f on the queries: average {mse(y_avg):.4f}, "
          f"nonparametric {mse(y_nw):.4f}, trained {mse(y_par):.4f}")
    print(f"attention spread (mean over queries): entropy {ent_nw.mean():.3f} nats and "
          f"{neff_nw.mean():.1f} effective neighbours (h = 1), {ent_par.mean():.3f} nats and "
          f"{neff_par.mean():.1f} (trained; uniform would be {np.log(len(x_train)):.3f} and "
          f"{len(x_train)})")
    print(f"\n{'x':>5} {'truth':>8} {'average':>8} {'NW h=1':>8} {'trained':>8}")
    for i in range(0, len(x_test), step):
        print(f"{x_test[i]:5.1f} {y_truth[i]:8.4f} {y_avg[i]:8.4f} {y_nw[i]:8.4f} "
              f"{y_par[i]:8.4f}")
    print("\nattention weights (rows: queries; peak weight, where it is, and the row sum):")
    print(f"{'x':>5} {'NW peak':>8} {'at x_i':>7} {'sum':>6} | {'trained peak':>12} "
          f"{'at x_i':>7} {'sum':>6}")
    for i in range(0, len(x_test), step):
        j, k = int(np.argmax(w_nw[i])), int(np.argmax(w_par[i]))
        print(f"{x_test[i]:5.1f} {w_nw[i, j]:8.4f} {x_train[j]:7.3f} {w_nw[i].sum():6.3f} | "
              f"{w_par[i, k]:12.4f} {x_train[k]:7.3f} {w_par[i].sum():6.3f}")

    files = []

    def emit(name):
        path = out / name
        files.append(path)
        return path

    plot_kernel_reg(emit("d2l_average_pooling.png"), "Average pooling", x_test, y_truth, y_avg,
                    x_train, y_train)
    plot_kernel_reg(emit("d2l_nonparametric.png"), "Nonparametric attention pooling (h = 1)",
                    x_test, y_truth, y_nw, x_train, y_train)
    plot_kernel_reg(emit("d2l_trained.png"), f"Trained attention pooling (w = {w:.2f})",
                    x_test, y_truth, y_par, x_train, y_train)
    plot_heatmap(emit("d2l_nonparametric_heatmap.png"), "Nonparametric attention weights",
                 w_nw)
    plot_heatmap(emit("d2l_trained_heatmap.png"), "Trained attention weights", w_par)
    plot_loss(emit("d2l_training_loss.png"), losses)
    save_csv(emit("d2l_curves.csv"), ["x", "truth", "average", "nonparametric", "trained"],
             [x_test, y_truth, y_avg, y_nw, y_par])
    save_csv(emit("d2l_train.csv"), ["x_train", "y_train"], [x_train, y_train])
    np.savetxt(emit("d2l_nonparametric_weights.csv"), w_nw, delimiter=",", fmt="%.7g")
    np.savetxt(emit("d2l_trained_weights.csv"), w_par, delimiter=",", fmt="%.7g")
    save_csv(emit("d2l_training_loss.csv"), ["epoch", "loss"],
             [np.arange(1, len(losses) + 1), losses])

    # -- seed 1: three bandwidths ---------------------------------------------------------
    s_x, s_y, x_grid = seed1_data(nwattn.Rng(args.seed), ctx)  # a fresh stream, as in C
    preds = {h: gaussian_pool(x_grid, s_x, s_y, h, ctx)[0] for h in (0.05, 0.5, 10.0)}
    print(f"\n== seed 1: Nadaraya-Watson on y = sin x + noise ({len(s_x)} points), "
          "bandwidths 0.05, 0.5, 10")
    sine = np.sin(x_grid.astype(np.float64))
    inside = (x_grid >= 0) & (x_grid <= 10)
    for h, y in preds.items():
        rough = float(np.mean(np.abs(np.diff(y, 2))))
        print(f"  h = {h:5}: MSE against sin x on [0, 10] {np.mean((y - sine)[inside] ** 2):.4f}, "
              f"range [{y.min():.3f}, {y.max():.3f}], mean |second difference| {rough:.4f}")
    sel = nwattn.select_bandwidth(s_x, s_y, ctx=ctx)
    print(f"  leave-one-out cross-validation would choose h = {sel.bandwidths[0]:.4f} "
          f"(CV {sel.cv:.4f}; CV at 0.05, 0.5, 10: "
          + ", ".join(f"{c:.4f}" for c in nwattn.nw_cv(s_x, s_y, list(preds), ctx=ctx)) + ")")
    print(f"\n{'x':>7} " + " ".join(f"{'h=' + str(h):>8}" for h in preds))
    for i in range(0, len(x_grid), 1 if args.full else 20):
        print(f"{x_grid[i]:7.3f} " + " ".join(f"{preds[h][i]:8.4f}" for h in preds))
    plot_bandwidths(emit("seed1_bandwidths.png"), x_grid, preds, s_x, s_y)
    save_csv(emit("seed1_bandwidths.csv"), ["x"] + [f"h={h}" for h in preds],
             [x_grid] + list(preds.values()))
    save_csv(emit("seed1_data.csv"), ["x_train", "y_train"], [s_x, s_y])

    # -- seed 1: inference (issue 15): CV fit, bands, derivative, density -----------------
    inner = np.linspace(0, 10, 101, dtype=np.float32)
    sel_ll = nwattn.select_bandwidth(s_x, s_y, degree="linear", ctx=ctx)
    res = nwattn.NWResults(s_x, s_y, sel_ll.bandwidths, degree="linear",
                           cv_curve=(sel_ll.curve_scales, sel_ll.curve_cv), ctx=ctx)
    lo, hi = res.conf_int(inner)
    bands = res.bootstrap_bands(inner, replicates=999, seed=args.seed)
    deriv, dse = res.derivative(inner)
    deriv, dse = deriv[:, 0], dse[:, 0]
    print("\n== seed 1: inference at the CV bandwidth (local linear)")
    print(res.summary())
    covered = np.mean((lo <= np.sin(inner)) & (np.sin(inner) <= hi))
    print(f"  sin x inside the pointwise band at {100 * covered:.0f} % of 101 points on [0, 10]; "
          f"simultaneous band {np.mean(bands.sim_upper - bands.sim_lower):.3f} wide on average "
          f"(pointwise {np.mean(hi - lo):.3f})")
    plot_inference(emit("seed1_inference.png"), inner, res, bands, lo, hi, deriv, dse, s_x, s_y)
    save_csv(emit("seed1_inference.csv"),
             ["x", "fit", "lower", "upper", "sim_lower", "sim_upper", "slope", "slope_se"],
             [inner, res.fit(inner), lo, hi, bands.sim_lower, bands.sim_upper, deriv, dse])
    grid_h = np.geomspace(0.05, 5.0, 200).astype(np.float32)  # LSCV on a fine grid (no scipy)
    lscv, _ = nwattn.kde_cv(s_x, grid_h, ctx=ctx)
    h_kde = float(grid_h[int(np.argmin(lscv))])
    x_dens = np.linspace(-1, 11, 241, dtype=np.float32)
    dens = nwattn.kde(x_dens, s_x, h_kde, ctx=ctx)
    print(f"  density of x: least-squares CV bandwidth h = {h_kde:.4f} (LSCV {lscv.min():.5f})")
    plot_density(emit("seed1_density.png"), x_dens, dens, h_kde, s_x)
    save_csv(emit("seed1_density.csv"), ["x", "density"], [x_dens, dens])

    ctx.close()
    print(f"\nwrote {len(files)} files to {out.resolve()}{os.sep}:")
    for path in files:
        print(f"  {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
