"""The `pulsarlab watch` command's options (pulsar-admin's token and TLS flags) and the watch's pacing limits.

Models no Pulsar class. Kept apart from the watcher so that building the `pulsarlab` command's parser (which every
`pulsarlab serve` start does) imports no HTTP, diagnosis or view-model code.
"""

from __future__ import annotations

import argparse

MIN_INTERVAL_S = 0.5
DEFAULT_INTERVAL_S = 2.0
DEFAULT_TIMEOUT_S = 10.0
TOKEN_ENV = "PULSARLAB_ADMIN_TOKEN"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", metavar="TOPIC", help="a topic, tenant/namespace (all its topics) or a regex of topics")
    p.add_argument("--admin-url", required=True, help="the broker's web service, http://HOST:8080 or https://HOST:8443")
    p.add_argument(
        "--interval",
        type=float,
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help=f"seconds between polls (default {DEFAULT_INTERVAL_S:g}, at least {MIN_INTERVAL_S:g})",
    )
    p.add_argument("--duration", type=float, default=None, metavar="S", help="stop after S seconds")
    p.add_argument("--polls", type=int, default=None, metavar="N", help="stop after N polls")
    p.add_argument("--out", default=None, metavar="FILE", help="record the watch as a timeline file (.plt.jsonl.gz)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--token-file", default=None, metavar="FILE", help="a file holding the JWT (AuthenticationToken)")
    p.add_argument(
        "--token",
        default=None,
        help=f"the JWT itself (visible in the process list: prefer --token-file or ${TOKEN_ENV})",
    )
    p.add_argument(
        "--tls-trust-cert-path", "--ca-file", dest="ca_file", default=None, metavar="CA.pem", help="CA certificates"
    )
    p.add_argument(
        "--tls-allow-insecure",
        "--skip-verify",
        dest="skip_verify",
        action="store_true",
        help="accept any TLS certificate (as pulsar-admin --tls-allow-insecure)",
    )
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="seconds one GET may take (default 10)"
    )
    p.add_argument("--plain", action="store_true", help="append each poll's view instead of redrawing the screen")


__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_TIMEOUT_S", "MIN_INTERVAL_S", "TOKEN_ENV", "add_arguments"]
