"""The C++ API's file feeds from Python: a csv with a schema and UCI housing as {var: array}."""

import os

import numpy as np
import pytest

import oar

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data")


def test_a_csv_feed_with_a_schema_gives_its_columns(tmp_path):
    rows = "clicked,price,user\n1,3.5,alice\n0,1.0,bob\n1,2.0,alice\n"
    (tmp_path / "log.csv").write_text(rows)
    main, startup = oar.Program(), oar.Program()
    with oar.program_guard(main, startup):
        label = oar.data("label", [1])
        dense = oar.data("dense", [1])
        ids = oar.data("ids", [1], dtype="int64")
        main.set_train_feed(format="csv", files=[str(tmp_path / "log.csv")], skip_header=True,
                            columns=[label, dense, ids], batch_size=2, label="clicked",
                            dense="price", sparse="user")
    batches = list(oar.FeedReader(main))
    assert [b["label"].shape[0] for b in batches] == [2, 1]
    np.testing.assert_array_equal(np.concatenate([b["label"] for b in batches]).ravel(), [1, 0, 1])
    np.testing.assert_allclose(np.concatenate([b["dense"] for b in batches]).ravel(), [3.5, 1, 2])
    keys = np.concatenate([b["ids"] for b in batches]).ravel()
    assert keys[0] == keys[2] != keys[1]  # the same string, the same key


def test_a_bad_line_is_an_error_naming_the_file_and_line(tmp_path):
    (tmp_path / "bad.csv").write_text("clicked,price,user\n1,3.5,alice\n1,notanumber,bob\n")
    main = oar.Program()
    with oar.program_guard(main, oar.Program()):
        cols = [oar.data("label", [1]), oar.data("dense", [1]), oar.data("ids", [1], "int64")]
        main.set_train_feed(format="csv", files=[str(tmp_path / "bad.csv")], skip_header=True,
                            columns=cols, batch_size=8, label="clicked", dense="price",
                            sparse="user")
    with pytest.raises(oar.Error, match=r"bad\.csv.*3"):
        list(oar.FeedReader(main))
