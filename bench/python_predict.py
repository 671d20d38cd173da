"""oar.Predictor called from Python on the rows bench_predict dumped: rows/s at batch 256 with 1
and 2 caller threads, as bench_predict measures the C++ Predictor. Batches are row slices of the
dumped arrays (read in place). Prints `oar from Python rows/s batch 256, T thread(s): R`.

Usage: python_predict.py EXPORT_DIR ROWS_DIR SECONDS
"""
import os
import sys
import threading
import time

import numpy as np

import oar

export, rows_dir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
predictor = oar.Predictor(export)
rows = {name: np.load(os.path.join(rows_dir, name + ".npy")) for name in predictor.inputs}
n = min(a.shape[0] for a in rows.values())
batches = [{k: a[b:b + 256] for k, a in rows.items()} for b in range(0, n - 255, 256)]
for threads in (1, 2):
    done, stop = [0] * threads, threading.Event()
    start = time.perf_counter()

    def call(t):
        i = t
        while not stop.is_set():
            predictor.predict(batches[i % len(batches)])
            done[t] += 256
            i += threads
            if t == 0 and time.perf_counter() - start > seconds:
                stop.set()

    callers = [threading.Thread(target=call, args=(t,)) for t in range(1, threads)]
    for c in callers:
        c.start()
    call(0)
    for c in callers:
        c.join()
    print(f"oar from Python rows/s batch 256, {threads} thread(s): "
          f"{sum(done) / (time.perf_counter() - start):.0f}")
