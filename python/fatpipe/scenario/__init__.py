"""Scenario files: read, validate, and normalize for the core.

A user writes a scenario in TOML (or passes the same structure as a Python dict) with
quantities as people write them (``"100Mbps"``, ``"40ms"``). :func:`load_scenario` checks
every key and value and returns the *normalized scenario* of ``docs/core-interface.md``:
nodes, simplex links and flows, every quantity an integer in base units (bps, picoseconds,
bytes), every field present.

The package has three layers, so that later steps add shapes, queue disciplines and
congestion-control algorithms by adding entries rather than code paths:

1. **Schema** (:mod:`.schema`, :mod:`.kinds`) -- value kinds (:class:`Rate`,
   :class:`Duration`, :class:`Size`, ...) and containers (:class:`Table`,
   :class:`TableArray`, :class:`Tagged`) made of :class:`Field` entries: key, kind,
   meaning, default and the default's source. Parsing a table checks unknown keys, missing
   keys, types and single-value ranges, and names the field as the user wrote it. The
   reference in ``docs/scenario.md`` is generated from the same entries
   (:mod:`.reference`), so docs, defaults and errors cannot drift.
2. **Registries** -- :data:`SHAPES` (:mod:`.topologies`, built on :mod:`.network`),
   :data:`QUEUE_DISCIPLINES` (:mod:`.queues`), :data:`IMPAIRMENTS` (:mod:`.impairments`),
   :data:`CC_ALGORITHMS` and the presets (:mod:`.congestion`): each entry pairs a table of
   parameters with the function that turns parsed parameters into the core's JSON.
   Impairments are attached to links by name after a shape has built them
   (:func:`attach_impairments`), so every shape has them.
3. **Normalization** -- :func:`load` (:mod:`.document`) builds the network from the shape,
   then the flows (:mod:`.flows`, with :mod:`.tcp` and :mod:`.sources`) and the output
   options (:mod:`.output`), and checks what involves several values (MSS against MTU, stop
   after start, ...).

Every mistake raises :class:`ScenarioError` with one line:
``<field path>: <value> is not allowed: <what is allowed>``.
"""

from __future__ import annotations

from .schema import (  # noqa: F401
    U32_MAX,
    PathLike,
    ScenarioError,
    REQUIRED,
    UNSET,
    Derived,
    Kind,
    Scalar,
    Field,
    Table,
    TableArray,
    Tagged,
)
from .kinds import (  # noqa: F401
    Rate,
    Duration,
    Size,
    Integer,
    Real,
    Boolean,
    Name,
    Choice,
    DurationList,
    SizeList,
)
from .network import (  # noqa: F401
    Network,
    Shape,
    SHAPE_COMMON_KEYS,
)
from .queues import (  # noqa: F401
    QueueDiscipline,
    QUEUE_DISCIPLINES,
)
from .impairments import (  # noqa: F401
    LinkName,
    OutageWindows,
    ImpairmentKind,
    IMPAIRMENTS,
    attach_impairments,
)
from .topologies import (  # noqa: F401
    shape_table,
    DUMBBELL_NODES,
    DUMBBELL_LINKS,
    NodePath,
    SHAPE_LABELS,
    SHAPES,
)
from .congestion import (  # noqa: F401
    Algorithm,
    CC_ALGORITHMS,
    Preset,
    PRESETS,
    RENO_VERSIONS,
    STACK_RECOVERIES,
    cc_name,
    CongestionControlChoice,
    format_presets,
)
from .tcp import (  # noqa: F401
    IPV4_TCP_HEADER_BYTES,
    TIMESTAMPS_OPTION_BYTES,
    InitialWindow,
    rfc3390_initial_window,
)
from .sources import (  # noqa: F401
    IPV4_UDP_HEADER_BYTES,
    UDP_MAX_PAYLOAD_BYTES,
    DOCUMENT_000_REQUEST,
    UDP_MODES,
)
from .flows import (  # noqa: F401
    TCP_ONLY_FLOW_KEYS,
    FlowTable,
)
from .output import (  # noqa: F401
    CapturePoints,
    CAPTURE_SNAPLEN_DEFAULT,
)
from .document import (  # noqa: F401
    SCENARIO,
    Loaded,
    MAX_DEPTH,
    MAX_SCENARIO_BYTES,
    check_depth,
    read_capped,
    read_scenario_bytes,
    read_scenario_file,
    load,
    load_scenario,
)
from .reference import (  # noqa: F401
    REFERENCE_BEGIN,
    REFERENCE_END,
    MODIFIER_KEYS,
    format_algorithms,
    format_reference,
    update_reference,
)

__all__ = [
    "ScenarioError",
    "load_scenario",
    "load",
    "Loaded",
    "read_scenario_file",
    "read_capped",
    "check_depth",
    "MAX_SCENARIO_BYTES",
    "MAX_DEPTH",
    "format_reference",
    "SHAPES",
    "QUEUE_DISCIPLINES",
    "IMPAIRMENTS",
    "CC_ALGORITHMS",
    "attach_impairments",
    "IPV4_TCP_HEADER_BYTES",
    "TIMESTAMPS_OPTION_BYTES",
]
