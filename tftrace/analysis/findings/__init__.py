"""Diagnosis: one detector per cause of lost time, each naming its cause, evidence, fix and projection."""

from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.registry import diagnose, memory_findings

__all__ = ["Context", "diagnose", "memory_findings"]
