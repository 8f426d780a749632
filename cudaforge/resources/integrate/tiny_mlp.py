"""A small MLP classifier head: two linear layers with ReLU between them and a softmax over the classes.

The `cudaforge integrate` recipe of the `tiny` suite: its ReLU and Softmax kernels patched into a model whose shapes
they were not written for (hidden 1536, 1000 classes). Built from its sizes with random weights, nothing downloaded.
"""
import torch
import torch.nn as nn

batch_size = 192
d_in = 768
d_hidden = 1536
n_classes = 1000


class Model(nn.Module):
    def __init__(self, d_in, d_hidden, n_classes):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, n_classes)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        return self.softmax(self.fc2(self.act(self.fc1(x))))


def get_inputs():
    return [torch.randn(batch_size, d_in)]


def get_init_inputs():
    return [d_in, d_hidden, n_classes]


# module class -> the task whose best kernel replaces every instance (a glob over task ids), and the task's sizes
# taken from the instance (attribute paths)
PATCHES = {
    "ReLU": {"task": "*/level1/*_ReLU"},
    "Softmax": {"task": "*/level1/*_Softmax"},
}
