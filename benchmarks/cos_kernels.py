"""Micro-benchmark of the vectorised cosine kernels against glibc's libmvec.

Random-feature maps spend most of their prediction time in the cosine, so
this measures the two tile kernels of ``onlinekernel/core/src/okcore.h`` on their
own, in C, without Python or BLAS around them:

* ``ok_cos_tile`` (float64) and ``ok_cos_tile_f32`` (float32), compiled with
  the library's portable flags (``-O3 -ffp-contract=off -fno-math-errno``,
  the flags of ``setup.py``); the kernels pick their AVX-512 / AVX2 /
  baseline clone at load time exactly as in the extension modules;
* glibc's vectorised ``cos`` / ``cosf`` from libmvec, reached the way a user
  would: a plain loop compiled with ``-O3 -ffast-math -fopenmp-simd
  -march=native`` and linked with ``-lmvec``.  This is the yardstick, not a
  candidate: it needs ``-ffast-math`` and a machine-specific build.

Every kernel works on the same L2-resident tile (128 x 256 by default:
256 kB in float64, 128 kB in float32) of arguments uniform in
``[-range, range]``.  One repetition copies the pristine tile into the work
tile with ``memcpy`` and runs the kernel on it in place; a trial times
``--reps`` repetitions with the thread's CPU clock (so time the process
spends descheduled on a busy machine does not count), trials of all kernels
are interleaved (so they share the machine's load) and the fastest trial of
each kernel is kept.  The copy alone is timed the same way, and the reported
rate (G elements/s) is net of it; the gross rate, copy included, is in the
JSON too.  Each kernel's largest absolute error against scalar glibc ``cos``
in double precision (of the float32 argument for the float32 kernels),
scale included (sqrt(2), the features' scale), is measured on one tile; it
contains the rounding of that reference (up to 1.1e-16).

The script needs a C compiler (``$CC``, else ``cc``); without one it stops
with a message.  Without libmvec (or if the compiler does not vectorise the
loop into libmvec calls) the libmvec rows are skipped with a message.

Run from the repository root, preferably niced on a shared machine::

    nice -n 5 python -m benchmarks.cos_kernels
    python -m benchmarks.cos_kernels --okcore /path/to/other/okcore.h  # compare a version

It writes ``benchmarks/results/cos_kernels.json`` (``--output`` overrides):
the machine, compiler and flags, every setting, the per-trial times and the
rates and errors per kernel.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ._common import REPO, RESULTS_DIR, cpu_model

DEFAULT_OKCORE = REPO / "src" / "onlinekernel" / "core" / "src" / "okcore.h"
DEFAULT_OUTPUT = RESULTS_DIR / "cos_kernels.json"

# The flags setup.py gives the extension modules (kept in step by hand).
LIBRARY_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno"]
MVEC_FLAGS = ["-O3", "-ffast-math", "-fopenmp-simd", "-march=native"]

HARNESS = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include "okcore.h"

#ifdef OKB_MVEC
void okb_mvec_cos(double *z, long n, double scale);
void okb_mvec_cosf(float *z, long n, float scale);
#endif

static long R, C, REPS, TRIALS;
static double *src64, *work64, *bias64;
static float *src32, *work32, *bias32;
static const double SCALE = 1.4142135623730951;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_copy64(void) { memcpy(work64, src64, (size_t)(R * C) * sizeof(double)); }
static void run_copy32(void) { memcpy(work32, src32, (size_t)(R * C) * sizeof(float)); }
static void k_ok64(void) { run_copy64(); ok_cos_tile(work64, R, C, C, NULL, SCALE, 0); }
static void k_ok64_bias(void) { run_copy64(); ok_cos_tile(work64, R, C, C, bias64, SCALE, 0); }
static void k_ok64_sin(void) { run_copy64(); ok_cos_tile(work64, R, C, C, NULL, SCALE, 3); }
static void k_ok32(void) { run_copy32(); ok_cos_tile_f32(work32, R, C, C, NULL, (float)SCALE, 0); }
static void k_ok32_bias(void) { run_copy32(); ok_cos_tile_f32(work32, R, C, C, bias32, (float)SCALE, 0); }
static void k_ok32_sin(void) { run_copy32(); ok_cos_tile_f32(work32, R, C, C, NULL, (float)SCALE, 3); }
#ifdef OKB_MVEC
static void k_mvec64(void) { run_copy64(); okb_mvec_cos(work64, R * C, SCALE); }
static void k_mvec32(void) { run_copy32(); okb_mvec_cosf(work32, R * C, (float)SCALE); }
#endif

struct kernel { const char *name; void (*run)(void); int f32; int bias; int sine; int copy; };
static const struct kernel KERNELS[] = {
    {"copy_f64", run_copy64, 0, 0, 0, 1},
    {"copy_f32", run_copy32, 1, 0, 0, 1},
    {"ok_f64", k_ok64, 0, 0, 0, 0},
    {"ok_f64_bias", k_ok64_bias, 0, 1, 0, 0},
    {"ok_f64_sin", k_ok64_sin, 0, 0, 1, 0},
    {"ok_f32", k_ok32, 1, 0, 0, 0},
    {"ok_f32_bias", k_ok32_bias, 1, 1, 0, 0},
    {"ok_f32_sin", k_ok32_sin, 1, 0, 1, 0},
#ifdef OKB_MVEC
    {"mvec_f64", k_mvec64, 0, 0, 0, 0},
    {"mvec_f32", k_mvec32, 1, 0, 0, 0},
#endif
};
#define NK ((int)(sizeof(KERNELS) / sizeof(KERNELS[0])))

/* Largest |kernel - scale * cos(arg)| over the tile, scalar glibc in double as reference. */
static double max_error(const struct kernel *k)
{
    long i, j;
    double e = 0.0;
    k->run();
    for (i = 0; i < R; i++)
        for (j = 0; j < C; j++) {
            double arg, got, ref;
            if (k->f32) {
                float a = src32[i * C + j];
                if (k->bias) a = a + bias32[j];
                arg = (double)a;
                got = (double)work32[i * C + j];
            } else {
                arg = src64[i * C + j] + (k->bias ? bias64[j] : 0.0);
                got = work64[i * C + j];
            }
            ref = SCALE * (k->sine ? sin(arg) : cos(arg));
            if (fabs(got - ref) > e || got != got) e = got != got ? INFINITY : fabs(got - ref);
        }
    return e;
}

int main(int argc, char **argv)
{
    long i, t, r;
    int k;
    double range, times[64][NK];
    uint64_t s = 0x9E3779B97F4A7C15ull;
    if (argc != 6) { fprintf(stderr, "usage: rows cols reps trials range\n"); return 2; }
    R = atol(argv[1]); C = atol(argv[2]); REPS = atol(argv[3]); TRIALS = atol(argv[4]);
    range = atof(argv[5]);
    if (TRIALS > 64) TRIALS = 64;
    src64 = aligned_alloc(64, (size_t)(R * C) * sizeof(double));
    work64 = aligned_alloc(64, (size_t)(R * C) * sizeof(double));
    bias64 = aligned_alloc(64, (size_t)C * sizeof(double) + 64);
    src32 = aligned_alloc(64, (size_t)(R * C) * sizeof(float));
    work32 = aligned_alloc(64, (size_t)(R * C) * sizeof(float));
    bias32 = aligned_alloc(64, (size_t)C * sizeof(float) + 64);
    for (i = 0; i < R * C; i++) {                /* xorshift64*: uniform in [-range, range] */
        double u;
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
        u = (double)((s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
        src64[i] = range * (2.0 * u - 1.0);
        src32[i] = (float)src64[i];
    }
    for (i = 0; i < C; i++) {
        bias64[i] = 6.283185307179586 * (double)i / (double)C;
        bias32[i] = (float)bias64[i];
    }
    for (k = 0; k < NK; k++) KERNELS[k].run();     /* warm the caches and the clones */
    for (t = 0; t < TRIALS; t++)
        for (k = 0; k < NK; k++) {
            double t0 = now();
            for (r = 0; r < REPS; r++) KERNELS[k].run();
            times[t][k] = now() - t0;
        }
    printf("{\"kernels\": {");
    for (k = 0; k < NK; k++) {
        printf("%s\"%s\": {\"f32\": %d, \"bias\": %d, \"sine\": %d, \"copy_only\": %d, "
               "\"max_abs_error\": %.6e, \"trial_seconds\": [",
               k ? ", " : "", KERNELS[k].name, KERNELS[k].f32, KERNELS[k].bias,
               KERNELS[k].sine, KERNELS[k].copy, KERNELS[k].copy ? 0.0 : max_error(&KERNELS[k]));
        for (t = 0; t < TRIALS; t++) printf("%s%.9f", t ? ", " : "", times[t][k]);
        printf("]}");
    }
    printf("}}\n");
    return 0;
}
"""

