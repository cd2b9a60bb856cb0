"""The fix for each cause, per loop (keras: fit/evaluate; custom: your training loop; predict),
in one place so that no two causes ever share a paragraph. A straggler's fix depends on the part
of its step that makes it slow, not on the loop; memory findings' on what holds the memory."""

from __future__ import annotations

from tftrace.analysis.owners.knowledge import BY_KEY

_FIXES = {
    "retracing": {
        "any": ("Stop the retracing: pass tensors, not Python numbers or objects, to `{fn}` (a changing "
                "learning rate or flag as `tf.constant(...)` or a `tf.Variable`), give it an `input_signature` "
                "with `None` for dimensions that vary, or `@tf.function(reduce_retracing=True)`; and create the "
                "tf.function once, outside the loop."),
    },
    "recompilation": {
        "torch_xla": ("PyTorch/XLA compiles the step's graph again whenever the graph it traces changes: a new input "
                      "shape (the last, smaller batch; sequences of varying length), a Python number that changes each "
                      "step baked into the graph, or Python control flow on tensor values. Keep shapes fixed "
                      "(`DataLoader(..., drop_last=True)`, pad or bucket sequence lengths), pass numbers that change as "
                      "device tensors, and keep `if`/`for` on tensor values out of the step; `PT_XLA_DEBUG_LEVEL=2` "
                      "prints each compile and what caused it, and `torch_xla.debug.metrics.metrics_report()` counts "
                      "them (`UncachedCompile`)."),
        "any": ("XLA compiles `{fn}` again for every new input shape: give it a few fixed shapes: pad "
                "sequences to a fixed length or to a few bucket lengths "
                "(`tf.data.Dataset.bucket_by_sequence_length`), batch with `drop_remainder=True`, and keep "
                "other arguments as tensors; or leave `jit_compile` off for inputs whose shapes keep changing."),
    },
    "xla_cpu": {
        "any": ("On a CPU, compile the step without XLA: `model.compile(..., jit_compile=False)` (Keras turns XLA "
                "off by default on machines with no GPU or TPU). TensorFlow's own CPU kernels (oneDNN) run small and "
                "medium models without XLA's per-step runtime; XLA pays off on GPUs and TPUs, and for steps of many "
                "small elementwise ops it can fuse."),
    },
    "eager": {
        "keras": ("The model runs eagerly (`run_eagerly=True`, often left on from debugging): compile it with "
                  "`model.compile(..., run_eagerly=False)` (the default) so each step runs as one graph."),
        "custom": ("Your step runs eagerly, op by op: decorate the training step with `@tf.function` (create it "
                   "once, outside the loop) so each step runs as one graph."),
        "predict": ("Run the model as a graph: `model.predict_on_batch(x)`, or wrap the call in `tf.function` "
                    "(`fast = tf.function(lambda x: model(x, training=False))`) and reuse it across calls."),
    },
    "small_steps": {
        "keras": ("Each step does too little work for its fixed cost: run many steps per call with "
                  "`model.compile(..., steps_per_execution={spe})`, and raise the batch size{batch} if the model "
                  "and memory allow."),
        "custom": ("Each step does too little work for its fixed cost: run several steps inside one "
                   "`tf.function` call (loop over `tf.range(n)` inside it), or raise the batch size{batch}."),
        "predict": ("Each call does too little work for its fixed cost: predict many inputs in one call (a larger "
                    "batch{batch}), or call a reused `tf.function` of the model."),
    },
    "callback": {
        "any": ("`{cb}.{hook}` runs on every batch: do its work every N batches or in `on_epoch_end`, keep "
                "values as tensors (no `.numpy()` or numpy per batch), or move it to a background thread."),
    },
    "stall": {
        "checkpoint": ("Save less often: `ModelCheckpoint(..., save_freq='epoch')` or a larger step count, "
                       "`save_weights_only=True`, and `save_best_only=True` where it fits; for frequent checkpoints, "
                       "write them from a background thread (`tf.train.CheckpointManager` + a thread)."),
        "evaluation": ("Evaluate less often inside training: `validation_freq=N` in fit, or a smaller validation "
                       "set (`validation_steps`)."),
        "callback": ("`{cb}.{hook}` does heavy work every few steps: do it less often, or off the training thread."),
        "startup": ("Each fit, evaluate or predict call builds its input iterator (and runs its first step's "
                    "set-up) once, before its first batch: over an epoch of many steps it is paid once, so run "
                    "more steps per call rather than many short calls; to profile the steady state, start the "
                    "capture a few steps in (TraceCallback's default window, or "
                    "`TensorBoard(profile_batch=(3, 8))`)."),
        "other": ("Some steps do much more work than the others (periodic saving, logging, evaluation or "
                  "garbage collection): find what runs in them (the steps listed), and do it less often."),
    },
    "step_python": {
        "torch_xla": ("Your loop runs Python between calls of `{fn}` on every step: keep step results on the device "
                      "(read them with `xm.add_step_closure(fn)`, which runs after `xm.mark_step()`), log every N steps, "
                      "and prepare batches with `MpDeviceLoader`."),
        "any": ("Your loop runs Python between calls of `{fn}` on every step: keep values as tensors (no "
                "`.numpy()`, `float()` or `print` of tensors per step), compute metrics inside the tf.function "
                "(`keras.metrics` objects), log every N steps, and move numpy work into the graph or out of the "
                "loop."),
        "torch": ("Your loop runs Python between calls of `{fn}` on every step: keep results as tensors (no "
                  "`.item()`, `.cpu()`, `float()` or `print` of them per step), accumulate metrics on the device "
                  "and read them every N steps, and prepare the next batch in DataLoader workers."),
        "jax": ("Your loop runs Python between calls of `{fn}` on every step: keep step results as `jax.Array`s "
                "(no `float()`, `np.asarray` or `print` of them per step), compute metrics inside the jitted step, "
                "log every N steps, and make the next batch while the device runs this one (JAX dispatches "
                "asynchronously: do the host's work before reading anything back)."),
    },
    "between_calls": {
        "torch_xla": ("Overlap it with the device: feed batches through `torch_xla.distributed.parallel_loader."
                      "MpDeviceLoader(loader, device)` (it copies the next batches while this step runs and marks each "
                      "step), keep per-step Python (logging, `.item()`) off the step's path, and compile the step once "
                      "with `torch_xla.compile(...)` so the host stops retracing it."),
        "torch": ("Overlap it with the model: load and preprocess batches in DataLoader workers (`num_workers`), "
                  "keep per-step logging and `.item()` calls off the step's path (log every N steps), and cache what "
                  "does not change."),
        "predict": ("Overlap it with the model: load and preprocess in a tf.data pipeline (`Dataset.map(..., "
                    "num_parallel_calls=tf.data.AUTOTUNE)` + `prefetch`) or a background thread, process several "
                    "items per call, and cache what does not change."),
        "jax": ("Overlap it with the device: JAX dispatches jitted calls asynchronously, so prepare the next batch "
                "(in a background thread for heavy loading) before reading anything back from this step, process "
                "several items per call, and cache what does not change."),
    },
    "gaps": {
        "keras": ("Work between steps stalls the model: trim per-batch callbacks, log less often, and raise "
                  "`steps_per_execution` so Keras' loop runs once per many steps."),
    },
    "user_region": {
        "any": ("This Python work sits on every step's path: batch it (one call for many items), move it into a "
                "tf.data pipeline (`map(..., num_parallel_calls=tf.data.AUTOTUNE)` + `prefetch`) so it overlaps "
                "the model, or cache its result."),
    },
    "per_call_overhead": {
        "predict": ("model.predict() wraps its input in a new tf.data dataset and iterator on every call, which "
                    "costs far more than the model itself on one item or a small batch. Call the compiled model "
                    "directly: `model.predict_on_batch(x)`, or a `tf.function`-wrapped call you reuse "
                    "(`fast = tf.function(lambda x: model(x, training=False))`); or collect many inputs into one "
                    "batch and call predict once. (A bare `model(x, training=False)` runs op by op in Keras 3: "
                    "cheaper than predict, dearer than a compiled call.)"),
        "keras": ("{call}() builds a new tf.data pipeline and iterator on every call: call it once over the whole "
                  "dataset (more epochs or steps per call) instead of once per batch, or use `train_on_batch` / "
                  "`test_on_batch` for single batches."),
    },
    "predict_python": {
        "predict": ("The same fix as for predict's pipeline: call the model directly (`model(x, training=False)` "
                    "or a reused `tf.function`), or predict many inputs in one call."),
    },
    "host_overhead": {  # captured: by TraceCallback (it already samples Python); cpu: no accelerator (no XLA advice)
        "torch_xla": ("This host time inside the steps runs no device work: PyTorch/XLA tracing the step's ops into "
                      "its lazy graph, hashing and looking the graph up, and the Python around it. Compile the step once "
                      "(`torch_xla.compile(step_fn)`), feed batches with `MpDeviceLoader`, and raise the batch size."),
        "any": ("This host time inside the steps runs no op: the framework's own work around them (function calls, "
                "iterators, argument handling) or Python this capture did not record. Capture with "
                "`tftrace.TraceCallback` (it samples Python, naming the functions behind it), and cut the per-step "
                "cost with fewer calls: `steps_per_execution` in fit, one compiled step (`jit_compile=True`, with "
                "input shapes that stay the same from batch to batch), larger batches."),
        "cpu": ("This host time inside the steps runs no op: the framework's own work around them (function calls, "
                "iterators, argument handling) or Python this capture did not record. Capture with "
                "`tftrace.TraceCallback` (it samples Python, naming the functions behind it), and cut the per-step "
                "cost with fewer calls: `steps_per_execution` in fit, larger batches."),
        "captured": ("This host time inside the steps runs no op and no Python the sampler saw: TensorFlow's own "
                     "work around the ops (its executor, function calls, iterators). Cut the per-step cost with "
                     "fewer calls: `steps_per_execution` in fit, one compiled step (`jit_compile=True`, with input "
                     "shapes that stay the same from batch to batch), larger batches."),
        "captured_cpu": ("This host time inside the steps runs no op and no Python the sampler saw: TensorFlow's own "
                         "work around the ops (its executor, function calls, iterators). Cut the per-step cost with "
                         "fewer calls: `steps_per_execution` in fit, larger batches."),
        "torch": ("This host time inside the steps runs no op: PyTorch's own dispatch around the ops (the Python "
                  "and C++ of each `aten::` call, autograd's bookkeeping) or Python this capture did not record. "
                  "Run fewer, larger ops: compile the model (`torch.compile(model)`; on Keras' torch backend "
                  "`model.compile(..., jit_compile=True)`), use the optimizer's `foreach=True` or `fused=True` "
                  "updates, and raise the batch size."),
    },
    "dataloader": {
        "serial": ("The DataLoader loads each batch in the training process, so {waits} for it every step: "
                   "load in worker processes, `DataLoader(..., num_workers=N)` (N up to the CPU cores per GPU; "
                   "`persistent_workers=True` keeps them across epochs, `prefetch_factor` sets how many batches each "
                   "worker readies ahead){pin}."),
        "workers": ("The DataLoader's {workers} still do not keep up, so {waits} for them: raise `num_workers` (up to the CPU "
                    "cores per GPU) and `prefetch_factor`, make the Dataset's `__getitem__` and transforms cheaper "
                    "(decode once, smaller images, GPU-side augmentation){pin}."),
    },
    "dispatch": {
        "torch_xla": ("The host traces each op of the step into PyTorch/XLA's lazy graph, every step: compile the step "
                      "once and replay it (`torch_xla.compile(step_fn)`, or `torch.compile(model, backend=\"openxla\")`), "
                      "keep one `xm.mark_step()` per iteration, and raise the batch size so each run does more."),
        "torch": ("Each op the step runs costs PyTorch and the CUDA runtime a few microseconds to launch, whatever "
                  "its size: run fewer, larger kernels. Compile the model with `torch.compile(model)` (fuses "
                  "elementwise ops), capture the step in CUDA graphs (`torch.compile(mode=\"reduce-overhead\")`), "
                  "use the optimizer's `foreach=True` or `fused=True` updates, and raise the batch size."),
        "any": ("Each op the step runs costs the runtime a few microseconds to schedule, whatever its size: run "
                "fewer, larger ops. Compile the step with XLA (`model.compile(..., jit_compile=True)`, where input "
                "shapes stay the same from batch to batch: each new shape recompiles), which fuses them (the "
                "optimizer's per-weight updates among them), run several steps per call (`steps_per_execution`), "
                "and use a larger batch so each op does more work."),
        "keras_cpu": ("Each op the step runs costs the runtime a few microseconds to schedule, whatever its size: "
                      "run fewer, larger ops: a larger batch so each op does more work, fewer and wider layers, and "
                      "several steps per call (`steps_per_execution`) for the loop's own share. (XLA, "
                      "`jit_compile=True`, fuses ops but on a CPU its runtime often costs more than it saves.)"),
        "custom": ("Each op the step runs costs the runtime a few microseconds to schedule, whatever its size: run "
                   "fewer, larger ops. Compile the step with XLA (`@tf.function(jit_compile=True)`, where input "
                   "shapes stay the same), which fuses them, loop over several batches inside one tf.function call, "
                   "and use a larger batch."),
        "custom_cpu": ("Each op the step runs costs the runtime a few microseconds to schedule, whatever its size: "
                       "run fewer, larger ops: a larger batch so each op does more work, and several batches inside "
                       "one tf.function call. (XLA, `jit_compile=True`, fuses ops but on a CPU its runtime often "
                       "costs more than it saves.)"),
        "jax": ("Each dispatched op costs the host time, whatever its size: put the whole step under one "
                "`jax.jit` so XLA fuses it, and give each call more work (a larger batch, several steps per call "
                "with `jax.lax.scan`)."),
    },
    "recompilation_jax": {
        "any": ("`jax.jit` compiles `{fn}` again for each new input shape, dtype or static argument: pad batches to "
                "one shape or a few bucket sizes (mask the padding), drop the last partial batch, and pass values "
                "that change as array arguments rather than `static_argnums`; "
                "`jax.config.update('jax_log_compiles', True)` prints each compile and what triggered it."),
    },
    "per_call_jax": {
        "predict": ("Each `model.predict()` call builds a data adapter, an epoch iterator and a callback list before "
                    "its one batch: predict many inputs in one call, or call the model through one jitted function "
                    "you reuse (`fn = jax.jit(lambda tv, ntv, x: model.stateless_call(tv, ntv, x)[0])`, called with "
                    "`[v.value for v in model.trainable_variables]` and the non-trainable ones), or "
                    "`model.predict_on_batch(x)`."),
        "any": ("Each `{call}()` call on one batch pays Keras' per-call set-up (data adapter, iterator, callbacks): "
                "call it once over many batches (more steps per epoch), or use `train_on_batch` / `test_on_batch`."),
    },
    "eager_jax": {
        "keras": ("Compile without `run_eagerly=True` (the default is False): Keras on JAX then jits the whole "
                  "train_step, and a step is one compiled call instead of one call per operation."),
        "custom": ("Wrap the whole training step in `jax.jit` (parameters, optimizer state and batch as arguments; "
                   "Python settings as `static_argnums`), create it once outside the loop, and call it every step: "
                   "one compiled call instead of one dispatch per operation."),
    },
    "precision": {
        "keras": ("Train in mixed precision: `keras.mixed_precision.set_global_policy('mixed_bfloat16')` before "
                  "building the model (weights stay float32, matmuls and convolutions run in bfloat16)."),
        "jax": ("Run the matmuls in bfloat16: cast parameters and inputs with `.astype(jnp.bfloat16)` inside the "
                "step (keep a float32 master copy of the parameters for the update), or use a bfloat16 policy "
                "(`jmp`, Flax's `dtype=jnp.bfloat16`)."),
        "custom": ("Use mixed precision: `keras.mixed_precision.set_global_policy('mixed_bfloat16')` (or "
                   "'mixed_float16' with loss scaling on GPUs without bfloat16)."),
    },
    "precision_cpu": {
        "any": ("Compute in float32 on a CPU: `keras.mixed_precision.set_global_policy('float32')` before building "
                "the model (or drop `dtype='mixed_float16'` from the layers). Keep mixed precision for GPUs with "
                "tensor cores, where it pays."),
    },
    "device_sync": {
        "custom": ("`{read}` on a step's result makes the host wait until the device has finished that step, every "
                   "step, so JAX's asynchronous dispatch can no longer run the host's next work (making the batch, "
                   "Python) while the device computes. Keep step results on the device: append the `jax.Array` losses "
                   "to a list and read them every N steps or at the end (`jax.device_get(losses)`), and call "
                   "`block_until_ready()` only where you time the loop."),
        "keras": ("Keras converts each batch's logs (loss and metrics) to numbers on the main thread, waiting for the "
                  "device, when a callback overrides `on_train_batch_end` (or `on_batch_end`, `on_test_batch_end`, "
                  "`on_predict_batch_end`). Move per-batch work to `on_epoch_end` or to every N batches, set "
                  "`self.async_safe = True` on callbacks that only read the logs (Keras then converts them in a "
                  "background thread), or raise `steps_per_execution` so the logs are read once per many batches."),
    },
    "python_function": {
        "any": ("`{fn}()` runs on the host on every step while the model waits for it: make its result once and "
                "reuse it, vectorise it (numpy over whole batches, or `jax.numpy` inside the jitted step), or move it "
                "off the step's path: prepare the next batch in a background thread (a `keras.utils.PyDataset` with "
                "`workers`, or `jax.device_put` of batch n+1 while step n runs), and log every N steps."),
    },
    "layer": {  # by what the layer is (layer_fix picks): its levers, never what it already is
        "conv": ("Layer {name} is where the model's compute goes (its top op: {top}): fewer filters, a smaller "
                 "kernel or stride-2 downsampling before it, or a depthwise-separable convolution "
                 "(`SeparableConv2D`); on a GPU or TPU, mixed precision."),
        "separable": ("Layer {name} is already a depthwise-separable convolution (its top op: {top}): its cost is "
                      "its filters and its input's size: fewer filters, a smaller `depth_multiplier`, or downsample "
                      "before it; on a GPU or TPU, mixed precision."),
        "dense": ("Layer {name} is where the model's compute goes (its top op: {top}): fewer units, a narrower input "
                  "(pool or project before it), or on a GPU or TPU, mixed precision."),
        "output": ("Layer {name} makes the model's output (its top op: {top}): its width is what the model "
                   "predicts, so what it costs is set by what it gets: a narrower layer before it (fewer units or "
                   "filters, or pool before it), or on a GPU or TPU, mixed precision."),
        "weightless": ("Layer {name} has no weights (its top op: {top}): what it costs scales with the tensor it "
                       "gets, so make that smaller (downsample or pool earlier, fewer channels in the layer before "
                       "it), or drop it where the model does without it."),
        "recurrent": ("Layer {name} runs its recurrence step by step (its top op: {top}): keep it on the fused "
                      "kernel (default activations, `recurrent_dropout=0`, `unroll=False`), use fewer units or "
                      "shorter sequences, or a convolution or attention in its place."),
        "flatten": ("Layer {name} flattens a large feature map (its top op: {top}), and the layer after it pays for "
                    "its size: `GlobalAveragePooling2D` in its place shrinks both."),
        "embedding": ("Layer {name} (its top op: {top}) gathers rows of its table and, in training, scatters their "
                      "gradients: a smaller table or output dimension, or an optimizer with sparse updates."),
        "any": ("Layer {name} is where the model's compute goes (its top op: {top}): make it smaller, replace it with "
                "a cheaper kind of layer, or run it in mixed precision on GPU/TPU."),
    },
    "optimizer": {
        "torch": ("The optimizer's update runs several small ops for every weight each step: use its multi-tensor or "
                  "fused form (`torch.optim.AdamW(params, foreach=True)`, or `fused=True` on GPU), compile the step "
                  "(`torch.compile`; on Keras' torch backend `model.compile(..., jit_compile=True)`), train fewer "
                  "weights (freeze layers you do not fine-tune), or use a simpler optimizer (SGD with momentum) where "
                  "it trains as well."),
        "torch_xla": ("The optimizer's update touches every weight every step inside the step's graph: train fewer "
                      "weights (freeze what you do not fine-tune), use a simpler optimizer (SGD with momentum) where it "
                      "trains as well, and under mixed precision the `torch_xla.amp.syncfree` optimizers, which skip "
                      "the host sync on inf checks."),
        "any": ("The optimizer's update reads and writes every weight and its slots each step, in several small ops "
                "per weight: use a plain update where it trains as well (SGD with momentum moves 5 of the 7 "
                "weight-sized arrays Adam moves per weight), train fewer weights (freeze layers you do not "
                "fine-tune), or fuse the updates with XLA (`model.compile(..., jit_compile=True)`, where input shapes stay the same from "
                "batch to batch: each new shape recompiles)."),
        "cpu": ("The optimizer's update reads and writes every weight and its slots each step, in several small ops "
                "per weight: use a plain update where it trains as well (SGD with momentum moves 5 of the 7 "
                "weight-sized arrays Adam moves per weight), or train fewer weights (freeze layers you do not "
                "fine-tune). (XLA fuses the updates, but on a CPU its runtime often costs a step more than it saves.)"),
    },
    "optimizer_sparse": {  # an embedding table's gradient holds only the rows the batch looked up
        "any": ("The optimizer's update writes every row of the embedding tables each step, though a batch's "
                "gradient holds only the rows it looked up: plain SGD (`keras.optimizers.SGD(learning_rate=...)`, "
                "no momentum) updates only those rows, where it trains as well; or train fewer weights (a smaller "
                "table or output dimension, or a frozen pretrained table)."),
    },
    "optimizer_jax": {
        "any": ("The optimizer's update touches every weight every step: train fewer weights (freeze what you do "
                "not fine-tune), or use a simpler optimizer (SGD with momentum) where it trains as well."),
    },
    "optimizer_extras": {
        "any": ("The optimizer's settings add a pass over every weight each step ({extras}): turn off what the "
                "training does not need (`use_ema=False`, no `clipnorm` / `global_clipnorm`, constraints only where "
                "they matter), or apply them less often (`ema_overwrite_frequency`, a constraint in a callback "
                "every N steps)."),
    },
    "metric": {
        "any": ("Metric {name} is computed on every training batch: compile it out of `fit` and compute it in "
                "`evaluate` or a callback's `on_epoch_end`, make it cheaper (an AUC with fewer "
                "`num_thresholds`), or run more steps per call (`steps_per_execution`) so its update is batched."),
    },
    "regularizer": {
        "any": ("The penalty of {name} is computed, and differentiated, over the whole weight every step: use a "
                "smaller coefficient-free alternative (the optimizer's `weight_decay`, one multiply per weight in the "
                "update, no gradient pass), regularize fewer or smaller weights, or drop it where validation shows "
                "no gain."),
    },
    "loss": {
        "any": ("The loss takes a real share of the step: use the `from_logits=True` form of cross-entropies "
                "(one fused op), keep the targets in the dtype the loss needs (no casts per step), and avoid "
                "Python-side work inside a custom loss."),
    },
    "transfer": {
        "any": ("Copies dominate: keep data on the device, prefetch to the device, and avoid `.numpy()` inside "
                "steps."),
    },
    "collective": {
        "any": "Collectives dominate: larger per-replica batches or gradient accumulation to amortize all-reduce.",
    },
    "code": {
        "any": ("The ops {name} makes hold the step: that is the model's arithmetic. Do less of it (smaller "
                "matrices, fewer passes), in a cheaper precision (bfloat16 on GPU/TPU), or fuse what is left "
                "(one jitted function around the whole step)."),
    },
    "outside_layers": {
        "torch_xla": ("These device ops carry no scope in PyTorch/XLA's HLO metadata: capture with `XLA_HLO_DEBUG=1` "
                      "(each op's torch op and Python line go into the metadata) and wrap the model's parts in "
                      "`torch_xla.debug.profiler.Trace('name')` so their owner is named; then make that work cheaper."),
        "any": ("These ops run in the step function outside every layer, loss and optimizer scope (a custom "
                "train_step's own work, a metric, a weight penalty, sample weighting): name them with "
                "`tf.name_scope('...')` or capture with `tftrace.TraceCallback`, whose sidecar records the "
                "program's configuration, so their owner is known; then make that work cheaper or run it less often."),
        "captured": ("These ops run in the step function outside every layer, loss and optimizer scope, and the "
                     "program's configuration names no metric or penalty that makes them (a custom train_step's own "
                     "work, sample weighting): name them with `tf.name_scope('...')` to see what they are, then make "
                     "that work cheaper or run it less often."),
        "torch": ("These ops run outside every module's call and outside the loss's and the optimizer's: the step's "
                  "own work (moving and casting the batch, metrics, logging). Name a part with "
                  "`torch.profiler.record_function('...')` to see its owner, and capture with `tftrace.trace()` (or "
                  "`torch.profiler.profile(with_stack=True)`) so each module's call is named; then make that work "
                  "cheaper or run it less often."),
    },
    "graph_break": {
        "torch_xla": ("Reading a value inside the step (`loss.item()`, `.cpu()`, `print(tensor)`, a Python `if` on a "
                      "tensor) cuts PyTorch/XLA's graph there: the device runs the part before it, the host waits for "
                      "the value, then traces and runs the rest as a second graph, every step. Keep values on the device "
                      "and read them after the step: `xm.add_step_closure(lambda: print(loss.item()))` runs once "
                      "`xm.mark_step()` has run the whole graph; log every N steps; keep `xm.mark_step()` (or "
                      "`torch_xla.step()`) once per iteration, at its end. `PT_XLA_DEBUG_LEVEL=1` names the Python line "
                      "behind each extra execution."),
    },
    "lazy_tracing": {
        "torch_xla": ("PyTorch/XLA traces the step's ops into a graph on the host, op by op in Python, every step, and "
                      "the device waits between runs: compile the step once and replay it (`torch_xla.compile(step_fn)`, "
                      "or `torch.compile(model, backend=\"openxla\")` for the model), feed batches through "
                      "`MpDeviceLoader` so the copy overlaps the step, and give each step more work (a larger batch, "
                      "gradient accumulation inside one graph)."),
    },
    "device_idle": {
        "torch_xla": ("The host cannot keep the TPU fed: compile the step once (`torch_xla.compile(step_fn)`), feed "
                      "batches through `MpDeviceLoader`, keep `.item()`, `.cpu()` and printing out of the step (read "
                      "values with `xm.add_step_closure`), and call `xm.mark_step()` once per iteration, at its end."),
        "torch": ("The host cannot keep the GPU fed: take per-step syncs off the step's path (`.item()`, `.cpu()`, "
                  "printing tensors, `torch.cuda.synchronize()`), compile the model (`torch.compile`) or capture the "
                  "step in CUDA graphs, and load data in DataLoader workers."),
        "any": ("The host cannot keep the device fed: run the step as one compiled function (`jit_compile=True`), "
                "raise `steps_per_execution`, prefetch to the device, and move per-step Python (logging, .numpy(), "
                "metrics) off the step's path."),
    },
    "straggler": {  # by the part of the straggler's step that makes it slow
        "input_torch": "Its input pipeline is slower than the others': check its data source and disk or network, "
                       "give its DataLoader more workers (`num_workers`, `prefetch_factor`), and shard the data evenly "
                       "(`DistributedSampler`).",
        "input": "Its input pipeline is slower than the others': check its data source and disk or network, give its "
                 "tf.data pipeline more parallelism (`num_parallel_calls`, `prefetch`), and shard the data evenly.",
        "compute": "It computes more or on slower hardware: check for uneven shards (batch size per worker), a "
                   "slower or shared machine, or a device running other work.",
        "collectives": "It waits longest in collectives: a peer or the network is slow; check the interconnect and "
                       "the other hosts' steps.",
        "host_overhead": "Its host does more per step (Python, logging, launches) or is shared with other "
                         "processes: check its CPU load and per-step Python work.",
        "idle": "It spends longer between steps (callbacks, checkpointing, logging on this host only?): move that "
                "work off the step path or to one chief worker.",
    },
    # Memory findings, by what holds the memory at the peak; a headroom's by the call (train: the
    # learning rate scales with the batch).
    "near_capacity": {
        "activations": ("activations kept for the backward pass hold the most: lower `batch_size` (they scale with it), "
                        "train in mixed precision (`keras.mixed_precision.set_global_policy('mixed_float16')` halves "
                        "them), or recompute them in the backward pass (`tf.recompute_grad`) instead of keeping them"),
        "long_lived": ("long-lived tensors hold the most (weights and optimizer slots, allocated before the window "
                       "where the trace cannot name them): use a smaller layer{layer}, mixed precision, or an optimizer "
                       "with fewer slots (Adam keeps two per weight, SGD with momentum one)"),
        "any": ("lower `batch_size`, train in mixed precision (`keras.mixed_precision.set_global_policy('mixed_float16')`), "
                "or shrink the largest tensors listed"),
    },
    "fragmentation": {
        "any": ("free memory is split into pieces too small for the largest tensors, so an allocation can fail with "
                "room to spare; on GPUs try `TF_GPU_ALLOCATOR=cuda_malloc_async`, or keep tensor sizes steady across "
                "steps (fixed shapes, `drop_remainder=True` in `batch`)"),
    },
    "headroom": {
        "any": ("steps are bound by per-step host overhead, which a larger batch pays once for more samples: raise "
                "`batch_size` up to about {shown} (activations and gradients grow with it, the rest does not; "
                "{fill} of capacity planned)"),
        "train": ("steps are bound by per-step host overhead, which a larger batch pays once for more samples: raise "
                  "`batch_size` up to about {shown} (activations and gradients grow with it, the rest does not; "
                  "{fill} of capacity planned), and scale the learning rate with it"),
    },
    "h2d": {
        "torch_xla": ("Each batch is sent to the device inside the step: load through `torch_xla.distributed."
                      "parallel_loader.MpDeviceLoader(loader, device)`, which copies the next batches in the background "
                      "while this step runs; send smaller dtypes (uint8 images, bfloat16) and cast on the device."),
        "torch": ("Copy batches from pinned memory without blocking: `DataLoader(..., pin_memory=True)` and "
                  "`batch.to(device, non_blocking=True)`, so the copy overlaps the previous step's kernels; send "
                  "smaller dtypes (uint8 images, normalized on the GPU)."),
        "any": ("Prefetch to the device (`tf.data.experimental.prefetch_to_device` or a distribution strategy's "
                "dataset), use pinned host memory, and send smaller dtypes (uint8 images, cast on the device)."),
        "jax": ("Each step copies its batch from host memory while the model waits. Put the data on the device "
                "before the loop when it fits (one `jax.device_put`, then index batches "
                "inside the jitted step), or copy batch n+1 while step n runs (`jax.device_put` it before calling the "
                "step, e.g. flax's `jax_utils.prefetch_to_device(iterator, 2)`); send smaller dtypes (uint8 images, "
                "bfloat16) and cast inside the jitted step; pass Python scalars as arrays made once, not new each call."),
        "keras_jax": ("Keras on JAX copies every batch from host memory: send smaller dtypes (uint8 images, "
                      "normalised by a `Rescaling` layer inside the model), keep a dataset that fits on the device "
                      "as a `jax.Array`, and raise `steps_per_execution` so copies and steps are batched together."),
    },
}


