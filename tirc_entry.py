"""The `tirc` console script's entry: Ctrl-C in the first seconds, while
torch is still being imported, prints `tirc: interrupted` and exits 2 as it
does later, not a traceback.

It lives outside the `tirc` package because importing anything in the
package first runs `tirc/__init__.py`, which imports torch.
"""

from __future__ import annotations

import signal
import sys

EXIT_ERROR = 2  # tirc.cli.EXIT_ERROR, which is not imported yet


def main() -> int:
    # Torch's C module imports numpy and, when that import fails, carries on
    # without it: a Ctrl-C landing there is swallowed, and numpy is left
    # half-imported (a later `import numpy` fails, or numpy lacks names).
    # The handler notes every Ctrl-C during the imports, so a swallowed one
    # stops tirc too, whatever error it led to.
    seen = []

    def interrupt(signum, frame):
        seen.append(signum)
        raise KeyboardInterrupt

    # Python installs default_int_handler unless SIGINT was ignored when it started.
    ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if ours:
        signal.signal(signal.SIGINT, interrupt)
    try:
        from tirc.cli import main as cli_main
    except KeyboardInterrupt:
        seen.append(signal.SIGINT)
    except Exception:
        if not seen:
            raise
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if seen:
            raise KeyboardInterrupt
        return cli_main()
    except KeyboardInterrupt:
        print("tirc: interrupted", file=sys.stderr)
        return EXIT_ERROR
