"""The model attribute each Keras call runs its steps through: what confirm times alone and what
TraceCallback guards (both backends name them alike)."""

STEP_FUNCTIONS = {"fit": "train_function", "evaluate": "test_function", "predict": "predict_function"}
