"""A linear layer whose output is scaled by a learned vector built as ones, then a ReLU.

For the hack corpus: the evaluator varies the reference's constant tensors as they are built (``eval.vary_parameters``);
a candidate that builds no tensor of the same name, shape and value cannot receive the varied values, so both models
run with their initial ones (the ``parameters_not_varied`` report).
"""
import torch
import torch.nn as nn

batch_size = 16
features = 64


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return torch.relu(self.linear(x) * self.scale)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
