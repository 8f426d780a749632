"""The profiler's records, defined with the other layer-crossing records in ``cudaforge/types.py``."""

from cudaforge.types import KernelProfile, MetricValue, ProfileResult, ProfileStatus, Roofline, RuleMessage

__all__ = ["KernelProfile", "MetricValue", "ProfileResult", "ProfileStatus", "Roofline", "RuleMessage"]
