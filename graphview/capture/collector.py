"""The collector during a recording: the objects there before it kept out of its full collections.

NOTE [The collector during a recording]
The recorder keeps thousands of small objects a step alive for a while (an entry per tensor, a
finaliser per node and per saved tensor, the dicts torch makes for the nodes' hooks): enough of them
outlive the collector's young generations that every few steps Python runs a full collection, and a
full collection scans every object the program holds: torch's ~300,000, ~180,000 more where the script
imports transformers. A 256-layer MLP (width 64) recorded with graphview.record() spent 42-69 ms a
step in full collections (one of about 250 ms every few steps; the collector's callbacks' timing, 21
steps, three runs); with the objects that were there when the window opened frozen (gc.freeze),
0.7-1.6 ms. GPT-2 tiny (Hugging Face) recorded by the runner paid one of ~210 ms in 20 steps (10.7 ms a
step of a 70-90 ms step); with the script's setup frozen before its first step, none.

Refcounting, and so when a tensor is freed, is unchanged, and objects made during the recording are
collected as before. What the freeze changes: an unreachable reference cycle among the older objects
(an old model dropped inside the recording, if it holds a cycle) waits, where Python's own collections
would have taken it at one of theirs. The program's own ``gc.collect()`` gives everything back to the
collector first (``gc.unfreeze()``) and collects as it would without graphview: a script that frees
memory with ``del old; gc.collect()`` frees it, and the recording sees it go. The end of the recording
gives them back too. A program that froze objects itself, or turned its collector off, is left as it
is; ``gc.unfreeze()`` gives back whatever is frozen, so objects the program froze during the recording
(before a fork, say) are given back too.
"""

from __future__ import annotations

import gc


class OlderObjectsFrozen:
    """``gc.freeze()`` of the objects there now, for a recording (see the NOTE above): given back at
    the program's own ``gc.collect()`` or at :meth:`give_back`, whichever comes first."""

    def __init__(self) -> None:
        self._collect = None  # gc.collect, while this one's stands in for it

    @property
    def frozen(self) -> bool:
        return self._collect is not None

    def freeze(self, over_ours: bool = False) -> bool:
        """Freeze what is there now, unless the program froze objects itself (``over_ours``: what is
        frozen is graphview's own doing, the runner's process's) or its collector is off; whether it froze."""
        if self.frozen or not gc.isenabled() or (gc.get_freeze_count() and not over_ours):
            return False
        gc.freeze()
        self._collect = gc.collect
        gc.collect = self._program_collects
        return True

    def _program_collects(self, *args, **kwargs):
        collect = self._collect or gc.collect
        self.give_back()
        return collect(*args, **kwargs)

    def give_back(self) -> None:
        """``gc.unfreeze()``, and ``gc.collect`` as it was (once; nothing if nothing is frozen)."""
        collect, self._collect = self._collect, None
        if collect is None:
            return
        if gc.collect == self._program_collects:
            gc.collect = collect
        gc.unfreeze()
