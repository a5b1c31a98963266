"""Transport parameters. TCP's defaults come from the engine itself (they are the
reference benchmark's: MSS 1460 B, initial window 10 segments, minimum RTO 5 ms, ACK
every segment), so Python, scenario files and Rust can never disagree on them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from isthmus import _core, units
from isthmus.fields import PositiveInt, Size, Strict, Time
from isthmus.wire import deserialised

TRANSPORTS = ("tcp", "dctcp", "cubic", "mptcp")
TransportName = Literal["tcp", "dctcp", "cubic", "mptcp"]
FlowTransportName = Literal["tcp", "dctcp", "cubic", "mptcp", "dcqcn"]
"""Transports a generated flow may use: the TCP family, or DCQCN for RDMA-like traffic."""

_ENGINE = deserialised(_core.tcp_defaults())


def _ps(key: str) -> str:
    return f"{_ENGINE[key]}ps"


class TcpParams(Strict):
    """Parameters of every TCP, DCTCP and MPTCP flow of a simulation (an MPTCP subflow
    is a TCP NewReno sender with these parameters, coupled by LIA)."""

    mss: Size = Field(f"{_ENGINE['mss']}B", description="payload bytes per full segment")
    initial_cwnd: PositiveInt = Field(_ENGINE["initial_cwnd"], description="in segments")
    min_rto: Time = Field(_ps("min_rto"), description="floor of the retransmission timeout")
    max_rto: Time = Field(_ps("max_rto"), description="ceiling of the retransmission timeout")
    initial_rto: Time = Field(_ps("initial_rto"), description="timeout of the SYN")
    rwnd: Size = Field(f"{_ENGINE['rwnd']}B", description="receive window")
    ack_every: PositiveInt = Field(_ENGINE["ack_every"], description="delayed-ACK count")
    delayed_ack_timeout: Time = Field(_ps("delayed_ack_timeout"))
    dctcp_g: Annotated[float, Field(gt=0, le=1)] = Field(
        _ENGINE["dctcp"]["g"], description="DCTCP's EWMA gain for alpha"
    )
    dctcp_initial_alpha: Annotated[float, Field(ge=0, le=1)] = _ENGINE["dctcp"]["initial_alpha"]
    mptcp_subflows: Annotated[int, Field(ge=1, le=16)] = Field(
        8, description="subflows per MPTCP connection (8 fill a k=4 fat-tree, Raiciu 2011)"
    )
    small_queue_time: Time | None = Field(
        _ENGINE["small_queue_time"],
        description="small-queue backpressure: a sender keeps at most this long at its "
        "pacing rate (and at least two packets) waiting at its NIC; None or 0s: off",
    )

    ect_control: bool = Field(
        _ENGINE["ect_control"],
        description="DCTCP marks its SYN, SYN-ACK and pure ACKs ECN-capable (RFC 8257 3.4)",
    )

    sack: bool = Field(
        _ENGINE["sack"], description="selective acknowledgements and SACK-based recovery (RFC 6675)"
    )
    cwnd_validation: bool = Field(
        _ENGINE["cwnd_validation"],
        description="grow cwnd only while it limits the sender (RFC 7661, as Linux does)",
    )
    timestamps: bool = Field(
        _ENGINE["timestamps"],
        description="the timestamps option (RFC 7323): 12 more header bytes a segment",
    )
    slow_start_after_idle: bool = Field(
        _ENGINE["slow_start_after_idle"],
        description="a sender idle longer than its RTO restarts from at most its initial "
        "window when it writes again (RFC 5681 4.1, Linux's tcp_slow_start_after_idle)",
    )

    @classmethod
    def for_profile(cls, profile: str, **overrides) -> TcpParams:
        """The parameters of host profile `profile` ("datacenter" or "linux", see
        `HOST_PROFILES`), with `overrides` on top."""
        if profile not in HOST_PROFILES:
            raise ValueError(
                f"unknown host profile {profile!r}; choose one of {', '.join(HOST_PROFILES)}"
            )
        return cls.model_validate({**HOST_PROFILES[profile], **overrides})

    def as_core(self) -> dict:
        """Every parameter in the engine's base units."""
        return {
            "mss": units.size_bytes(self.mss),
            "initial_cwnd": self.initial_cwnd,
            "min_rto": units.time_ps(self.min_rto),
            "max_rto": units.time_ps(self.max_rto),
            "initial_rto": units.time_ps(self.initial_rto),
            "rwnd": units.size_bytes(self.rwnd),
            "ack_every": self.ack_every,
            "delayed_ack_timeout": units.time_ps(self.delayed_ack_timeout),
            "dctcp": {"g": self.dctcp_g, "initial_alpha": self.dctcp_initial_alpha},
            # "0s" turns it off too (a scenario file cannot write None).
            "small_queue_time": units.time_ps(self.small_queue_time) or None
            if self.small_queue_time is not None
            else None,
            "ect_control": self.ect_control,
            "timestamps": self.timestamps,
            "sack": self.sack,
            "cwnd_validation": self.cwnd_validation,
            "slow_start_after_idle": self.slow_start_after_idle,
        }


HOST_PROFILES: dict[str, dict] = {
    # The reference benchmark's hosts (ARCHITECTURE.md section 6): the engine's defaults.
    "datacenter": {},
    # The Linux hosts the scheme papers measured in Mininet, as far as Isthmus models
    # them (docs/hosts.md gives each value's source). The congestion control is the
    # flow's transport: "cubic" for Linux's default.
    "linux": {
        "initial_cwnd": 10,  # RFC 6928, Linux since 2.6.39
        "min_rto": "200ms",  # TCP_RTO_MIN
        "initial_rto": "1s",  # TCP_TIMEOUT_INIT, RFC 6298
        "ack_every": 2,  # delayed ACKs: every second full segment (RFC 1122)
        "delayed_ack_timeout": "40ms",  # TCP_DELACK_MIN
        "rwnd": "3MiB",  # half of tcp_rmem's 6 MiB maximum (tcp_adv_win_scale = 1)
        "small_queue_time": "1ms",  # TCP Small Queues: sk_pacing_shift = 10
        "ect_control": True,  # Linux's DCTCP sets ECT(0) on every packet it sends
        "timestamps": True,  # tcp_timestamps = 1
        "sack": True,  # tcp_sack = 1
        "cwnd_validation": True,  # tcp_is_cwnd_limited
        "slow_start_after_idle": True,  # tcp_slow_start_after_idle = 1
        "mss": "1448B",  # 1500 B MTU less 40 B of headers and 12 B of timestamps
    },
}


DCQCN_PROFILES = ("paper", "production")


def dcqcn_marker(profile: str, link_rate: int | str):
    """The congestion point's marking ramp for DCQCN. "paper": Kmin 5 KB, Kmax 200 KB,
    Pmax 1 % (Zhu et al. 2015); "production": Kmin = 100 KB and Kmax = 400 KB scaled by
    link rate / 25 Gbit/s, Pmax 20 % (the deployed profile). Pair it with g = 1/256."""
    from isthmus.queues import Ramp

    if profile not in DCQCN_PROFILES:
        raise ValueError(
            f"DCQCN profile must be one of {', '.join(DCQCN_PROFILES)}, got {profile!r}"
        )
    if profile == "paper":
        return Ramp(kind="ramp", kmin="5KB", kmax="200KB", pmax=0.01)
    scale = units.rate_bps(link_rate) / 25e9
    return Ramp(
        kind="ramp", kmin=f"{round(100_000 * scale)}B", kmax=f"{round(400_000 * scale)}B", pmax=0.2
    )
