"""pulsarlab's widget layer: the step/play/back player and the plotly views it drives.

Reads the model only through snapshots and the event log (docs/architecture.md); never imported by
``pulsarlab``. Import the player from ``pulsarlab_widgets.player`` and the views from ``pulsarlab_widgets.views``.
"""
