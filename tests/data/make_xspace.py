"""Record the small real XSpace (``*.xplane.pb``) profiles used by ``tests/test_xspace.py``.

Needs tensorflow-cpu and jax[cpu], which are NOT project dependencies (only this
script uses them)::

    pip install tensorflow-cpu "jax[cpu]"
    python tests/data/make_xspace.py

Writes the bundled examples, under ``jupyter_profview/examples/xspace/``
(``profview.example("xspace_tf_logs")`` / ``"xspace_jax"``, for the notebook and
Binder); ``tests/data/xspace/`` holds symlinks to them (``tf_keras`` -> the whole
``tf_keras_logs`` directory, so a new run directory name needs no new link), so
re-running replaces the one copy:

- ``tf_keras_logs/plugins/profile/<run>/<host>.xplane.pb``: a tiny Keras model
  trained with ``model.fit`` and the TensorBoard callback profiling batches
  2-4 (``profile_batch=(2, 4)``): the layout TensorBoard's profile plugin reads
  (``logs/plugins/profile/<run>/``), host plane with TF ops and step markers.
- ``jax_cpu.xplane.pb.gz``: a jitted MLP training step run a few times under
  ``jax.profiler.trace`` on CPU (host threads, XLA modules and ops),
  gzip-compressed (gzip is sniffed from content).

Each file is kept under 500 KB.  Re-running changes timings and ids; the tests
derive every expected value from the files themselves.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "xspace"  # the tests' symlinks
EXAMPLES = Path(__file__).resolve().parents[2] / "jupyter_profview" / "examples" / "xspace"
TF_LOGS = EXAMPLES / "tf_keras_logs"
JAX_FILE = EXAMPLES / "jax_cpu.xplane.pb.gz"
LIMIT = 500_000


def _only_xplane(run_root: Path) -> Path:
    found = sorted(run_root.rglob("*.xplane.pb"))
    if len(found) != 1:
        raise SystemExit(f"expected one .xplane.pb under {run_root}, found {found}")
    return found[0]


def make_tf() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(0)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype("float32")
    y = rng.normal(size=(64, 1)).astype("float32")
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    with tempfile.TemporaryDirectory() as tmp:
        callback = tf.keras.callbacks.TensorBoard(log_dir=tmp, profile_batch=(2, 4))
        model.fit(x, y, batch_size=8, epochs=1, callbacks=[callback], verbose=0)
        src = _only_xplane(Path(tmp))
        rel = src.relative_to(Path(tmp))
        out_root = TF_LOGS
        shutil.rmtree(out_root, ignore_errors=True)  # the previous run: one copy only
        # keep only plugins/profile/<run>/<host>.xplane.pb (drop events files etc.)
        parts = rel.parts[rel.parts.index("plugins"):]
        dest = out_root.joinpath(*parts)
        dest.parent.mkdir(parents=True)
        shutil.copyfile(src, dest)
    size = dest.stat().st_size
    print(f"{dest}: {size} bytes")
    if size > LIMIT:
        raise SystemExit(f"{dest} is {size} bytes, over {LIMIT}")


def make_jax() -> None:
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        w1, w2 = params
        return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return [p - 0.01 * g for p, g in zip(params, grads, strict=True)]

    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    params = [jax.random.normal(k1, (8, 16)), jax.random.normal(k2, (16, 1))]
    x = jax.random.normal(k3, (32, 8))
    y = jnp.ones((32, 1))
    params = step(params, x, y)  # compile outside the trace
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp):
            for i in range(3):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    params = step(params, x, y)
            jax.block_until_ready(params)
        data = _only_xplane(Path(tmp)).read_bytes()
    dest = JAX_FILE
    dest.write_bytes(gzip.compress(data, mtime=0))
    size = dest.stat().st_size
    print(f"{dest}: {size} bytes ({len(data)} uncompressed)")
    if size > LIMIT:
        raise SystemExit(f"{dest} is {size} bytes, over {LIMIT}")


def link(name: str, target: Path) -> None:
    """``tests/data/xspace/<name>`` -> ``target`` (relative), replacing a stale link or a
    directory of links left by an older version of this script (never real files)."""
    path = HERE / name
    if path.is_symlink():
        path.unlink()
    elif path.is_dir():
        real = [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
        if real:
            raise SystemExit(f"{path} holds files that are not links ({real[0]}): move them first")
        shutil.rmtree(path)
    elif path.exists():
        raise SystemExit(f"{path} is a file, not a link to {target}")
    path.symlink_to(os.path.relpath(target, HERE))


if __name__ == "__main__":
    EXAMPLES.mkdir(parents=True, exist_ok=True)
    HERE.mkdir(parents=True, exist_ok=True)
    make_tf()
    make_jax()
    link("tf_keras", TF_LOGS)
    link("jax_cpu.xplane.pb.gz", JAX_FILE)
