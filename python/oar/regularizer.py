"""Weight decay, as Paddle's regularizer.L2Decay: coeff · param added to each gradient."""


class L2Decay:
    def __init__(self, coeff=0.0):
        self.coeff = float(coeff)


L2DecayRegularizer = L2Decay
