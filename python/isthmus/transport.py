"""Transport parameters. TCP's defaults come from the engine itself (they are the
reference benchmark's: MSS 1460 B, initial window 10 segments, minimum RTO 5 ms, ACK
every segment), so Python, scenario files and Rust can never disagree on them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from isthmus import declared, units

TRANSPORTS = ("tcp", "dctcp", "cubic", "mptcp")
TransportName = Literal["tcp", "dctcp", "cubic", "mptcp"]
FlowTransportName = Literal["tcp", "dctcp", "cubic", "mptcp", "dcqcn"]
"""Transports a generated flow may use: the TCP family, or DCQCN for RDMA-like traffic."""


class _TcpSettings(declared.DeclaredModel):
    """What a simulation adds to the engine's TCP parameters: MPTCP's subflow count
    and the host profiles."""

    mptcp_subflows: Annotated[int, Field(ge=1, le=16)] = Field(
        8, description="subflows per MPTCP connection (8 fill a k=4 fat-tree, Raiciu 2011)"
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
        """Every parameter in the engine's base units ("0s" of small-queue time turns it
        off, as None does: a scenario file cannot write None)."""
        core = self.engine()
        core["small_queue_time"] = core["small_queue_time"] or None
        return core


# Every field but `mptcp_subflows` is the engine's `TcpConfig`, as it declares it
# (crates/isthmus-core/src/transport/tcp.rs); DCTCP's two as `dctcp_g` and
# `dctcp_initial_alpha`.
TcpParams = declared.model(
    "TcpConfig",
    name="TcpParams",
    module=__name__,
    base=_TcpSettings,
    nested={"dctcp": "Dctcp"},
    doc="Parameters of every TCP, DCTCP and MPTCP flow of a simulation (an MPTCP subflow "
    "is a TCP NewReno sender with these parameters, coupled by LIA).",
)


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
