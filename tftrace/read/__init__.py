"""Reading a run: find its host files (local or remote), read each (XSpace protobufs, legacy trace
viewer JSON, the files saved beside it) into a Trace, without TensorFlow."""
