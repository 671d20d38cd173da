"""Optimizers in Paddle's names: minimize(loss) appends the backward ops and one update op per
parameter (api/optimizer.h), with weight decay, clipping by global norm and a learning-rate
schedule (oar.optimizer.lr)."""

from . import _oar
from .framework import current_builder, name_of, wrap
from .clip import GradientClipByGlobalNorm
from .regularizer import L2Decay


class _Schedule:
    def __init__(self, learning_rate, type, warmup_steps=0, decay_steps=1, decay_rate=1.0):
        self.learning_rate = float(learning_rate)
        self.schedule = _oar.LrSchedule(type, warmup_steps, decay_steps, decay_rate)


class lr:  # noqa: N801 (a namespace, as paddle.optimizer.lr)
    """Schedules over t, the updates made before this one (docs/training.md has the formulas)."""

    @staticmethod
    def StepDecay(learning_rate, decay_steps, decay_rate, warmup_steps=0):
        return _Schedule(learning_rate, "step", warmup_steps, decay_steps, decay_rate)

    @staticmethod
    def ExponentialDecay(learning_rate, decay_steps, decay_rate, warmup_steps=0):
        return _Schedule(learning_rate, "exponential", warmup_steps, decay_steps, decay_rate)

    @staticmethod
    def CosineDecay(learning_rate, decay_steps, warmup_steps=0):
        return _Schedule(learning_rate, "cosine", warmup_steps, decay_steps)

    @staticmethod
    def LinearWarmup(learning_rate, warmup_steps):
        return _Schedule(learning_rate, "constant", warmup_steps)


class Optimizer:
    def __init__(self, make, learning_rate, regularization=None, grad_clip=None):
        schedule = None
        if isinstance(learning_rate, _Schedule):
            learning_rate, schedule = learning_rate.learning_rate, learning_rate.schedule
        self._opt = make(float(learning_rate))
        if regularization is not None:
            if not isinstance(regularization, L2Decay):
                raise _oar.Error("regularization: oar has L2Decay")
            self._opt.set_weight_decay(regularization.coeff)
        if grad_clip is not None:
            if not isinstance(grad_clip, GradientClipByGlobalNorm):
                raise _oar.Error("grad_clip: oar has GradientClipByGlobalNorm")
            self._opt.set_clip_global_norm(grad_clip.clip_norm)
        if schedule is not None:
            self._opt.set_schedule(schedule)

    def minimize(self, loss, startup_program=None, no_grad_set=None):
        """Appends backward and updates for `loss`; returns [(param, grad)] Variables."""
        names = {name_of(v) for v in (no_grad_set or ())}
        pairs = self._opt.minimize(current_builder(), name_of(loss), names)
        return [(wrap(p), wrap(g)) for p, g in pairs]


class SGD(Optimizer):
    def __init__(self, learning_rate, regularization=None, grad_clip=None):
        super().__init__(_oar.SGD, learning_rate, regularization, grad_clip)


class Momentum(Optimizer):
    def __init__(self, learning_rate, momentum, use_nesterov=False, regularization=None,
                 grad_clip=None):
        super().__init__(lambda r: _oar.Momentum(r, momentum, use_nesterov), learning_rate,
                         regularization, grad_clip)


class Adam(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 regularization=None, grad_clip=None):
        super().__init__(lambda r: _oar.Adam(r, beta1, beta2, epsilon), learning_rate,
                         regularization, grad_clip)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (torch.optim.AdamW)."""

    def __init__(self, learning_rate=0.001, weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, grad_clip=None):
        super().__init__(lambda r: _oar.AdamW(r, weight_decay, beta1, beta2, epsilon),
                         learning_rate, None, grad_clip)


class Adagrad(Optimizer):
    def __init__(self, learning_rate, epsilon=1e-6, row_wise=False, regularization=None,
                 grad_clip=None):
        super().__init__(lambda r: _oar.Adagrad(r, epsilon, row_wise), learning_rate,
                         regularization, grad_clip)


SGDOptimizer, MomentumOptimizer, AdamOptimizer, AdagradOptimizer = SGD, Momentum, Adam, Adagrad