MVEC_SOURCE = r"""
#include <math.h>
void okb_mvec_cos(double *restrict z, long n, double scale)
{
#pragma omp simd
    for (long i = 0; i < n; i++) z[i] = scale * cos(z[i]);
}
void okb_mvec_cosf(float *restrict z, long n, float scale)
{
#pragma omp simd
    for (long i = 0; i < n; i++) z[i] = scale * cosf(z[i]);
}
"""


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def build(cc, okcore, workdir):
    """Compile the harness (and the libmvec loop when possible); return (exe, mvec note)."""
    harness = workdir / "harness.c"
    harness.write_text(HARNESS)
    include = ["-I", str(okcore.parent)]
    if okcore.name != "okcore.h":             # the harness includes "okcore.h"
        shutil.copy(okcore, workdir / "okcore.h")
        include = ["-I", str(workdir)]
    exe = workdir / "bench"
    base = [cc, *LIBRARY_FLAGS, *include, str(harness)]

    mvec_note = None
    mvec_src = workdir / "mvec.c"
    mvec_obj = workdir / "mvec.o"
    mvec_src.write_text(MVEC_SOURCE)
    res = _run([cc, *MVEC_FLAGS, "-c", str(mvec_src), "-o", str(mvec_obj)])
    if res.returncode != 0:
        mvec_note = f"libmvec loop did not compile: {res.stderr.strip()[:300]}"
    else:
        nm = _run(["nm", "-u", str(mvec_obj)]) if shutil.which("nm") else None
        if nm is not None and "_ZGV" not in nm.stdout:
            mvec_note = ("the compiler did not vectorise the loop into libmvec calls "
                         f"(undefined symbols: {nm.stdout.split()})")
        else:
            res = _run([*base, "-DOKB_MVEC", str(mvec_obj), "-o", str(exe), "-lmvec", "-lm"])
            if res.returncode != 0:
                mvec_note = f"linking with -lmvec failed (no libmvec?): {res.stderr.strip()[:300]}"
            else:
                return exe, None
    res = _run([*base, "-o", str(exe), "-lm"])
    if res.returncode != 0:
        sys.exit(f"cos_kernels: the harness did not compile:\n{res.stderr}")
    return exe, mvec_note


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=128)
    ap.add_argument("--cols", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20, help="repetitions per trial")
    ap.add_argument("--trials", type=int, default=60, help="interleaved trials (best kept)")
    ap.add_argument("--range", type=float, default=100.0, dest="arg_range",
                    help="arguments are uniform in [-range, range]")
    ap.add_argument("--okcore", type=Path, default=DEFAULT_OKCORE,
                    help="the okcore.h to measure (default: the repository's)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = ap.parse_args(argv)

    cc = shutil.which(args.cc)
    if cc is None:
        sys.exit(f"cos_kernels: no C compiler found ({args.cc!r}); set $CC or pass --cc")
    okcore = args.okcore.resolve()
    if not okcore.is_file():
        sys.exit(f"cos_kernels: {okcore} not found")
    cc_version = _run([cc, "--version"]).stdout.splitlines()[:1]

    with tempfile.TemporaryDirectory(prefix="ok-cos-bench-") as tmp:
        exe, mvec_note = build(cc, okcore, Path(tmp))
        if mvec_note:
            print(f"cos_kernels: skipping libmvec: {mvec_note}", file=sys.stderr)
        load_start = os.getloadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        res = _run([str(exe), str(args.rows), str(args.cols), str(args.reps),
                    str(args.trials), repr(args.arg_range)])
        load_end = os.getloadavg()
    if res.returncode != 0:
        sys.exit(f"cos_kernels: the benchmark failed:\n{res.stderr}")
    data = json.loads(res.stdout)

    n = args.rows * args.cols * args.reps
    kernels = data["kernels"]
    copy_best = {False: min(kernels["copy_f64"]["trial_seconds"]),
                 True: min(kernels["copy_f32"]["trial_seconds"])}
    rows = []
    for name, k in kernels.items():
        best = min(k["trial_seconds"])
        k["best_seconds"] = best
        k["gross_G_per_s"] = n / best / 1e9
        if k["copy_only"]:
            k["copy_GB_per_s"] = n * (4 if k["f32"] else 8) / best / 1e9
            continue
        net = best - copy_best[bool(k["f32"])]
        k["net_G_per_s"] = n / net / 1e9 if net > 0 else None
        rows.append((name, k))

    report = {
        "benchmark": "cos_kernels",
        "date": started.isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpu": cpu_model(),
                    "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "load_average_start": load_start, "load_average_end": load_end},
        "compiler": {"path": cc, "version": cc_version[0] if cc_version else "",
                     "library_flags": LIBRARY_FLAGS, "libmvec_flags": MVEC_FLAGS + ["-lmvec"]},
        "settings": {"rows": args.rows, "cols": args.cols, "reps": args.reps,
                     "trials": args.trials, "range": args.arg_range, "scale": 2 ** 0.5,
                     "okcore": str(okcore)},
        "libmvec": "measured" if mvec_note is None else f"skipped: {mvec_note}",
        "rate": ("G elements/s of the best trial (thread CPU time), net of the memcpy refresh "
                 "(gross: copy included)"),
        "kernels": kernels,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")

    print(f"{args.rows} x {args.cols} tile, args in [-{args.arg_range:g}, {args.arg_range:g}], "
          f"{args.reps} reps x {args.trials} trials, load {load_start[0]:.2f} -> {load_end[0]:.2f}")
    print(f"memcpy refresh: f64 {kernels['copy_f64']['copy_GB_per_s']:.1f} GB/s, "
          f"f32 {kernels['copy_f32']['copy_GB_per_s']:.1f} GB/s")
    print(f"{'kernel':<12} {'net G/s':>8} {'gross G/s':>10} {'max abs err':>12}")
    for name, k in rows:
        net = k["net_G_per_s"]
        print(f"{name:<12} {net if net is not None else float('nan'):8.2f} "
              f"{k['gross_G_per_s']:10.2f} {k['max_abs_error']:12.2e}")
    if mvec_note:
        print(f"libmvec skipped: {mvec_note}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
