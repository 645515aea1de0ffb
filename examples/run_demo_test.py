"""CTest's entry to the demo: runs examples/demo.py, or reports a skip (exit code 77) when numpy
or matplotlib is missing for this interpreter; then checks that every picture was written."""
import pathlib
import runpy
import sys

missing = []
for module in ("numpy", "matplotlib"):
    try:
        __import__(module)
    except ImportError:
        missing.append(module)
if missing:
    print(f"SKIPPED: the demo needs {' and '.join(missing)} for {sys.executable} "
          f"(Debian: apt-get install {' '.join('python3-' + m for m in missing)})")
    sys.exit(77)

out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
demo = pathlib.Path(__file__).resolve().parent / "demo.py"
sys.argv = [str(demo)] + sys.argv[1:]
try:
    runpy.run_path(str(demo), run_name="__main__")
except SystemExit as exit_:
    if exit_.code:
        raise
expected = ["d2l_average_pooling.png", "d2l_nonparametric.png", "d2l_trained.png",
            "d2l_nonparametric_heatmap.png", "d2l_trained_heatmap.png", "d2l_training_loss.png",
            "seed1_bandwidths.png", "seed1_inference.png", "seed1_density.png"]
absent = [name for name in expected if not (out / name).is_file() or (out / name).stat().st_size == 0]
if absent:
    sys.exit(f"FAIL: the demo did not write {', '.join(absent)} to {out}")
print(f"ok: {len(expected)} pictures in {out}")
