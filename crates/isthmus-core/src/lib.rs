//! Isthmus core: a deterministic packet-level simulator of datacenter networks.
//!
//! Start at [`engine`]: it states the model and names the five functions one packet
//! passes through. Everything here is plain Rust with no Python; the `isthmus-py` crate
//! binds it.

pub mod control;
pub mod declared;
pub mod engine;
pub mod event;
pub mod flowtable;
pub mod mcf;
pub mod packet;
pub mod parallel;
pub mod partition;
pub mod queue;
pub mod rng;
pub mod rounds;
pub mod routing;
pub mod slab;
pub mod telemetry;
pub mod topology;
pub mod trace;
pub mod transport;
pub mod units;
pub mod workload;

pub use engine::{Engine, EngineConfig, MessageFlowSpec, TimedFlowSpec, UdpFlowSpec};
pub use routing::RoutingPolicy;
pub use topology::{LinkSpec, NodeKind, Topology};
pub use transport::tcp::{Dctcp, TcpConfig};
pub use transport::udp::Arrivals;
pub use units::{Limit, Time};
