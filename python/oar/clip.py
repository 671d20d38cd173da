"""Gradient clipping, as Paddle's GradientClipByGlobalNorm (torch.nn.utils.clip_grad_norm_)."""


class GradientClipByGlobalNorm:
    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)
