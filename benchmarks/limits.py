"""This machine's limits for seeded prediction: GEMM rate, cosine rate, pair limit.

Evaluating one (sample, feature) *pair* of a Gaussian random-feature model
costs a projection ``w_k . x_i`` (``d`` multiply-adds), one cosine, and one
multiply-add accumulating ``phi_k(x_i) * alpha_k`` into the output.  The
compiled solver does this a tile at a time: a 128-row tile of ``X`` times the
``d x 256`` transposed weights of a block (one GEMM), the cosine over the
128 x 256 result, then the product with the block's coefficients.  This
script measures the two rates that bound it, on this machine, now:

* **GEMM rate** (GFLOP/s), float64 and float32, at the solver's shape
  (``128 x d`` times ``d x 256``, ``d`` in {16, 128, 784}) plus a large square
  product for reference, through the BLAS the solver itself calls (scipy's,
  function pointers from ``scipy.linalg.cython_blas``, driven by a loop in C
  so that no Python overhead is counted; numpy's ``matmul`` in a Python loop
  when no C compiler is available).  The row tiles cycle through 16 tiles of
  ``X`` (streamed, as in prediction) against one block of weights.
* **Vectorised cosine rate** (G elements/s), float64 and float32: glibc's
  libmvec, reached by compiling a tiny C file with ``cc -O3 -ffast-math
  -fopenmp-simd -march=native ... -lmvec`` and calling it through ctypes on an
  L2-resident 128 x 256 tile refreshed by ``memcpy`` before every pass (the
  refresh is timed separately and subtracted).  Without a compiler or
  libmvec the reference is the better of numpy's ``np.cos`` and
  onlinekernel's ``cos_tile`` in that dtype, and the report says which.
  onlinekernel's own kernel (``onlinekernel.core.streams.cos_tile``) is reported
  beside it; its float32 figure says whether ``cos_tile`` kept float32 or
  widened the input to float64.

Both are measured with one thread (BLAS limited to one thread with
threadpoolctl) and with two: two threads each running the one-thread kernel
on their own buffers at the same time (how ``n_jobs=2`` prediction splits
the rows); the large square GEMM uses BLAS's own two threads instead.

Every rate is given on two clocks.  Over the **wall time** (``gflops``,
``gelem_per_s``, ``pairs_per_s``: the aggregate of the threads, what the
machine delivered while the run shared it) and per second of **CPU time**
of the measuring threads (``*_cpu``: for two threads the sum of each
thread's own rate), which leaves out the time other processes held the
cores and so stays meaningful on a busy machine.  Each figure is the median
over ``repeats`` measurements, every sample is kept.

**Pair limit.**  From the two rates, the (sample, feature) evaluations per
second at input dimension ``d``::

    pair_limit(d) = 1 / (2 (d + 1) / GEMM_flops(d) + 1 / cos_rate)

``2 (d + 1)`` floating-point operations per pair (``d`` multiply-adds of the
projection and one of the accumulation) at the GEMM rate measured at that
``d``, plus one cosine at the vectorised cosine rate.  It assumes the blocks
are already generated (cached) and ignores the bias add and scaling (folded
into the cosine pass) and all overhead: a seeded prediction reaching half of
it is using the machine well.

Run from the repository root::

    nice -n 10 python -m benchmarks.limits          # benchmarks/results/limits.json
    nice -n 10 python -m benchmarks.limits --quick  # limits_quick.json

(under a minute, and about 10 s with ``--quick``, on a busy 2-core machine).

Other scripts call :func:`measure_limits` (it returns the same dictionary the
script writes under ``"limits"``) and :func:`pair_limit` to read it.

Examples
--------
>>> lim = measure_limits(dims=(8,), dtypes=("float64",), threads=(1,),
...                      repeats=1, target_seconds=0.002, square_n=32)
>>> rec = lim["pair_limit"][0]
>>> rec["d"], rec["dtype"], rec["threads"]
(8, 'float64', 1)
>>> pair_limit(lim, "float64", 8) == rec["pairs_per_s"] > 0
True
>>> pair_limit(lim, "float64", 8, clock="cpu") == rec["pairs_per_s_cpu"] > 0
True
"""
import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ._common import (add_output, argument_parser, load_average, make_logger, non_negative_int,
                      onlinekernel_cos_tile, parse_int_list, report_header, write_json)

