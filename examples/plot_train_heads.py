"""The pictures of examples/train_heads.c, from the CSV files it wrote into OUTDIR.

    build/examples/train_heads OUTDIR && /usr/bin/python3 examples/plot_train_heads.py OUTDIR

train_heads.png     per-head weights of sequence 0 (queries × keys) before training, after
                    training with the fixed scale 1/sqrt(d_k), and with a learnable temperature
train_entropy.png   per-head mean entropy of the weights over training, both runs
train_scale_lr.png  loss curves with and without the 1/sqrt(d_k) scale at three learning rates
train_pools.png     test weights of the trained Gaussian, Laplace and d2l-w poolings, and their
                    leave-one-out loss by epoch
"""
import csv
import os
import sys

import numpy as np
import matplotlib

matplotlib.use("Agg")  # files only
import matplotlib.pyplot as plt  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "."


def rows(name):
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))


def heatmaps(name):
    r = rows(name)
    heads = 1 + max(int(x["head"]) for x in r)
    t = 1 + max(int(x["query"]) for x in r)
    w = np.zeros((heads, t, t))
    for x in r:
        w[int(x["head"]), int(x["query"]), int(x["key"])] = float(x["weight"])
    return w


runs = [("heads_before.csv", "before training"),
        ("heads_after_fixed_scale.csv", "trained, scale 1/sqrt(d_k)"),
        ("heads_after_learned_scale.csv", "trained, learnable temperature")]
maps = [heatmaps(name) for name, _ in runs]
heads = maps[0].shape[0]
fig, axes = plt.subplots(len(runs), heads, figsize=(2.2 * heads, 2.3 * len(runs)))
for r, ((_, title), w) in enumerate(zip(runs, maps)):
    for h in range(heads):
        ax = axes[r, h]
        ax.imshow(w[h], cmap="Reds", vmin=0, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
        if r == 0:
            ax.set_title(f"head {h}")
        if h == 0:
            ax.set_ylabel(title, fontsize=8)
fig.suptitle("Targets: the tokens at offsets -1 and +3 (query rows × key columns)")
fig.tight_layout()
fig.savefig(os.path.join(out, "train_heads.png"), dpi=80)

fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
for ax, (name, title) in zip(axes, [("entropy_fixed_scale.csv", "scale 1/sqrt(d_k)"),
                                    ("entropy_learned_scale.csv", "learnable temperature")]):
    r = rows(name)
    step = [int(x["step"]) for x in r]
    for h in range(heads):
        ax.plot(step, [float(x[f"head{h}"]) for x in r], label=f"head {h}")
    ax.axhline(np.log(maps[0].shape[1]), color="gray", ls=":", label="uniform")
    ax.set_title(title)
    ax.set_xlabel("Adam step")
axes[0].set_ylabel("mean entropy (nats)")
axes[1].legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(out, "train_entropy.png"), dpi=80)

fig, ax = plt.subplots(figsize=(6, 3.5))
curves = {}
for x in rows("scale_lr.csv"):
    curves.setdefault(x["run"], ([], []))
    curves[x["run"]][0].append(int(x["step"]))
    curves[x["run"]][1].append(float(x["loss"]))
for run, (s, l) in curves.items():
    ax.plot(s, l, ls="-" if "sqrt" in run else "--", label=run)
ax.set_xlabel("Adam step")
ax.set_ylabel("loss")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(out, "train_scale_lr.png"), dpi=80)

fig, axes = plt.subplots(1, 4, figsize=(13, 3.2))
for ax, (name, title) in zip(axes, [("gaussian_h", "Gaussian, learned h"),
                                    ("laplace_h", "Laplace, learned h"),
                                    ("d2l_w", "d2l's w model")]):
    w = np.loadtxt(os.path.join(out, f"pool_weights_{name}.csv"), delimiter=",")
    ax.imshow(w, cmap="Reds")
    ax.set_title(title)
    ax.set_xlabel("training inputs (sorted)")
axes[0].set_ylabel("test queries")
loss = {}
for x in rows("pool_loss.csv"):
    loss.setdefault(x["model"], []).append(float(x["loss"]))
for model, l in loss.items():
    axes[3].plot(l, label=model)
axes[3].set_xlabel("epoch")
axes[3].set_title("leave-one-out loss")
axes[3].legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(out, "train_pools.png"), dpi=80)
print(f"wrote train_heads.png, train_entropy.png, train_scale_lr.png, train_pools.png to {out}")