def fix_table() -> dict[str, dict[str, str]]:
    """Every cause's fix per loop, as written here (placeholders such as `{fn}` unfilled): for the
    skill's reference pages (skills/generate.py)."""
    return {cause: dict(texts) for cause, texts in _FIXES.items()}


def pipeline_table() -> tuple[tuple[str, str, str], ...]:
    """The tf.data fixes: (the work they are for, what the pipeline must lack, the fix)."""
    return _PIPELINE


def fix_for(cause: str, loop: str = "any", **names) -> str:
    """The fix paragraph for a cause in a loop (falling back to the cause's general one); the
    knowledge table's causes (owners/knowledge.py) by framework (`loop` "jax" or any other)."""
    if cause not in _FIXES and cause in BY_KEY:
        return BY_KEY[cause].fixes["jax" if loop == "jax" else "tensorflow"]
    texts = _FIXES[cause]
    text = texts.get(loop) or texts.get("any") or next(iter(texts.values()))
    return text.format(**names) if names else text


# tf.data fixes by what the pipeline spends its work on; `needs` is what the pipeline must lack.
_PIPELINE = (
    ("python", "", "The pipeline runs Python (a generator via from_generator / PyFunc) one batch at a time under "
                   "the GIL. Move the augmentation into tf.data (`ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE)`) "
                   "or Keras preprocessing layers, or use a `keras.utils.PyDataset` with `workers>1` (and "
                   "`use_multiprocessing=True`)."),
    ("read parse decode", "cache", "The same records are read, decompressed, parsed and decoded again every epoch: "
                                   "`.cache()` the dataset right after the decoding map (in memory, or "
                                   "`cache(filename)` on local disk when it does not fit), before shuffling and "
                                   "random augmentation."),
    ("read", "parallel", "Read files in parallel: `TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)` or "
                         "`interleave(..., num_parallel_calls=tf.data.AUTOTUNE)`."),
    ("map map_ops", "parallel", "Run the map in parallel: `map(fn, num_parallel_calls=tf.data.AUTOTUNE)`."),
    ("map map_ops", "batched", "Vectorize the map: `batch()` first and map over whole batches, so each op runs "
                               "once per batch instead of once per element."),
    ("map map_ops", "cache", "When the map's output is the same every epoch (no random augmentation in it), "
                             "`.cache()` right after it so it runs once; otherwise make the map function cheaper, "
                             "or move its work into the model (Keras preprocessing layers run with the model's ops)."),
    ("read parse decode", "", "Store the data ready to use (decoded, uncompressed, in fewer larger files) or "
                              "preprocess it once offline."),
    ("", "prefetch", "End the pipeline with `.prefetch(tf.data.AUTOTUNE)` so it overlaps the model."),
)


