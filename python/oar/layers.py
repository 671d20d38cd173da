"""Layers in the names of Paddle's fluid.layers, each one call of api/layers.h's ModelBuilder on
the current main program. Each takes and returns Variables (names work too)."""

from . import _oar
from .framework import current_builder, name_of, wrap, data  # noqa: F401 (data: fluid.layers.data)
from .initializer import resolve


def _act(act):
    return act or ""


def fc(input, size, act=None, param_attr=None, bias_attr=None, name=None):
    """act(input · W + b); bias_attr=False leaves out b (a batch_norm after it shifts)."""
    _no_name("fc", name)
    return wrap(current_builder().fc(name_of(input), size, _act(act), resolve(param_attr),
                                     bias_attr is not False))


def embedding(input, size, is_sparse=False, is_distributed=False, param_attr=None, dtype="float32"):
    """Rows of a [vocab, width] table (size=[vocab, width]) picked by int64 ids. is_sparse: the
    gradient is the rows read; is_distributed: the table lives on the pservers."""
    if dtype != "float32":
        raise _oar.Error(f"embedding: tables are float32, got dtype {dtype}")
    vocab, width = size
    return wrap(current_builder().embedding(name_of(input), vocab, width, is_sparse,
                                            is_distributed, resolve(param_attr)))


def batch_norm(input, act=None, momentum=0.9, epsilon=1e-5, is_test=False):
    if is_test:
        raise _oar.Error("batch_norm(is_test=True): use program.clone(for_test=True) instead")
    return wrap(current_builder().batch_norm(name_of(input), _act(act), momentum, epsilon))


def layer_norm(input, act=None, epsilon=1e-5):
    return wrap(current_builder().layer_norm(name_of(input), _act(act), epsilon))


def dropout(x, dropout_prob):
    return wrap(current_builder().dropout(name_of(x), dropout_prob))


def conv2d(input, num_filters, filter_size, stride=1, padding=0, act=None):
    return wrap(current_builder().conv2d(name_of(input), num_filters, filter_size, stride,
                                         padding, _act(act)))


def pool2d(input, pool_size, pool_type="max", pool_stride=2):
    return wrap(current_builder().pool2d(name_of(input), pool_size, pool_type, pool_stride))


def concat(input, axis=1):
    return wrap(current_builder().concat([name_of(x) for x in input], axis))


def reshape(x, shape):
    return wrap(current_builder().reshape(name_of(x), list(shape)))


def split(input, num_or_sections, dim=1):
    if isinstance(num_or_sections, int):
        total = wrap(name_of(input)).shape[dim]
        if total < 0 or total % num_or_sections:
            raise _oar.Error(f"split: dim {dim} of {name_of(input)} ({total}) does not split "
                             f"into {num_or_sections} equal parts")
        num_or_sections = [total // num_or_sections] * num_or_sections
    return [wrap(n) for n in current_builder().split(name_of(input), list(num_or_sections), dim)]


def _elementwise(kind):
    def op(x, y, axis=-1):
        return wrap(current_builder().elementwise(kind, name_of(x), name_of(y), axis))
    op.__name__ = kind
    return op


elementwise_add = _elementwise("elementwise_add")
elementwise_sub = _elementwise("elementwise_sub")
elementwise_mul = _elementwise("elementwise_mul")


def scale(x, scale=1.0):
    return wrap(current_builder().scale(name_of(x), scale))


def reduce_sum(input, dim=None, keep_dim=False):
    if dim is None:
        dim = list(range(len(wrap(name_of(input)).shape)))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return wrap(current_builder().reduce_sum(name_of(input), dims, keep_dim))


def hash_mod(input, buckets):
    """ids mod buckets: keys (hashes) folded into a table of `buckets` rows."""
    return wrap(current_builder().id_mod(name_of(input), buckets))


def _activation(act):
    def op(x):
        return wrap(current_builder().activation(name_of(x), act))
    op.__name__ = act
    return op


relu = _activation("relu")
sigmoid = _activation("sigmoid")
tanh = _activation("tanh")
softmax = _activation("softmax")


def square_error_cost(input, label):
    return wrap(current_builder().square_error_cost(name_of(input), name_of(label)))


def softmax_with_cross_entropy(logits, label):
    return wrap(current_builder().softmax_with_cross_entropy(name_of(logits), name_of(label)))


def cross_entropy(input, label):
    return wrap(current_builder().cross_entropy(name_of(input), name_of(label)))


def sigmoid_cross_entropy_with_logits(x, label):
    return wrap(current_builder().sigmoid_cross_entropy_with_logits(name_of(x), name_of(label)))


def mean(x):
    return wrap(current_builder().mean(name_of(x)))


def accuracy(input, label):
    """The share of rows whose highest score is the label (scores or probabilities)."""
    return wrap(current_builder().accuracy(name_of(input), name_of(label)))


def auc(input, label, num_thresholds=4095):
    """The streaming ROC AUC of positive-class probabilities [N, 1] against a 0/1 label."""
    return wrap(current_builder().auc(name_of(input), name_of(label), num_thresholds))


def _no_name(layer, name):
    if name is not None:
        raise _oar.Error(f"{layer}(name=...): oar names layers itself (fc_0, fc_1, ...)")
