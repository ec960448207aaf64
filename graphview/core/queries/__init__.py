"""The questions a :class:`~graphview.core.run.Run` answers, one module per kind of question.

The run takes events in (:mod:`graphview.core.run`: a handler per event kind) and keeps its tables;
each module here asks those tables one kind of question, as a part of the run (``run.grad_at(...)``
is :class:`~graphview.core.queries.gradients.GradientLedger`'s):

* :mod:`~graphview.core.queries.outcome`: how the run went (mode, status, why it failed);
* :mod:`~graphview.core.queries.names`: what tensors and modules are called, and where NaN or Inf was sent;
* :mod:`~graphview.core.queries.values`: a tensor's value summary and version at an event;
* :mod:`~graphview.core.queries.gradients`: the gradient ledger, every change of every ``.grad``;
* :mod:`~graphview.core.queries.reachability`: which nodes a backward can run, and why not;
* :mod:`~graphview.core.queries.memory`: saved bytes over the run, peaks, checkpoint estimates;
* :mod:`~graphview.core.queries.info`: the summary ``graphview info`` prints, built from the others.

They read the run's tables and never change them, and name none of the run's types: what they
read of them is a protocol in :mod:`~graphview.core.queries.tables`, so the run builds on the
queries and the queries import nothing of the run.
"""