TILE_ROWS = 128     # rows per tile in the solver
BLOCK_FEATURES = 256  # features per block (DSGClassifier's default block_size)
N_TILES = 16        # distinct row tiles the GEMM loop cycles through
DTYPES = ("float32", "float64")
FORMULA = ("pair_limit(d) = 1 / (2 (d + 1) / GEMM_flops(d) + 1 / cos_rate): per (sample, "
           "feature) pair, d multiply-adds for the projection w.x and one for the "
           "accumulation phi * alpha (2 (d + 1) flops at the GEMM rate measured at the "
           "solver's tile shape for that d), plus one cosine at the vectorised cosine rate. "
           "Blocks assumed cached; bias add, scaling and overheads ignored.")

# The C helper: GEMM loops over the solver's call, cosine loops for libmvec.
C_HEADER = r"""
#include <math.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t which)
{
    struct timespec t;
    clock_gettime(which, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each loop returns its wall time and stores the calling thread's CPU time
   in *cpu (time the thread actually ran: other processes' load left out). */
#define START double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID)
#define STOP *cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0; return clock_s(CLOCK_MONOTONIC) - t0

/* keeps every pass observable, so the compiler cannot drop one */
static __thread volatile double sink;

typedef void (*dgemm_t)(const char *, const char *, const int *, const int *, const int *,
                        const double *, const double *, const int *, const double *,
                        const int *, const double *, double *, const int *);
typedef void (*sgemm_t)(const char *, const char *, const int *, const int *, const int *,
                        const float *, const float *, const int *, const float *,
                        const int *, const float *, float *, const int *);
"""

# One source for both precisions, written out for {T} = double (f64, cos, dgemm)
# and float (f32, cosf, sgemm).
C_LOOPS = r"""
/* reps passes of: refresh z from src (memcpy), then z = cos(z) if do_cos */
double cos_loop_{sfx}({T} *restrict z, const {T} *restrict src, long n, long reps,
                    int do_cos, double *cpu)
{{
    START;
    for (long r = 0; r < reps; r++) {{
        memcpy(z, src, (size_t)n * sizeof({T}));
        if (do_cos) {{
#pragma omp simd
            for (long i = 0; i < n; i++) z[i] = {cos}(z[i]);
        }}
        sink += z[r % n];
    }}
    STOP;
}}

/* The solver's projection: row-major C (rows x F) = X_tile (rows x d) W^T with
   W (F x d) row-major, i.e. column-major C^T = W^T' X^T: {p}gemm('T', 'N', F, rows, d).
   Tile r % n_tiles of X is used on pass r. */
double gemm_loop_{sfx}(void *fp, const {T} *X, long n_tiles, int rows, int d,
                     const {T} *W, int F, {T} *C, long reps, double *cpu)
{{
    {p}gemm_t gemm = ({p}gemm_t)fp;
    const char ta = 'T', tb = 'N';
    const {T} one = 1, zero = 0;
    START;
    for (long r = 0; r < reps; r++)
        gemm(&ta, &tb, &F, &rows, &d, &one, W, &d, X + (r % n_tiles) * (long)rows * d, &d,
             &zero, C, &F);
    sink += C[0];
    STOP;
}}
"""
C_SOURCE = C_HEADER + "".join(C_LOOPS.format(T=T, sfx=sfx, cos=cos, p=p)
                              for T, sfx, cos, p in (("double", "f64", "cos", "d"),
                                                     ("float", "f32", "cosf", "s")))

LIBMVEC_FLAGS = ["-O3", "-ffast-math", "-fopenmp-simd", "-march=native", "-shared", "-fPIC"]
PLAIN_FLAGS = ["-O2", "-shared", "-fPIC"]

_native_cache = {}


