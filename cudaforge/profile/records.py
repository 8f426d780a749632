"""The profiler's records, defined below the layers that use them in ``cudaforge/profile_types.py``."""

from cudaforge.profile_types import KernelProfile, MetricValue, ProfileResult, ProfileStatus, Roofline, RuleMessage

__all__ = ["KernelProfile", "MetricValue", "ProfileResult", "ProfileStatus", "Roofline", "RuleMessage"]
