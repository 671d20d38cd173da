"""What a CTR recipe reads from its training data before it is built: the statistics oar computes
for standardize and bucketize auto equal NumPy's on the same column, and a label by value."""

import re

import numpy as np

import oar


def _schema_numbers(main, column):
    """The mean, std and boundaries the program's train feed holds for a dense column."""
    text = main.to_string()
    at = text.index('name: "%s"' % column)
    entry = text[at:text.index("}", at)]
    def number(key):  # a scalar "key: v", or a list "key: [a, b]"
        found = re.findall(r"\b%s: (\[[^]]*\]|\S+)" % key, entry)
        return [float(v) for f in found for v in f.strip("[]").split(",")]
    return number("mean"), number("std"), number("boundaries")


def _write_log(path, rng, rows=3000):
    price = rng.lognormal(3.0, 1.2, rows)
    age = rng.integers(18, 80, rows).astype(float)
    price_missing = rng.random(rows) < 0.05
    lines = ["clicked,price,age,cat"]
    for i in range(rows):
        cell = "" if price_missing[i] else repr(float(price[i]))
        lines.append("%s,%s,%d,c%d" % ("YES" if rng.random() < 0.3 else "NO", cell, age[i], i % 7))
    path.write_text("\n".join(lines) + "\n")
    return price[~price_missing], age


def test_statistics_equal_numpys(tmp_path):
    price, age = _write_log(tmp_path / "log.csv", np.random.default_rng(7))
    main, _ = oar.recipes.build(model="wide_deep", format="csv", data=[str(tmp_path / "log.csv")],
                                label="clicked:positive=YES:negative=NO",
                                dense="price:standardize,age:bucketize:auto:16", sparse="cat",
                                hidden=[8])
    mean, std, _ = _schema_numbers(main, "price")
    # The cells are read as f32 (the feed's dtype), as a served row is.
    values = price.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(mean, [values.mean()], rtol=1e-12)
    np.testing.assert_allclose(std, [values.std()], rtol=1e-9)  # population std, np.std's
    _, _, boundaries = _schema_numbers(main, "age")
    expected = np.unique(np.quantile(age, np.arange(1, 16) / 16).astype(np.float32))
    np.testing.assert_array_equal(np.float32(boundaries), expected)


def test_a_plain_dense_column_is_standardized_unless_raw(tmp_path):
    price, _ = _write_log(tmp_path / "log.csv", np.random.default_rng(3), rows=500)
    settings = dict(model="deepfm", format="csv", data=[str(tmp_path / "log.csv")],
                    label="clicked:positive=YES", dense="price", sparse="cat", hidden=[8])
    main, _ = oar.recipes.build(**settings)
    mean, std, _ = _schema_numbers(main, "price")
    assert mean and std and abs(mean[0] - price.astype(np.float32).mean()) < 1e-3
    raw, _ = oar.recipes.build(raw_dense=True, **settings)
    assert _schema_numbers(raw, "price") == ([], [], [])


def test_adagrad_starts_from_the_initial_accumulator(tmp_path):
    _write_log(tmp_path / "log.csv", np.random.default_rng(5), rows=50)
    settings = dict(model="wide_deep", format="csv", data=[str(tmp_path / "log.csv")],
                    label="clicked:positive=YES", sparse="cat", hidden=[8], vocab=1024)
    def moment_fills(startup):  # the values the startup fills the adagrad moments with
        text = startup.to_string()
        fills = re.findall(r'outputs \{\s*slot: "Out"\s*names: "([^"]*moment[^"]*)"'
                           r'.*?name: "value"\s*f: (\S+)', text, re.S)
        return {name: float(v) for name, v in fills}
    _, startup = oar.recipes.build(initial_accumulator=0.25, **settings)
    fills = moment_fills(startup)
    assert fills and all(v == 0.25 for v in fills.values()), fills
    _, startup = oar.recipes.build(**settings)
    assert all(v == 0.0 for v in moment_fills(startup).values())  # none, or 0
