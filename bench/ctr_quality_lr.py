"""The baseline of bench/ctr_quality.sh: scikit-learn's logistic regression on one-hot features
of oar-gen-ctr --layout=clicklog's csv (price one-hot in 16 quantile bands of the train rows,
recent's categories one-hot each), with or without the crosses oar's commands name (cat*hour,
cat*price band, recent*cat). L2 strength picked on the test rows from a small grid, which favours
the baseline. Prints "lr[+crosses] AUC".
usage: python3 bench/ctr_quality_lr.py TRAIN.csv TEST.csv [crosses]"""

import csv
import sys

import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def features(rows, bands, crosses):
    out = []
    for r in rows:
        band = str(int(np.searchsorted(bands, float(r["price"]), side="right")))
        recent = [c for c in r["recent"].split("|") if c]
        f = ["user=" + r["user"], "item=" + r["item"], "cat=" + r["cat"], "hour=" + r["hour"],
             "device=" + r["device"], "price=" + band] + ["recent=" + c for c in recent]
        if crosses:
            f += ["cat*hour=%s,%s" % (r["cat"], r["hour"]), "cat*price=%s,%s" % (r["cat"], band)]
            f += ["recent*cat=%s,%s" % (c, r["cat"]) for c in recent]
        out.append(f)
    return out


def main():
    train, test = read(sys.argv[1]), read(sys.argv[2])
    crosses = len(sys.argv) > 3 and sys.argv[3] == "crosses"
    prices = np.array([float(r["price"]) for r in train])
    bands = np.unique(np.quantile(prices, np.arange(1, 16) / 16))
    hasher = FeatureHasher(n_features=1 << 22, input_type="string", alternate_sign=False)
    x_train = hasher.transform(features(train, bands, crosses))
    x_test = hasher.transform(features(test, bands, crosses))
    y_train = np.array([int(r["clicked"]) for r in train])
    y_test = np.array([int(r["clicked"]) for r in test])
    best = 0.0
    for c in (0.03, 0.1, 0.3, 1.0):
        model = LogisticRegression(C=c, solver="liblinear", max_iter=200)
        model.fit(x_train, y_train)
        best = max(best, roc_auc_score(y_test, model.predict_proba(x_test)[:, 1]))
    print("%s %.4f" % ("lr+crosses" if crosses else "lr", best))


if __name__ == "__main__":
    main()
