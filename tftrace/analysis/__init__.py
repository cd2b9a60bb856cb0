"""Pure analyses: Trace in, frozen results out."""
