"""The order layer: every device's collective schedule, matched by arrival order as the
runtime matches it, and the hang or garbage that order would cause, found before launch.

Imports the math layer and the public ``hlo`` API only; ``runtime`` and the front ends sit
above it.

- ``analyze(module)`` (SPMD) or ``analyze([(module, devices), ...], device_assignment=...)``
  (MPMD), ``rendezvous="clique"`` or ``"op_id"`` (what meets: ``_cliques.CliqueTable``),
  returns a ``Report``: ``findings`` (``Finding`` with ``type``, ``devices``,
  ``instructions``, ``message``, ``culprits``), ``notes`` and ``schedule(device)``
  (``Arrival`` s of ``Entry`` s: clique, rank, position, iteration, stream, shapes, async
  span, source position).
- ``from_flight_recorder(path)`` reads PyTorch Flight Recorder dumps into the same report
  (devices are global ranks).
- ``chrome_trace(report, devices)`` writes schedules in the Chrome trace event format.
- ``from_profiler_traces(paths)`` reads per-rank PyTorch profiler traces into the same report
  (matched as Flight Recorder dumps are) and the ranks' traces (``RankTrace``, whose
  collectives are numpy columns, ``TraceCollectives``, each row a ``TraceCollective``);
  ``timeline(traces)`` gives each collective's straggler skew and achieved bandwidth
  (``CollectiveTiming``) on clocks aligned by matched collectives, ``merged_trace`` one
  Chrome/Perfetto trace of every rank.
- ``from_logs(paths)`` reads hang logs (torch watchdog, NCCL_DEBUG=INFO, XLA rendezvous
  warnings) into a ``LogReport``: per process group, communicator and rendezvous, who is
  behind and where the ranks first disagree.
- ``triage(paths, rank_devices=None, programs=())`` recognises every file by content (HLO,
  Flight Recorder dumps, traces, logs), reads each kind, compares what the sources say, and
  sets each HLO program beside the dumps and traces rank by rank (``Triage``, its ``joins``:
  ``_join``) and beside the hang logs' sequence numbers (``log_joins``: ``_log_join``);
  ``programs`` (``(file, devices)`` pairs) is an MPMD set, analysed together.
- ``issue_order(module, device, device_assignment=None)``: the collective instructions one
  device issues, in order, as ``_execution`` runs the program for it: each conditional at the
  branch the device takes, each loop for as many iterations as it runs, where the selector
  or condition follows from constants, ``replica-id`` and ``partition-id`` (through fusions,
  calls, tuples, loop-carried values and arithmetic, as XLA emits it); a conditional on data
  at every branch, a loop on data for one iteration, and the result's ``unresolved`` (an
  ``IssueOrder``, a list; the report's ``notes`` too) say which and why.
  ``issue_orders(module, devices=None, ...)`` the same for many devices from one run (an
  ``IssueOrders`` dict); ``Report.schedule(device, taken_only=True)`` is the same order with
  cliques. The runtime's replay (``mt.runtime.issue_order``) and the explorer's order view
  use them.

The layer's modules in the order data flows: ``_program`` (the walk: entries and steps),
``_cliques`` (each entry's groups, interned cliques), ``_execution`` (each device's path and
steps), ``_match`` (the replay by arrival order), ``_classify`` and ``_exchange`` (findings),
``_analyze`` (putting them together), ``_issue``, ``_report``, ``_trace``, ``_flight``; the
runtime's evidence: ``_trace_events``, ``_traces`` and ``_trace_timing`` (profiler traces), ``_logs``, ``_join``
(a program beside the runtime's ranks), ``_log_join`` (a program beside the logs' sequence
numbers), and ``_triage`` over all of them. ``_trace_timing`` prices bandwidth with the topology layer's
``busbw_factor`` (topology reads only the math layer).

A collective whose groups cannot be resolved is refused with ``InvalidArgumentError``, its
``location`` naming the instruction and its line and column.

Finding types: ``deadlock``, ``missing``, ``mismatch``, ``may_diverge``,
``group_disagreement``, ``async_overlap`` (``mt.order.Finding``; the verifier's findings are
``mt.hlo.Finding``). A deadlock between programs over collectives that nothing orders within
a program, and that ``mt.hlo.passes.linearize_collectives`` puts in one order in every
program, says that pass would remove it (``_linearizable``).

>>> import meshtopo as mt
>>> module = mt.hlo.parse_module('''HloModule m, num_partitions=4
... %add (x: f32[], y: f32[]) -> f32[] {
...   %x = f32[] parameter(0)
...   %y = f32[] parameter(1)
...   ROOT %s = f32[] add(%x, %y)
... }
... ENTRY %main (p: f32[8]) -> f32[8] {
...   %p = f32[8]{0} parameter(0)
...   ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=%add
... }
... ''')
>>> report = mt.order.analyze(module)
>>> report.findings
[]
>>> [(a.entry.name, a.clique, a.rank) for a in report.schedule(3)]
[('ar', (2, 3), 1)]
>>> [i.name for i in mt.order.issue_order(module, 3)]
['ar']
"""

from ._analyze import analyze as analyze
from ._cliques import RENDEZVOUS as RENDEZVOUS
from ._entry import FINDING_TYPES as FINDING_TYPES
from ._entry import Arrival as Arrival
from ._entry import Entry as Entry
from ._entry import Finding as Finding
from ._flight import from_flight_recorder as from_flight_recorder
from ._issue import IssueOrder as IssueOrder
from ._issue import IssueOrders as IssueOrders
from ._issue import issue_order as issue_order
from ._issue import issue_orders as issue_orders
from ._logs import CommMember as CommMember
from ._logs import CommStatus as CommStatus
from ._logs import GroupStatus as GroupStatus
from ._logs import LogReport as LogReport
from ._logs import RankStatus as RankStatus
from ._logs import RendezvousWait as RendezvousWait
from ._logs import from_logs as from_logs
from ._report import Report as Report
from ._schedule import Schedule as Schedule
from ._trace import chrome_trace as chrome_trace
from ._trace_timing import CollectiveTiming as CollectiveTiming
from ._trace_timing import Timeline as Timeline
from ._trace_timing import merged_trace as merged_trace
from ._trace_timing import timeline as timeline
from ._traces import RankTrace as RankTrace
from ._traces import TraceCollective as TraceCollective
from ._traces import TraceCollectives as TraceCollectives
from ._traces import from_profiler_traces as from_profiler_traces
from ._triage import Source as Source
from ._triage import Triage as Triage
from ._triage import triage as triage
