"""Threads: the BLAS guard of the compiled loops and the training locks.

Examples
--------
>>> from onlinekernel.core.threads import train_lock
>>> class Model:
...     pass
>>> m = Model()
>>> train_lock(m) is train_lock(m)
True
"""
import threading
import weakref

__all__ = ["OneBlasThread", "one_blas_thread", "train_lock"]


class OneBlasThread:
    """Context in which BLAS runs on the calling thread only.

    Python feature maps and losses run numpy inside the loops, on tiles of
    a few hundred rows; a multithreaded BLAS wakes and synchronises its pool
    for each tile, which measured 20x slower here than one thread whenever
    the cores are busy.  The BLAS
    thread count is process-wide, so concurrent solver calls share one
    limit: the first to enter sets it, the last to leave restores the
    user's setting (nested per-call limits would restore out of order).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._libs = None
        self._saved = []

    def _controllers(self):
        """The process's BLAS libraries (threadpoolctl's controllers), found once."""
        if self._libs is None:
            from threadpoolctl import ThreadpoolController
            self._libs = ThreadpoolController().select(user_api="blas").lib_controllers
        return self._libs

    def blas_threads(self):
        """The most threads a BLAS library of the process runs with now (1 without one).

        Read from the libraries themselves, so it is right inside a
        threadpoolctl limit or this guard too.
        """
        with self._lock:
            libs = self._controllers()
        return max((lib.get_num_threads() for lib in libs), default=1)

    def __enter__(self):
        with self._lock:
            if self._users == 0:
                # direct calls into the BLAS libraries: a threadpoolctl limit
                # context costs ~0.2 ms, more than a one-row training step
                self._saved = []
                for lib in self._controllers():
                    n = lib.get_num_threads()
                    if n != 1:
                        lib.set_num_threads(1)
                        self._saved.append((lib, n))
            self._users += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for lib, n in self._saved:
                    lib.set_num_threads(n)
                self._saved = []
        return False


#: The one guard every compiled loop shares (the BLAS thread count is process-wide).
one_blas_thread = OneBlasThread()


# id(estimator) -> its lock; an entry leaves when its estimator is collected (the
# weakref callback runs before the id can be reused).  A plain dict read, not a
# WeakKeyDictionary's: a one-row partial_fit asks twice, 1 us each.
_train_locks = {}
_train_locks_guard = threading.Lock()


def train_lock(estimator):
    """The lock that serialises the training calls of one estimator.

    Kept outside the instance so that pickling, cloning and ``get_params``
    never see it.
    """
    key = id(estimator)
    lock = _train_locks.get(key)
    if lock is None:
        with _train_locks_guard:
            lock = _train_locks.get(key)
            if lock is None:
                lock = threading.RLock()
                weakref.finalize(estimator, _train_locks.pop, key, None).atexit = False
                _train_locks[key] = lock
    return lock
