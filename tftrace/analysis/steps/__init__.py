"""Steps: where each one starts and ends in any trace, what a run was doing, and how its steps ran (start-up, the host ahead of the device, cut short)."""
