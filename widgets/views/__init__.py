"""Views: functions ``view(snapshot, events) -> go.Figure`` for the player, plus whole-run comparisons.

Key_Shared (docs/guide/key-shared-selectors.md): `hash_range_view`, `ring_view`, `sticky_view`; `compare_figure` and
`scale_figure` compare the selectors on many keys. Later views plug into the same player protocol.
"""

from pulsarlab_widgets.views.compare import compare_figure, scale_figure, selector_metrics
from pulsarlab_widgets.views.hash_range import hash_range_view
from pulsarlab_widgets.views.ring import ring_view
from pulsarlab_widgets.views.sticky import sticky_view

__all__ = ["compare_figure", "hash_range_view", "ring_view", "scale_figure", "selector_metrics", "sticky_view"]
