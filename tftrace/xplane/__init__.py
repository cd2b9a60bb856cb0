"""Reading trace files (XSpace protobufs, legacy trace viewer JSON) without TensorFlow."""
