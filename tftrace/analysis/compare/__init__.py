"""Two runs compared: step times with a significance test, the speed gate, breakdown, op and memory deltas."""
