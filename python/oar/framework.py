"""Programs and vars: a main program owns the C++ ModelBuilder that writes it and its startup
program, as api/layers.h does, so a model built here is the program the C++ API builds."""

import contextlib

from . import _oar


class Program:
    """A main or a startup program. A new main program gets its ModelBuilder (seeded by
    `random_seed`) when its first layer is built; the startup program paired with it by
    program_guard is that builder's startup. A program loaded or cloned holds its own desc."""

    def __init__(self, random_seed=1, _desc=None):
        self._seed = random_seed
        self._builder = None
        self._desc = _desc
        self._main = None      # a startup program: the main program it belongs to
        self._startup = None   # a main program: its startup program

    # --- what it is -------------------------------------------------------------------------
    @property
    def random_seed(self):
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        if self._builder is not None:
            raise _oar.Error("random_seed must be set before the program's first layer")
        self._seed = seed

    def builder(self):
        """The ModelBuilder layers are added with (a main program only)."""
        if self._main is not None:
            raise _oar.Error("layers are added to a main program, not to its startup program")
        if self._desc is not None:
            raise _oar.Error("this program was loaded or cloned: it takes no new layers")
        if self._builder is None:
            self._builder = _oar.ModelBuilder(self._seed)
        return self._builder

    @property
    def desc(self):
        """The program itself (_oar.ProgramDesc), as the executor runs it."""
        if self._main is not None:
            return self._main.builder().startup
        if self._desc is not None:
            return self._desc
        return self.builder().main

    def startup_program(self):
        """The startup program paired with this main program (made on first use)."""
        if self._startup is None:
            _pair(self, Program())
        return self._startup

    # --- reading it -------------------------------------------------------------------------
    def global_block(self):
        return _Block(self)

    def var(self, name):
        return Variable(self, name)

    def serialize(self):
        """The program's bytes (deterministic: the same model gives the same bytes)."""
        return self.desc.serialize()

    def to_string(self):
        """Protobuf text, as oar-show prints it."""
        return self.desc.text()

    __str__ = to_string

    def clone(self, for_test=False):
        """A copy; with for_test, forward ops only, batch norm on its running statistics and no
        dropout (what evaluation and serving run)."""
        desc = self.desc.clone_for_test() if for_test else self.desc.clone()
        return Program(self._seed, _desc=desc)

    def save(self, path):
        """Writes the program: binary for .pb, text for .pbtxt."""
        self.desc.save(path)

    def set_train_feed(self, **feed):
        """Where training reads rows from (files of a format oar reads); FeedReader reads it."""
        self.builder().set_train_feed(**_feed_columns(feed))

    def set_test_feed(self, **feed):
        self.builder().set_test_feed(**_feed_columns(feed))

    def __eq__(self, other):
        return isinstance(other, Program) and self.serialize() == other.serialize()

    __hash__ = object.__hash__


class _Block:
    def __init__(self, program):
        self.program = program

    def var(self, name):
        if not self.program.desc.has_var(name):
            raise _oar.Error(f'the program has no var "{name}"')
        return Variable(self.program, name)

    @property
    def ops(self):
        return self.program.desc.op_types()

    def all_parameters(self):
        d = self.program.desc
        return [Variable(self.program, n) for n in d.var_names() if d.var_persistable(n)]


class Variable:
    """A var of a program, by name: what layers take and return, what fetch_list lists."""

    def __init__(self, program, name):
        self.program = program
        self.name = name

    @property
    def shape(self):
        return tuple(self.program.desc.var_dims(self.name))

    @property
    def dtype(self):
        return self.program.desc.var_dtype(self.name)

    @property
    def persistable(self):
        return self.program.desc.var_persistable(self.name)

    def __repr__(self):
        return f"Variable({self.name}, {self.dtype}{list(self.shape)})"


def _pair(main, startup):
    if main._startup is startup:
        return
    if main._startup is not None or startup._main is not None:
        raise _oar.Error("each main program has one startup program, and each startup one main")
    if startup._builder is not None or startup._desc is not None:
        raise _oar.Error("a startup program must be new (Program()) when it is paired")
    main._startup, startup._main = startup, main


def _feed_columns(feed):
    if "columns" in feed:
        feed["columns"] = [c.name if isinstance(c, Variable) else c for c in feed["columns"]]
    return feed


_main = Program()
_startup = Program()
_pair(_main, _startup)


def default_main_program():
    return _main


def default_startup_program():
    return _startup


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers built inside go to `main_program`, their initialisers to its startup program."""
    global _main, _startup
    if startup_program is not None:
        _pair(main_program, startup_program)
    saved = _main, _startup
    _main, _startup = main_program, main_program.startup_program()
    try:
        yield
    finally:
        _main, _startup = saved


def current_builder():
    return _main.builder()


def name_of(x):
    """The var name of a Variable (or of a name already)."""
    return x.name if isinstance(x, Variable) else x


def wrap(name):
    return Variable(_main, name)


def data(name, shape, dtype="float32", lod_level=0):
    """An input. `shape` is a row's dims (fluid.layers.data) or the whole shape with None or -1
    first for the batch (fluid.data); either way the var is [-1, row dims...]."""
    if lod_level:
        raise _oar.Error(f"data {name}: oar has no LoD tensors (lod_level={lod_level})")
    shape = list(shape)
    if shape and shape[0] in (None, -1):
        shape = shape[1:]
    if any(d is None or d < 0 for d in shape):
        raise _oar.Error(f"data {name}: only the first dim may be the batch (None or -1), got {shape}")
    return wrap(current_builder().data(name, shape, dtype))


def add_metric(var):
    """A var the program reports (oar-executor evaluates it on the test set)."""
    current_builder().add_metric(name_of(var))


def add_prediction(var):
    """A var a served model returns (oar-export keeps what computes it)."""
    current_builder().add_prediction(name_of(var))


def load_program(path):
    """A program read from a .pb or .pbtxt file, verified."""
    return Program(_desc=_oar.ProgramDesc.load(path))
