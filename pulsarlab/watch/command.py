"""``pulsarlab watch``: the command-line watch, its options (pulsar-admin's names for token and TLS) and its loop.

Models no Pulsar class. Reads the token from ``--token-file``, ``$PULSARLAB_ADMIN_TOKEN`` or ``--token`` (the
last shows in the process list: the help says so), builds the `AdminClient` and `Watcher`, redraws the text view
after each poll (in place on a terminal, appended otherwise), and saves the recording to ``--out`` every
`SAVE_EVERY` polls and when the watch ends (``--duration``, ``--polls`` or Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from pulsarlab.snapshot.frame import Frame
from pulsarlab.watch.admin_client import AdminClient, AdminError, TlsOptions
from pulsarlab.watch.options import TOKEN_ENV, add_arguments
from pulsarlab.watch.terminal import CLEAR, render
from pulsarlab.watch.watcher import Watcher, WatchState

SAVE_EVERY = 50  # polls between two saves of --out (each save rewrites the file atomically)


def read_token(args: argparse.Namespace) -> str | None:
    if args.token_file:
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as e:
            raise ValueError(f"--token-file {args.token_file}: {e.strerror or e}") from None
        if token.startswith("token:"):  # pulsar-admin's --auth-params form
            token = token[len("token:") :]
        if not token:
            raise ValueError(f"--token-file {args.token_file} is empty")
        return token
    return args.token or os.environ.get(TOKEN_ENV) or None


def run(args: argparse.Namespace, out: Path | None, stream: TextIO | None = None) -> int:
    """The watch of ``args`` until it ends; 0 when it ran, 1 when the broker refused before any good poll.

    ``stream`` defaults to the ``sys.stdout`` of the call, not of the import (which may have been redirected since)."""
    stream = stream if stream is not None else sys.stdout
    if args.duration is not None and args.duration <= 0:
        raise ValueError(f"--duration must be > 0 s, got {args.duration}")
    if args.polls is not None and args.polls < 1:
        raise ValueError(f"--polls must be >= 1, got {args.polls}")
    client = AdminClient(
        args.admin_url,
        token=read_token(args),
        tls=TlsOptions(args.ca_file, args.skip_verify),
        timeout_s=args.timeout,
    )
    watcher = Watcher(client, args.topic, args.interval)
    redraw = stream.isatty() and not args.plain

    def show(frame: Frame, state: WatchState) -> None:
        text = render(state, f"{args.topic} on {client.url}")
        stream.write((CLEAR + text + "\n") if redraw else (text + "\n" + "-" * 40 + "\n"))
        stream.flush()
        if out is not None and (frame.index + 1) % SAVE_EVERY == 0:
            watcher.save(out)

    watcher.listen(show)
    status = 0
    try:
        watcher.run(args.duration, args.polls)
    except AdminError as e:
        print(f"pulsarlab watch: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        pass
    if status == 0 and watcher.good_polls == 0:
        print(f"pulsarlab watch: no poll of {client.url} succeeded", file=sys.stderr)
        status = 1
    if out is not None and watcher.frames:
        watcher.save(out)
        print(
            f"pulsarlab watch: recorded {len(watcher.frames)} poll(s) to {out} (pulsarlab.load_timeline reads it)",
            file=sys.stderr,
        )
    return status


__all__ = ["SAVE_EVERY", "TOKEN_ENV", "add_arguments", "read_token", "run"]