# --------------------------------------------------------------------------- #
# the compiled helper
# --------------------------------------------------------------------------- #
def _compile(cc, flags, libs, tmp):
    src = Path(tmp) / "oklimits.c"
    out = Path(tmp) / f"oklimits{len(list(Path(tmp).glob('*.so')))}.so"
    src.write_text(C_SOURCE)
    # Compile and link separately: linking a shared object with -ffast-math
    # adds start-up code that turns on flush-to-zero for the whole process
    # (every later float computation in it, ours included, would change).
    obj = out.with_suffix(".o")
    compile_flags = [f for f in flags if f != "-shared"]
    cmds = [[cc, *compile_flags, "-c", str(src), "-o", str(obj)],
            [cc, "-shared", str(obj), "-o", str(out), *libs]]
    for cmd in cmds:
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, " ".join(cmd), f"{type(exc).__name__}: {exc}"
        if res.returncode != 0:
            return None, " ".join(cmd), (res.stderr or res.stdout).strip()[-600:]
    return out, " && ".join(" ".join(c) for c in cmds), None


def native_helper():
    """The compiled C helper (built once per process) and how it was built.

    Returns ``(lib, info)``: ``lib`` is a ``ctypes.CDLL`` (None when no C
    compiler could build it); ``info["libmvec"]`` says whether its cosine
    loops call libmvec's vector functions (``info["vector_symbols"]``).
    """
    if "lib" in _native_cache:
        return _native_cache["lib"], _native_cache["info"]
    cc = os.environ.get("CC", "cc")
    info = {"compiler": cc, "attempts": [], "libmvec": False, "vector_symbols": []}
    lib = None
    tmp = tempfile.mkdtemp(prefix="oklimits-")
    try:
        for flags, libs in ((LIBMVEC_FLAGS, ["-lmvec", "-lm"]), (PLAIN_FLAGS, ["-lm"])):
            path, cmd, err = _compile(cc, flags, libs, tmp)
            info["attempts"].append({"command": cmd, "error": err})
            if path is None:
                continue
            # libmvec's vector variants are named _ZGV<isa><mask><width>v_cos[f]
            symbols = sorted({m.decode() for m in
                              re.findall(rb"_ZGV\w+?_cosf?(?![\w])", path.read_bytes())})
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as exc:
                info["attempts"][-1]["error"] = f"loading failed: {exc}"
                continue
            info["libmvec"] = "-lmvec" in libs and bool(symbols)
            info["vector_symbols"] = symbols
            info["command"] = cmd
            break
    finally:
        # the loaded library stays mapped; its file is no longer needed
        shutil.rmtree(tmp, ignore_errors=True)
    if lib is not None:
        ptr, i64, i32 = ctypes.c_void_p, ctypes.c_long, ctypes.c_int
        for name in ("cos_loop_f64", "cos_loop_f32"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_double
            fn.argtypes = [ptr, ptr, i64, i64, i32, ctypes.POINTER(ctypes.c_double)]
        for name in ("gemm_loop_f64", "gemm_loop_f32"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_double
            fn.argtypes = [ptr, ptr, i64, i32, i32, ptr, i32, ptr, i64,
                           ctypes.POINTER(ctypes.c_double)]
    _native_cache.update(lib=lib, info=info)
    return lib, info


def _blas_pointer(name):
    """Address of scipy's BLAS routine ``name`` (the one the solver links)."""
    from scipy.linalg import cython_blas
    capsule = cython_blas.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_ptr(capsule, get_name(capsule))


# --------------------------------------------------------------------------- #
# timing loops: each "run(reps)" returns the wall and thread-CPU seconds of
# ``reps`` passes
# --------------------------------------------------------------------------- #
def _python_loop(step):
    def run(reps):
        t0, c0 = time.perf_counter(), time.thread_time()
        for r in range(reps):
            step(r)
        return time.perf_counter() - t0, time.thread_time() - c0
    return run


def _native_loop(fn, *args):
    """run(reps) over a C loop taking ``(*args, reps, &cpu)``."""
    cpu = ctypes.c_double()

    def run(reps):
        wall = fn(*args, reps, ctypes.byref(cpu))
        return wall, cpu.value
    return run


def _gemm_runner(dtype, m, k, n, lib, rng, n_tiles=N_TILES):
    """run(reps): ``reps`` products of an ``m x k`` tile and a ``k x n`` block."""
    X = rng.standard_normal((n_tiles * m, k)).astype(dtype)
    W = rng.standard_normal((n, k)).astype(dtype)
    C = np.empty((m, n), dtype=dtype)
    if lib is not None:
        fn = lib.gemm_loop_f64 if dtype == np.float64 else lib.gemm_loop_f32
        fp = _blas_pointer("dgemm" if dtype == np.float64 else "sgemm")
        run = _native_loop(fn, fp, X.ctypes.data, n_tiles, m, k, W.ctypes.data, n,
                           C.ctypes.data)
        run.keep = (X, W, C)  # the loop holds raw pointers: keep the arrays alive
        return run
    tiles = [X[i * m:(i + 1) * m] for i in range(n_tiles)]
    Wt = W.T
    return _python_loop(lambda r: np.matmul(tiles[r % n_tiles], Wt, out=C))


def _cos_source(dtype, rng):
    """A 128 x 256 tile of the arguments the Gaussian map feeds its cosine.

    ``w.x + b`` with ``w ~ N(0, 2 gamma I)``, ``gamma = 1/d`` and standardised
    ``x``: about ``N(0, 2)`` plus a phase uniform in ``[0, 2 pi)``.
    """
    z = (rng.normal(0.0, np.sqrt(2.0), (TILE_ROWS, BLOCK_FEATURES))
         + rng.uniform(0.0, 2 * np.pi, BLOCK_FEATURES))
    return np.ascontiguousarray(z, dtype=dtype)


def _libmvec_runners(dtype, lib, rng):
    src = _cos_source(dtype, rng)
    z = np.empty_like(src)
    fn = lib.cos_loop_f64 if dtype == np.float64 else lib.cos_loop_f32
    both = _native_loop(lambda reps, cpu: fn(z.ctypes.data, src.ctypes.data, src.size, reps,
                                             1, cpu))
    refresh = _native_loop(lambda reps, cpu: fn(z.ctypes.data, src.ctypes.data, src.size,
                                                reps, 0, cpu))
    return both, refresh


def _numpy_cos_runners(dtype, rng):
    src = _cos_source(dtype, rng)
    z = np.empty_like(src)

    def step(r):
        np.copyto(z, src)
        np.cos(z, out=z)
    return _python_loop(step), _python_loop(lambda r: np.copyto(z, src))


def _cos_tile_runners(cos_tile, dtype, rng):
    """onlinekernel's ``cos_tile``: it copies its input, which is the refresh."""
    src = _cos_source(dtype, rng)
    out_dtype = cos_tile(src[:1, :1]).dtype
    return (_python_loop(lambda r: cos_tile(src)),
            _python_loop(lambda r: np.array(src, dtype=out_dtype, order="C", copy=True)),
            out_dtype)


def _calibrate(run, target_seconds):
    """Passes per measurement so that one lasts about target_seconds of CPU time."""
    reps, spent = 1, run(1)[1]
    while spent < target_seconds / 4 and reps < 1 << 30:
        reps *= 4
        spent = run(reps)[1]
    return max(1, int(round(reps * target_seconds / max(spent, 1e-9))))


def _concurrent(runs, reps):
    """Every ``run(reps)`` started together, one thread each.

    Returns the wall time from the start to the last finish and each
    thread's CPU time.
    """
    if len(runs) == 1:
        wall, cpu = runs[0](reps)
        return wall, [cpu]
    start = threading.Barrier(len(runs) + 1)
    cpus, errors = [None] * len(runs), []

    def worker(i):
        start.wait()
        try:
            cpus[i] = runs[i](reps)[1]
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(len(runs))]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return wall, cpus


def _rates(work, wall, cpus):
    """Aggregate rates of one measurement: over the wall time, and per CPU time.

    ``work`` is done by each thread; the CPU-time rate adds each thread's
    own rate (what the threads would give with a core each).
    """
    return len(cpus) * work / wall, sum(work / max(c, 1e-12) for c in cpus)


def _measure_rate(make_run, work_per_pass, threads, repeats, target_seconds):
    """Aggregate rates (work units per second) of ``threads`` copies of a loop.

    ``make_run()`` builds one independent loop (own buffers); the number of
    passes is calibrated on one copy alone.  Returns the median rates over
    the wall time (``rate``) and over each thread's CPU time (``rate_cpu``)
    with every sample.
    """
    runs = [make_run() for _ in range(threads)]
    reps = _calibrate(runs[0], target_seconds)
    samples = [_rates(reps * work_per_pass, *_concurrent(runs, reps)) for _ in range(repeats)]
    wall, cpu = [x[0] for x in samples], [x[1] for x in samples]
    return {"rate": float(np.median(wall)), "rate_cpu": float(np.median(cpu)),
            "rate_samples": wall, "rate_cpu_samples": cpu, "passes_per_measurement": reps}


# --------------------------------------------------------------------------- #
# the measurements
# --------------------------------------------------------------------------- #
def _gemm_record(r, **fields):
    rec = dict(fields)
    rec.update({"gflops": r["rate"] / 1e9, "gflops_cpu": r["rate_cpu"] / 1e9,
                "gflops_samples": [x / 1e9 for x in r["rate_samples"]],
                "gflops_cpu_samples": [x / 1e9 for x in r["rate_cpu_samples"]],
                "calls_per_measurement": r["passes_per_measurement"]})
    return rec


def measure_gemm(dims, dtypes, threads, repeats, target_seconds, square_n, lib, log):
    """GEMM rates at the solver's tile shapes (and one square product) per dtype and threads."""
    rng = np.random.default_rng(0)
    out = []
    for dt in dtypes:
        dtype = np.dtype(dt).type
        for t in threads:
            with threadpool_limits(limits=1, user_api="blas"):
                for d in dims:
                    r = _measure_rate(lambda: _gemm_runner(dtype, TILE_ROWS, d, BLOCK_FEATURES,
                                                           lib, rng),
                                      2.0 * TILE_ROWS * d * BLOCK_FEATURES, t, repeats,
                                      target_seconds)
                    out.append(_gemm_record(r, kind="tile", dtype=dt, threads=t, d=d,
                                            m=TILE_ROWS, k=d, n=BLOCK_FEATURES))
                    log(f"  GEMM {dt} {t} thread(s) 128 x {d} x 256: "
                        f"{out[-1]['gflops']:.1f} GFLOP/s ({out[-1]['gflops_cpu']:.1f} per "
                        f"CPU second)")
            if square_n:
                # BLAS's own threads on one large product (reference figure)
                n = square_n
                with threadpool_limits(limits=t, user_api="blas"):
                    r = _measure_rate(lambda: _gemm_runner(dtype, n, n, n, lib, rng, n_tiles=1),
                                      2.0 * n ** 3, 1, max(1, min(repeats, 3)), target_seconds)
                out.append(_gemm_record(r, kind="square", dtype=dt, threads=t, d=n, m=n, k=n,
                                        n=n, blas_threads=t))
                if t > 1:
                    # BLAS's worker threads are not on the calling thread's clock
                    out[-1]["gflops_cpu"] = out[-1]["gflops_cpu_samples"] = None
                log(f"  GEMM {dt} BLAS {t} thread(s) {n} x {n} x {n}: "
                    f"{out[-1]['gflops']:.1f} GFLOP/s")
    return out


def _measure_cos(make_pair, threads, repeats, target_seconds, **fields):
    """Cosine rate net of the refresh, ``threads`` copies at once.

    ``make_pair()`` gives ``(run, refresh)``: ``run(reps)`` refreshes the tile
    and takes its cosine ``reps`` times, ``refresh(reps)`` only refreshes it.
    The two are timed back to back in every repeat and the rate of that
    repeat counts ``t(run) - t(refresh)`` per pass, on each clock; a
    difference that is not clearly positive (the load changed between the
    two) keeps the refresh in (``refresh_subtracted`` counts the others).
    """
    pairs = [make_pair() for _ in range(threads)]
    runs, refreshes = [p[0] for p in pairs], [p[1] for p in pairs]
    reps = _calibrate(runs[0], target_seconds)
    work = reps * TILE_ROWS * BLOCK_FEATURES

    def net(t_run, t_ref):
        return (t_run - t_ref, 1) if t_run - t_ref > 0.05 * t_run else (t_run, 0)
    wall, cpu, gross, refresh_s, subtracted = [], [], [], [], 0
    for _ in range(repeats):
        w_run, c_run = _concurrent(runs, reps)
        w_ref, c_ref = _concurrent(refreshes, reps)
        w_net, ok = net(w_run, w_ref)
        subtracted += ok
        c_net = [net(a, b)[0] for a, b in zip(c_run, c_ref)]
        r_wall, r_cpu = _rates(work, w_net, c_net)
        wall.append(r_wall / 1e9)
        cpu.append(r_cpu / 1e9)
        gross.append(_rates(work, w_run, c_run)[0] / 1e9)
        refresh_s.append(w_ref / reps)
    rec = dict(fields, threads=threads)
    rec.update({"gelem_per_s": float(np.median(wall)), "gelem_per_s_cpu": float(np.median(cpu)),
                "gelem_per_s_samples": wall, "gelem_per_s_cpu_samples": cpu,
                "gelem_per_s_including_refresh": float(np.median(gross)),
                "refresh_seconds_per_tile": float(np.median(refresh_s)),
                "refresh_subtracted": f"{subtracted}/{repeats} repeats",
                "tiles_per_measurement": reps})
    return rec


def measure_cosine(dtypes, threads, repeats, target_seconds, lib, native, log):
    """Reference vectorised cosine (libmvec or fallback) and onlinekernel's ``cos_tile``."""
    rng = np.random.default_rng(1)
    reference, ours, notes = [], [], []
    cos_tile = onlinekernel_cos_tile()
    if cos_tile is None:
        notes.append("this build of onlinekernel has no cos_tile: not measured")
    for dt in dtypes:
        dtype = np.dtype(dt).type
        mine = []  # onlinekernel's kernel, when there is one: one thread (it holds the GIL)
        if cos_tile is not None:
            run, refresh, out_dtype = _cos_tile_runners(cos_tile, dtype, rng)
            out_dtype = np.dtype(out_dtype).name
            mine.append(_measure_cos(
                lambda: (run, refresh), 1, repeats, target_seconds, dtype=dt,
                method="onlinekernel.core.streams.cos_tile", computes_in=out_dtype,
                native_dtype=out_dtype == dt,
                note=("refresh = the copy cos_tile makes of its input; includes one Python "
                      "call per tile") + ("" if out_dtype == dt else
                                          f"; this build's cos_tile widens {dt} input to "
                                          f"{out_dtype}")))
            log(f"  cos {dt} onlinekernel cos_tile (computes in {out_dtype}): "
                f"{mine[0]['gelem_per_s']:.2f} G/s")
        ours += mine
        for t in threads:
            if native.get("libmvec"):
                # each thread gets its own tile
                reference.append(_measure_cos(lambda: _libmvec_runners(dtype, lib, rng), t,
                                              repeats, target_seconds, dtype=dt,
                                              method="libmvec",
                                              vector_symbols=native.get("vector_symbols")))
                log(f"  cos {dt} libmvec {t} thread(s): "
                    f"{reference[-1]['gelem_per_s']:.2f} G/s")
                continue
            # no libmvec: the better of np.cos (t threads) and cos_tile (one
            # thread: it holds the GIL, so more threads would not add to it)
            rec_np = _measure_cos(lambda: _numpy_cos_runners(dtype, rng), t, repeats,
                                  target_seconds, dtype=dt, method="numpy.cos")
            best = max([rec_np] + mine, key=lambda r: r["gelem_per_s_cpu"])
            reference.append(dict(best, threads=t, note=(
                f"libmvec unavailable; best of numpy.cos with {t} thread(s) "
                f"({rec_np['gelem_per_s']:.3g} G/s)" + "".join(
                    f" and onlinekernel cos_tile with one ({r['gelem_per_s']:.3g} G/s)"
                    for r in mine))))
            notes.append(f"{dt}, {t} thread(s): no libmvec; reference cosine = "
                         f"{best['method']}")
            log(f"  cos {dt} reference {best['method']} {t} thread(s): "
                f"{best['gelem_per_s']:.2f} G/s")
    return reference, ours, notes


def _find(records, **keys):
    for r in records:
        if all(r.get(k) == v for k, v in keys.items()):
            return r
    raise KeyError(f"no measurement for {keys}")


def pair_limit(limits, dtype, d, threads=1, clock="wall"):
    """The pair limit (pairs/s) stored in ``limits`` for ``dtype``, ``d`` and ``threads``.

    ``clock="wall"`` gives it over the wall time, ``clock="cpu"`` per second
    of the threads' own CPU time.  Raises KeyError when that combination was
    not measured.
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    rec = _find(limits["pair_limit"], dtype=dtype, d=d, threads=threads)
    return rec["pairs_per_s" if clock == "wall" else "pairs_per_s_cpu"]


def pair_limit_from_rates(d, gemm_flops, cos_rate):
    """``1 / (2 (d + 1) / gemm_flops + 1 / cos_rate)`` in pairs per second.

    Examples
    --------
    >>> round(pair_limit_from_rates(15, gemm_flops=32e9, cos_rate=1e9) / 1e6)
    500
    """
    return 1.0 / (2.0 * (d + 1) / gemm_flops + 1.0 / cos_rate)


def measure_limits(dims=(16, 128, 784), dtypes=DTYPES, threads=(1, 2), repeats=5,
                   target_seconds=0.04, square_n=2048, log=None):
    """Measure this machine's GEMM and cosine rates and derive the pair limits.

    Parameters
    ----------
    dims : sequence of int
        Input dimensions ``d`` of the GEMM tiles (``128 x d`` times ``d x 256``).
    dtypes : sequence of {"float32", "float64"}
    threads : sequence of int
        Thread counts: 1, and 2 for two concurrent one-thread kernels.
    repeats : int
        Measurements per figure; the median is reported.
    target_seconds : float
        Duration of one measurement (passes are calibrated to it).
    square_n : int
        Size of the reference square GEMM (0 leaves it out).
    log : callable, optional
        Receives one progress line per figure.

    Returns
    -------
    dict
        ``gemm`` (records: dtype, threads, d, GFLOP/s with samples),
        ``cosine`` (``reference`` and ``onlinekernel`` records in G elements/s,
        the method used), ``pair_limit`` (records: dtype, threads, d,
        ``pairs_per_s`` and the rates it came from), ``formula``, ``native``
        (how the C helper was built), ``settings``, ``notes``, ``seconds``.

    Examples
    --------
    >>> lim = measure_limits(dims=(4,), dtypes=("float32",), threads=(1,), repeats=1,
    ...                      target_seconds=0.002, square_n=0)
    >>> sorted(lim)[:4]
    ['cosine', 'formula', 'gemm', 'native']
    """
    log = log or (lambda msg: None)
    for dt in dtypes:
        if dt not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dt!r}")
    if repeats < 1 or any(t < 1 for t in threads) or any(d < 1 for d in dims):
        raise ValueError("repeats, threads and dims must be >= 1")
    started = time.perf_counter()
    lib, native = native_helper()
    gemm_method = ("scipy BLAS (cython_blas dgemm/sgemm, the solver's library) in a C loop"
                   if lib is not None else "numpy.matmul in a Python loop (no C compiler)")
    log(f"GEMM via {gemm_method}")
    gemm = measure_gemm(dims, dtypes, threads, repeats, target_seconds, square_n, lib, log)
    log("cosine via " + ("libmvec" if native["libmvec"] else "fallback (no libmvec)"))
    reference, ours, notes = measure_cosine(dtypes, threads, repeats, target_seconds, lib,
                                            native, log)
    limits = []
    for dt in dtypes:
        for t in threads:
            cos = _find(reference, dtype=dt, threads=t)
            for d in dims:
                g = _find(gemm, kind="tile", dtype=dt, threads=t, d=d)
                rec = {"dtype": dt, "threads": t, "d": d}
                for suffix in ("", "_cpu"):
                    G, C = g["gflops" + suffix] * 1e9, cos["gelem_per_s" + suffix] * 1e9
                    rec.update({"pairs_per_s" + suffix: pair_limit_from_rates(d, G, C),
                                "gemm_gflops" + suffix: g["gflops" + suffix],
                                "cos_gelem_per_s" + suffix: cos["gelem_per_s" + suffix],
                                "ns_per_pair_gemm" + suffix: 1e9 * 2 * (d + 1) / G,
                                "ns_per_pair_cos" + suffix: 1e9 / C})
                if t == 1:
                    mine = _find(ours, dtype=dt)
                    rec["pairs_per_s_cpu_with_onlinekernel_cos"] = pair_limit_from_rates(
                        d, g["gflops_cpu"] * 1e9, mine["gelem_per_s_cpu"] * 1e9)
                limits.append(rec)
    return {
        "formula": FORMULA,
        "gemm": {"method": gemm_method, "records": gemm},
        "cosine": {"method": "libmvec" if native["libmvec"] else reference[0]["method"],
                   "reference": reference, "onlinekernel": ours},
        "pair_limit": limits,
        "native": native,
        "settings": {"dims": list(dims), "dtypes": list(dtypes), "threads": list(threads),
                     "repeats": repeats, "target_seconds": target_seconds,
                     "square_n": square_n, "tile_rows": TILE_ROWS,
                     "block_features": BLOCK_FEATURES, "row_tiles_cycled": N_TILES,
                     "threads_meaning": "GEMM tiles and cosine: that many threads each "
                                        "running the one-thread kernel at once (BLAS limited "
                                        "to 1 thread), aggregate rate; square GEMM: BLAS's "
                                        "own threads"},
        "notes": notes,
        "seconds": time.perf_counter() - started,
    }


def format_table(limits):
    """The pair limits as a markdown table, one row per dtype and thread count.

    Each cell is ``wall / CPU``: the rate over the wall time, then per CPU
    second of the measuring threads.
    """
    dims = limits["settings"]["dims"]
    lines = ["| dtype | threads | cosine G/s | " + " | ".join(
        f"GEMM GFLOP/s d={d} | pair limit M/s d={d}" for d in dims) + " |",
        "|---|---|---|" + "---|---|" * len(dims)]
    for dt in limits["settings"]["dtypes"]:
        for t in limits["settings"]["threads"]:
            cos = _find(limits["cosine"]["reference"], dtype=dt, threads=t)
            cells = [dt, str(t), f"{cos['gelem_per_s']:.2f} / {cos['gelem_per_s_cpu']:.2f}"]
            for d in dims:
                rec = _find(limits["pair_limit"], dtype=dt, threads=t, d=d)
                cells += [f"{rec['gemm_gflops']:.1f} / {rec['gemm_gflops_cpu']:.1f}",
                          f"{rec['pairs_per_s'] / 1e6:,.0f} / {rec['pairs_per_s_cpu'] / 1e6:,.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argument_parser(__doc__, "smoke run: 3 repeats of ~10 ms, 1024^3 square GEMM")
    add_output(p, "limits")
    p.add_argument("--dims", type=parse_int_list, default=[16, 128, 784],
                   help="input dimensions d, comma-separated (default: 16,128,784)")
    p.add_quick_option("--repeats", 5, 3, "measurements per figure, median reported")
    p.add_quick_option("--square", 2048, 1024, "reference square GEMM size, 0 for none",
                       type=non_negative_int)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    log = make_logger(started)
    report = report_header("limits", "quick" if args.quick else "full")
    report["limits"] = measure_limits(dims=args.dims, repeats=args.repeats,
                                      target_seconds=0.01 if args.quick else 0.04,
                                      square_n=args.square, log=log)
    report["load_average_at_end"] = load_average()
    report["wall_time_s"] = time.perf_counter() - started
    write_json(args.output, report)
    print("\nwall / CPU time:")
    print(format_table(report["limits"]))
    print(f"\nwrote {args.output} in {report['wall_time_s']:.0f} s")
    return report


if __name__ == "__main__":
    main()
