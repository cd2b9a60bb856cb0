"""TensorBoard with tftrace's tab: `python -m tftrace.tensorboard.main --logdir L` (what `tftrace tensorboard` runs)."""

from __future__ import annotations

import sys


def plugins() -> list:
    """TensorBoard's plugins, its installed ones included, and tftrace's tab once. An installed tftrace
    brings the tab through its entry point already; a checkout run from source (PYTHONPATH) does not."""
    from tensorboard import default

    from tftrace.tensorboard.plugin import PLUGIN_NAME, TftracePlugin
    found = default.get_plugins()
    if not any(getattr(p, "plugin_name", None) == PLUGIN_NAME for p in found):
        found.append(TftracePlugin)
    return found


def main() -> None:
    """As `tensorboard.main.run_main`, with `plugins()`."""
    from absl import app
    from tensorboard import main_lib, program
    from tensorboard.plugins import base_plugin
    main_lib.global_init()
    server = program.TensorBoard(plugins=plugins())
    try:
        app.run(server.main, flags_parser=server.configure)
    except base_plugin.FlagsError as e:
        print(f"Error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