def pipeline_fix(kinds: list[str], has: dict[str, bool]) -> str:
    """The fix for a pipeline whose work goes mainly to `kinds`, never advising what it has; where
    calling the map function per element is most of the work (`has["calls"]`), vectorising first."""
    out = []
    table = sorted(_PIPELINE, key=lambda entry: entry[1] != "batched") if has.get("calls") else _PIPELINE
    for wanted, needs, text in table:
        if wanted and not set(wanted.split()) & set(kinds):
            continue
        if needs and has.get(needs):
            continue
        if wanted == "read parse decode" and not needs and any("cache()" in t for t in out):
            continue
        out.append(text)
    return " ".join(out) or "Add `.prefetch(tf.data.AUTOTUNE)` at the end of the pipeline and parallelize its slowest stage."


# Layer classes by the levers their fix names (the sidecar's class; else the top op's category).
LAYER_KINDS = {"separable": ("SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D"),
                "conv": ("Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"),
                "dense": ("Dense", "EinsumDense"),
                "recurrent": ("LSTM", "GRU", "SimpleRNN", "Bidirectional", "RNN", "ConvLSTM2D"),
                "embedding": ("Embedding",), "flatten": ("Flatten",)}


def layer_fix(name: str, cls: str, params: int, category: str, top: str, output: bool = False) -> str:
    """The fix of a layer that holds much of the step, by what the layer is: a class's own levers,
    for a layer without weights (pooling, reshaping, activation) the size of its input, and for a
    dense or convolution layer that makes the model's output (its width is the task's) the layer
    before it."""
    kind = next((k for k, classes in LAYER_KINDS.items() if cls in classes), "")
    if output and kind in ("conv", "dense"):
        kind = "output"
    if not kind and params == 0:
        kind = "weightless"
    if not kind and not cls:
        kind = {"convolution": "conv", "matmul": "dense"}.get(category, "any")
    return fix_for("layer", kind or "any", name=name, top=top)
