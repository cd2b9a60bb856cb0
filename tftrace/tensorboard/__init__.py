"""tftrace in TensorBoard: summaries written into the logdir (summaries.py), TensorBoard started
with tftrace's tab (serve.py, main.py), and the tab itself (plugin.py and the modules it uses)."""
