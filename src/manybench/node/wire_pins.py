"""The wire's fingerprint at PROTOCOL_VERSION (node/fingerprint.py): each wire type's
fields and types, nested, one line a type. tests/node/test_wire_fingerprint.py fails when the
code's fingerprint is not VERSION's: a change to the wire bumps PROTOCOL_VERSION and pins it
here (`python -m manybench.node.fingerprint > src/manybench/node/wire_pins.py` writes this
file, the version it replaces kept in EARLIER as a digest; it refuses a change without a
bump; `--again` replaces the pin of a version not yet released)."""
from __future__ import annotations


VERSION = 9
PINNED: dict[str, str] = {
    'Info': '',
    'NodeInfo': 'node: str; slots: int; cpus: tuple[Cpu, ...]; echo_port: int; host: str; '
                'pid: int; machine: str; inventory: dict[str, open]; refused: str',
    'Cpu': 'id: int; core: int; package: int; numa: int',
    'Renew': 'seconds: float',
    'MeasureNoise': 'seconds: float',
    'NoiseFloor': 'floor: NoiseReading | None',
    'Start': 'run: str; node: str; slots: int; default_dir: str; keep: bool; telemetry_s: float; '
             'protocol: int; secret: str; host: str; lease_s: float; kill_grace_s: float',
    'DirectOffer': 'port: int; tls: bool',
    'Started': 'dispatch_ns: int; direct: DirectOffer | None; why: str',
    'Hello': 'nonce: bytes; proof: bytes; protocol: int',
    'SlotPlace': 'slot: int; cpu: int; affinity: tuple[int, ...]; spin: bool; settle_ns: int; '
                 'mems: tuple[int, ...] | None',
    'Assignment': 'place: SlotPlace; rank: int',
    'WireTask': 'name: str; command: tuple[str, ...] | None; shell: bool; timeout: float | None; '
                'metrics: dict[str, str]; parse: str | None; env: dict[str, str]; '
                'launcher: str | None; launcher_args: tuple[str, ...]; '
                'startup_timeout: float | None',
    'WirePhase': 'index: int; task: WireTask; kernel: str; variant: str; rep: int; workers: int; '
                 'params: dict[str, open]; env: dict[str, str]; wrap: tuple[str, ...] | None; '
                 'vars: dict[str, str]; resources: dict[str, ResourceIds | dict[int, str]]; '
                 'members: tuple[WirePhase, ...]; sample: float',
    'Prepare': 'phase: WirePhase; work: list[Assignment]',
    'Prepared': 'failed: SlotResults; published: dict[int, Published]; notices: list[str]',
    'SlotResults': 'slot: list[int]; start_ns: list[int]; end_ns: list[int]; '
                   'elapsed_ns: list[int]; armed_ns: list[int]; ops: list[int]; bytes: list[int]; '
                   'status: list[str]; error: dict[int, str]; '
                   'metrics: dict[int, dict[str, float | str]]; '
                   'hist: dict[int, dict[int, int] | None]; extra: dict[int, dict[str, open]]; '
                   'samples: dict[int, list[list[int] | list[float]]]; sample_unit: dict[int, str]',
    'Connect': 'peers: dict[int, Published]',
    'Connected': 'failed: SlotResults',
    'Run': 't0_ns: int; work: list[Assignment]; phase: WirePhase | None',
    'Finished': 'results: SlotResults; notices: list[str]; telemetry: list[TelemetryRow]',
    'TelemetryRow': 'run: str; node: str; t_ns: int; interval_s: float; phase_id: int | None; '
                    'cpu_user_pct: float; cpu_system_pct: float; cpu_iowait_pct: float; '
                    'mem_used_bytes: int; mem_cached_bytes: int; disk_read_bps: float; '
                    'disk_write_bps: float; disk_busy_pct: float; net_rx_bps: float; '
                    'net_tx_bps: float',
    'RunCommands': 'commands: list[list[str]]; env: dict[str, str]; timeout: float | None; '
                   'dirs: list[str] | dict[str, str]; programs: list[str]',
    'CommandOutput': 'argv: list[str]; exit_status: int; stdout: str; stderr: str; '
                     'started_ns: int; ended_ns: int; timed_out: bool',
    'CommandsDone': 'outputs: list[CommandOutput]; before: dict[str, open]; after: dict[str, open]',
    'TakeSnapshot': 'dirs: list[str] | dict[str, str]; programs: list[str]',
    'SnapshotTaken': 'data: dict[str, open]',
    'Ping': '',
    'Close': '',
    'Abort': '',
    'Failed': 'error: str',
    'Result': 'start_ns: int; end_ns: int; elapsed_ns: int; armed_ns: int; ops: int; bytes: int; '
              'status: str; error: str; metrics: dict[str, float | str]; '
              'hist: dict[int, int] | None; extra: dict[str, open]; '
              'samples: list[tuple[int, float]]; sample_unit: str',
    'SlotContext': 'run: str; node: str; slot: int; rank: int; workers: int; cpu: int; '
                   'scratch: str; shared: str; phase: int; rep: int; task: str; variant: str; '
                   'env: dict[str, str]; spec: WireTask | None; kernel: str; '
                   'wrap: list[str] | None; vars: dict[str, str]; settle_ns: int; root: str; '
                   'job_key: str; host: str',
    'SlotPrepare': 'phase: WirePhase; ctx: SlotContext; place: SlotPlace',
    'SlotConnect': 'peers: dict[int, Published]',
    'SlotGo': 't0_ns: int; prepare: SlotPrepare | None',
    'SlotPing': '',
    'SlotExit': '',
    'SlotReady': 'info: Published | None; child: int',
    'SlotConnected': '',
    'SlotDone': 'result: Result',
    'SlotPong': 'pid: int',
    'Member': 'host: str; port: int; tls: bool; echo_port: int',
    'Group': 'members: dict[str, Member]',
    'Grouped': 'failed: dict[str, str]',
    'Forward': 'frames: dict[str, bytes]',
    'Forwarded': 'replies: dict[str, bytes]; lost: dict[str, str]',
    'SyncClocks': '',
    'Clocks': 'offsets: dict[str, tuple[int, int]]; lost: dict[str, str]',
    'Challenge': 'nonce: bytes; use: str',
    'Welcome': 'proof: bytes',
    'NoiseReading': 'seconds: float; cpus: int; method: str; stall_ns: int; gaps_100us: int; '
                    'gaps_1ms: int; lost_share: float; wake_p50_ns: int; wake_p99_ns: int; '
                    'wake_max_ns: int; per_cpu: list[CpuNoise]',
    'ResourceIds': 'ids: list[str]; env: str',
    'Published': 'host?: str; port?: int; role?: str; path?: str; group_port?: int; node?: str; '
                 'cpus?: str; abort_port?: int',
    'CpuNoise': 'cpu?: int; reads?: int; gap_max_ns?: int; gaps_10us?: int; gaps_100us?: int; '
                'gaps_1ms?: int; lost_ns?: int; wakes?: int; wakes_late?: int; wake_p50_ns?: int; '
                'wake_p99_ns?: int; wake_max_ns?: int; pin_errno?: int',
    '(packed apart)': 'Assignment; WirePhase; WireTask',
}
# each earlier version's fingerprint, as its digest (fingerprint.digest)
EARLIER: dict[int, str] = {
    7: '94735a2de5c362f2',
    8: '416e496445d9ca02',
}
