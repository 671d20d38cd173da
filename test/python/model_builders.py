"""The fixtures' models (test/fixtures/*/fixture.json) built with oar's Python layers, call for
call as api/recipes.cc builds them, and the same models from the C++ recipes."""

import json
import os

import oar

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def fixture_names():
    return sorted(n for n in os.listdir(FIXTURES)
                  if os.path.exists(os.path.join(FIXTURES, n, "fixture.json")))


def read_fixture(name):
    with open(os.path.join(FIXTURES, name, "fixture.json")) as f:
        return json.load(f)


def _optimizer(spec):
    o = spec["optimizer"]
    decay = spec.get("weight_decay", 0.0)
    clip = spec.get("clip_global_norm", 0.0)
    sched = spec.get("lr_schedule")
    lr = o["lr"]
    if sched:
        t = sched["type"]
        args = dict(warmup_steps=sched.get("warmup_steps", 0))
        if t == "step":
            lr = oar.optimizer.lr.StepDecay(lr, sched["decay_steps"], sched["decay_rate"], **args)
        elif t == "exponential":
            lr = oar.optimizer.lr.ExponentialDecay(lr, sched["decay_steps"], sched["decay_rate"],
                                                   **args)
        elif t == "cosine":
            lr = oar.optimizer.lr.CosineDecay(lr, sched["decay_steps"], **args)
        else:
            lr = oar.optimizer.lr.LinearWarmup(lr, args["warmup_steps"])
    reg = oar.regularizer.L2Decay(decay) if decay else None
    gc = oar.clip.GradientClipByGlobalNorm(clip) if clip else None
    kind = o["type"]
    if kind == "sgd":
        return oar.optimizer.SGD(lr, regularization=reg, grad_clip=gc)
    if kind == "momentum":
        return oar.optimizer.Momentum(lr, o.get("momentum", 0.9), regularization=reg, grad_clip=gc)
    if kind == "adam":
        return oar.optimizer.Adam(lr, o.get("beta1", 0.9), o.get("beta2", 0.999),
                                  o.get("epsilon", 1e-8), regularization=reg, grad_clip=gc)
    if kind == "adamw":
        return oar.optimizer.AdamW(lr, decay or 0.01, o.get("beta1", 0.9), o.get("beta2", 0.999),
                                   o.get("epsilon", 1e-8), grad_clip=gc)
    raise ValueError(kind)


def build_in_python(spec):
    """(main, startup, loss) of the fixture's model, from oar.layers."""
    main, startup = oar.Program(spec.get("seed", 1)), oar.Program()
    classify = spec["loss"] == "softmax_with_cross_entropy"
    with oar.program_guard(main, startup):
        if spec["model"] == "lenet":
            x = oar.data("img", [1, 28, 28])
            c1 = oar.layers.conv2d(x, 6, 5, 1, 0, act="relu")
            p1 = oar.layers.pool2d(c1, 2, "max", 2)
            c2 = oar.layers.conv2d(p1, 16, 5, 1, 0, act="relu")
            p2 = oar.layers.pool2d(c2, 2, "max", 2)
            pred = oar.layers.fc(p2, spec["out"])
        else:
            x = oar.data("img" if classify else "x", [None, spec["in"]])
            h = x
            norm = spec.get("norm", "none")
            for size in spec.get("hidden", []) if spec["model"] == "mlp" else []:
                if norm == "none":
                    h = oar.layers.fc(h, size, act=spec["act"])
                else:
                    h = oar.layers.fc(h, size, bias_attr=False if norm == "batch" else None)
                    h = (oar.layers.batch_norm(h, act=spec["act"]) if norm == "batch"
                         else oar.layers.layer_norm(h, act=spec["act"]))
            pred = oar.layers.fc(h, spec["out"])
        if classify:
            label = oar.data("label", [1], dtype="int64")
            cost = oar.layers.softmax_with_cross_entropy(pred, label)
        else:
            label = oar.data("y", [spec["out"]])
            cost = oar.layers.square_error_cost(pred, label)
        loss = oar.layers.mean(cost)
        if classify:
            oar.add_metric(oar.layers.accuracy(pred, label))
        oar.add_prediction(oar.layers.softmax(pred) if classify else pred)
        _optimizer(spec).minimize(loss)
    return main, startup, loss


def build_from_recipe(spec):
    """The same model from the C++ recipe (oar-model's), with no data feed."""
    o = spec["optimizer"]
    settings = dict(model=spec["model"], in_=spec.get("in", 784), out=spec["out"],
                    loss=spec["loss"], optimizer=o["type"], lr=o["lr"],
                    seed=spec.get("seed", 1), batch_size=spec["batch_size"],
                    norm=spec.get("norm", "none"),
                    clip_global_norm=spec.get("clip_global_norm", 0.0))
    for key in ("momentum", "beta1", "beta2", "epsilon"):
        if key in o:
            settings[key] = o[key]
    if "hidden" in spec:
        settings["hidden"] = spec["hidden"]
    if "act" in spec:
        settings["act"] = spec["act"]
    if "weight_decay" in spec:
        settings["weight_decay"] = spec["weight_decay"]
    if "lr_schedule" in spec:
        s = spec["lr_schedule"]
        settings["lr_schedule"] = oar.recipes.LrSchedule(
            s["type"], s.get("warmup_steps", 0), s.get("decay_steps", 1), s.get("decay_rate", 1.0))
    return oar.recipes.build(**settings)
