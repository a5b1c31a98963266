//! Python bindings of the Isthmus engine: thin wrappers that convert arguments, map
//! errors to `ValueError`, and hand telemetry back as NumPy arrays (one array per
//! column, never a Python object per element). All logic lives in `isthmus-core`.

use isthmus_core::rng::{Rng, Stream};
use isthmus_core::rounds::{IncastRounds, RoundTransport};
use isthmus_core::topology::builders;
use isthmus_core::transport::bcn::BcnSourceConfig;
use isthmus_core::transport::dcqcn::DcqcnConfig;
use isthmus_core::units::{self, Limit};
use isthmus_core::workload::{ArrivalProcess, FlowWorkload, Pattern, SizeCdf, PATTERN_STREAM};
use isthmus_core::{
    EngineConfig, LinkSpec, MessageFlowSpec, NodeKind, TcpConfig, Time, TimedFlowSpec, UdpFlowSpec,
};
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A NumPy column of `$f` applied to every row of `$rows`.
macro_rules! col {
    ($py:expr, $rows:expr, $f:expr) => {
        $crate::column($py, $rows.iter().map($f).collect::<Vec<_>>())
    };
}

mod control;
mod queue;
mod wire;

pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pyfunction]
fn parse_time(text: &str) -> PyResult<u64> {
    units::parse_time(text).map_err(value_error)
}

#[pyfunction]
fn parse_rate(text: &str) -> PyResult<u64> {
    units::parse_rate(text).map_err(value_error)
}

#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    units::parse_size(text).map_err(value_error)
}

/// Returns ("packets", n) or ("bytes", n).
#[pyfunction]
fn parse_limit(text: &str) -> PyResult<(&'static str, u64)> {
    match units::parse_limit(text).map_err(value_error)? {
        Limit::Packets(n) => Ok(("packets", n)),
        Limit::Bytes(n) => Ok(("bytes", n)),
    }
}

/// A random permutation of 0..n without fixed points, from workload stream `index` of
/// run `seed` (the engine's own generator, so it is the same on every platform).
#[pyfunction]
fn derangement(n: usize, seed: u64, index: u64) -> PyResult<Vec<u32>> {
    if n < 2 {
        return Err(value_error(format!(
            "a permutation pattern needs at least 2 hosts, got {n}"
        )));
    }
    Ok(Rng::stream(seed, Stream::Workload, index).derangement(n))
}

/// Maximum concurrent multicommodity flow by the Garg-Könemann FPTAS (see
/// `isthmus_core::mcf`); returns (flow per path, phases).
#[pyfunction]
fn max_concurrent_flow<'py>(
    py: Python<'py>,
    capacity: PyReadonlyArray1<'py, f64>,
    demand: PyReadonlyArray1<'py, f64>,
    commodity_paths: PyReadonlyArray1<'py, u64>,
    edge_offsets: PyReadonlyArray1<'py, u64>,
    path_edges: PyReadonlyArray1<'py, u32>,
    epsilon: f64,
) -> PyResult<(Bound<'py, PyAny>, u32)> {
    let offsets = |a: &PyReadonlyArray1<'py, u64>| -> PyResult<Vec<usize>> {
        Ok(a.as_slice()?.iter().map(|&x| x as usize).collect())
    };
    let (commodity_paths, edge_offsets) = (offsets(&commodity_paths)?, offsets(&edge_offsets)?);
    let (capacity, demand, path_edges) = (
        capacity.as_slice()?.to_vec(),
        demand.as_slice()?.to_vec(),
        path_edges.as_slice()?.to_vec(),
    );
    let paths = isthmus_core::mcf::PathSets {
        commodity_paths: &commodity_paths,
        edge_offsets: &edge_offsets,
        path_edges: &path_edges,
    };
    let out = py
        .detach(|| isthmus_core::mcf::max_concurrent_flow(&capacity, &demand, &paths, epsilon))
        .map_err(value_error)?;
    Ok((column(py, out.path_flow), out.phases))
}

/// The TCP configuration of a `transport` flow from the settings Python passes (a
/// `TcpConfig` dict, see `wire`).
fn tcp_config(tcp: &Bound<'_, PyAny>, transport: &str) -> PyResult<TcpConfig> {
    Ok(wire::from_py::<TcpConfig>("tcp", tcp)?.for_transport(transport))
}

/// The transport of a batch of TCP-family flows, as it crosses from Python.
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum StreamTransport {
    Tcp,
    Dctcp,
    Cubic,
    Mptcp { subflows: u8 },
}

impl StreamTransport {
    fn name(&self) -> &'static str {
        match self {
            StreamTransport::Tcp => "tcp",
            StreamTransport::Dctcp => "dctcp",
            StreamTransport::Cubic => "cubic",
            StreamTransport::Mptcp { .. } => "mptcp",
        }
    }
}

/// Barrier-synchronized incast rounds, as they cross from Python: every round each
/// sender sends `size` bytes to `receiver` over `transport` ("tcp", "dctcp", "cubic",
/// or "dcqcn" starting at `line_rate`); the first round at `start`, each next one `gap`
/// after the previous one's last byte arrived.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IncastSpec {
    receiver: u32,
    senders: Vec<u32>,
    size: u64,
    rounds: u32,
    gap: u64,
    start: u64,
    transport: String,
    line_rate: u64,
}

/// Every configuration parameter's meaning, unit, default and valid range, as the
/// engine's types declare them (JSON Schema, `isthmus_core::declared`).
#[pyfunction]
fn declarations() -> PyResult<String> {
    wire::to_json(&isthmus_core::declared::declarations())
}

/// Validates a flow-size CDF ("size probability" lines, sizes times `unit_bytes`) and
/// returns its mean in bytes.
#[pyfunction]
fn cdf_mean(text: &str, unit_bytes: f64) -> PyResult<f64> {
    Ok(SizeCdf::parse(text, unit_bytes)
        .map_err(value_error)?
        .mean())
}

/// `n` sizes (bytes) drawn from a flow-size CDF with workload stream `stream` of `seed`.
#[pyfunction]
fn sample_sizes<'py>(
    py: Python<'py>,
    cdf_text: &str,
    unit_bytes: f64,
    n: usize,
    seed: u64,
    stream: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let cdf = SizeCdf::parse(cdf_text, unit_bytes).map_err(value_error)?;
    let mut rng = Rng::stream(seed, Stream::Workload, stream);
    Ok(column(
        py,
        (0..n).map(|_| cdf.sample(&mut rng)).collect::<Vec<u64>>(),
    ))
}

/// The first workload stream of traffic block `block`: each block owns 2^32 streams.
fn block_streams(block: u64) -> u64 {
    block << 32
}

/// The hosts a pattern makes senders (e.g. an incast's N random senders), from workload
/// stream `stream` of run `seed`, as the flow workloads of that block would draw them.
#[pyfunction]
fn pattern_senders(
    topology: &Topology,
    pattern: &Bound<'_, PyAny>,
    seed: u64,
    stream: u64,
) -> PyResult<Vec<u32>> {
    let pattern: Pattern = wire::from_py("pattern", pattern)?;
    let destinations = pattern
        .destinations(
            &topology.inner,
            seed,
            block_streams(stream) + PATTERN_STREAM,
        )
        .map_err(value_error)?;
    Ok(destinations.senders().collect())
}

/// A flow workload as it crosses from Python: who sends to whom, how flows arrive
/// (times in ps), their sizes' CDF ("size probability" lines, sizes times
/// `unit_bytes`), and the window [start, stop).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadSpec {
    pattern: Pattern,
    arrivals: ArrivalProcess,
    cdf_text: String,
    unit_bytes: f64,
    start: Time,
    stop: Time,
}

/// Flows on `topology` following `spec` (a `WorkloadSpec`) from workload stream
/// `stream` of run `seed`: columns src, dst, size_bytes, start_ps.
#[pyfunction]
fn flow_workload<'py>(
    py: Python<'py>,
    topology: &Topology,
    spec: &Bound<'py, PyAny>,
    seed: u64,
    stream: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let spec: WorkloadSpec = wire::from_py("workload", spec)?;
    let workload = FlowWorkload {
        pattern: spec.pattern,
        arrivals: spec.arrivals,
        sizes: SizeCdf::parse(&spec.cdf_text, spec.unit_bytes).map_err(value_error)?,
        start: spec.start,
        stop: spec.stop,
    };
    let flows = workload
        .generate(&topology.inner, seed, block_streams(stream))
        .map_err(value_error)?;
    dict_of(
        py,
        vec![
            (
                "src",
                column(py, flows.iter().map(|f| f.src).collect::<Vec<_>>()),
            ),
            (
                "dst",
                column(py, flows.iter().map(|f| f.dst).collect::<Vec<_>>()),
            ),
            (
                "size_bytes",
                column(py, flows.iter().map(|f| f.size).collect::<Vec<_>>()),
            ),
            (
                "start_ps",
                column(py, flows.iter().map(|f| f.start).collect::<Vec<_>>()),
            ),
        ],
    )
}

#[pyfunction]
fn format_time(ps: u64) -> String {
    units::format_time(ps)
}

fn link_spec((rate, delay): (u64, Time)) -> LinkSpec {
    LinkSpec { rate, delay }
}

pub(crate) fn dict_of<'py>(
    py: Python<'py>,
    columns: Vec<(&str, Bound<'py, PyAny>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, column) in columns {
        d.set_item(name, column)?;
    }
    Ok(d)
}

pub(crate) fn column<'py, T: numpy::Element>(py: Python<'py>, v: Vec<T>) -> Bound<'py, PyAny> {
    v.into_pyarray(py).into_any()
}

/// A network graph. Build one with the static constructors; rates in bit/s, delays in ps.
#[pyclass(module = "isthmus._core", frozen)]
#[derive(Clone)]
pub struct Topology {
    inner: isthmus_core::Topology,
}

/// A link as Python passes it: (rate in bit/s, delay in ps).
type LinkArg = (u64, u64);

fn built(
    result: Result<isthmus_core::Topology, isthmus_core::topology::TopologyError>,
) -> PyResult<Topology> {
    result.map(|inner| Topology { inner }).map_err(value_error)
}

/// A network built by one of the engine's builders, as it crosses from Python: tagged
/// by `kind`, with the builder's counts and links (rate in bit/s, delay in ps).
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum TopologySpec {
    LeafSpine {
        spines: usize,
        leaves: usize,
        hosts_per_leaf: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
    },
    FatTree {
        k: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
    },
    ThreeTier {
        cores: usize,
        aggs: usize,
        edges: usize,
        hosts_per_edge: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
        core_link: LinkArg,
    },
    Vl2 {
        d_a: usize,
        d_i: usize,
        hosts_per_tor: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
    },
    Ring {
        switches: usize,
        hosts_per_switch: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
    },
    Mesh {
        switches: usize,
        hosts_per_switch: usize,
        host_link: LinkArg,
        fabric_link: LinkArg,
    },
}

#[pymethods]
impl Topology {
    /// The network `spec` (a `TopologySpec`) describes.
    #[staticmethod]
    fn build(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        let topology: TopologySpec = wire::from_py("topology", spec)?;
        built(match topology {
            TopologySpec::LeafSpine {
                spines,
                leaves,
                hosts_per_leaf,
                host_link,
                fabric_link,
            } => builders::leaf_spine(
                spines,
                leaves,
                hosts_per_leaf,
                link_spec(host_link),
                link_spec(fabric_link),
            ),
            TopologySpec::FatTree {
                k,
                host_link,
                fabric_link,
            } => builders::fat_tree(k, link_spec(host_link), link_spec(fabric_link)),
            TopologySpec::ThreeTier {
                cores,
                aggs,
                edges,
                hosts_per_edge,
                host_link,
                fabric_link,
                core_link,
            } => builders::three_tier(
                cores,
                aggs,
                edges,
                hosts_per_edge,
                link_spec(host_link),
                link_spec(fabric_link),
                link_spec(core_link),
            ),
            TopologySpec::Vl2 {
                d_a,
                d_i,
                hosts_per_tor,
                host_link,
                fabric_link,
            } => builders::vl2(
                d_a,
                d_i,
                hosts_per_tor,
                link_spec(host_link),
                link_spec(fabric_link),
            ),
            TopologySpec::Ring {
                switches,
                hosts_per_switch,
                host_link,
                fabric_link,
            } => builders::ring(
                switches,
                hosts_per_switch,
                link_spec(host_link),
                link_spec(fabric_link),
            ),
            TopologySpec::Mesh {
                switches,
                hosts_per_switch,
                host_link,
                fabric_link,
            } => builders::mesh(
                switches,
                hosts_per_switch,
                link_spec(host_link),
                link_spec(fabric_link),
            ),
        })
    }

    /// `nodes`: (name, is_host) pairs; `links`: (a, b, rate_bps, delay_ps).
    #[staticmethod]
    fn custom(
        nodes: Vec<(String, bool)>,
        links: Vec<(String, String, u64, u64)>,
    ) -> PyResult<Self> {
        let nodes: Vec<(String, NodeKind)> = nodes
            .into_iter()
            .map(|(n, host)| {
                (
                    n,
                    if host {
                        NodeKind::Host
                    } else {
                        NodeKind::Switch
                    },
                )
            })
            .collect();
        let links: Vec<(String, String, LinkSpec)> = links
            .into_iter()
            .map(|(a, b, r, d)| (a, b, link_spec((r, d))))
            .collect();
        built(isthmus_core::Topology::custom(&nodes, &links))
    }

    #[getter]
    fn num_hosts(&self) -> usize {
        self.inner.num_hosts()
    }

    #[getter]
    fn num_nodes(&self) -> usize {
        self.inner.nodes.len()
    }

    /// Node columns: name, kind ("host"/"switch"), role, and for hosts their address.
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let names: Vec<String> = self.inner.nodes.iter().map(|n| n.name.clone()).collect();
        let kinds: Vec<&str> = self
            .inner
            .nodes
            .iter()
            .map(|n| {
                if n.kind == NodeKind::Host {
                    "host"
                } else {
                    "switch"
                }
            })
            .collect();
        let roles: Vec<String> = self.inner.nodes.iter().map(|n| n.role.clone()).collect();
        let d = PyDict::new(py);
        d.set_item("name", names)?;
        d.set_item("kind", kinds)?;
        d.set_item("role", roles)?;
        d.set_item("host_node", column(py, self.inner.hosts.clone()))?;
        Ok(d)
    }

    /// Link columns: a, b (node indices), rate_bps, delay_ps.
    fn links<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.inner.links;
        dict_of(
            py,
            vec![
                ("a", column(py, l.iter().map(|x| x.a).collect::<Vec<_>>())),
                ("b", column(py, l.iter().map(|x| x.b).collect::<Vec<_>>())),
                (
                    "rate_bps",
                    column(py, l.iter().map(|x| x.spec.rate).collect::<Vec<_>>()),
                ),
                (
                    "delay_ps",
                    column(py, l.iter().map(|x| x.spec.delay).collect::<Vec<_>>()),
                ),
            ],
        )
    }
}

/// A simulation engine over one topology. Times in picoseconds, rates in bit/s.
#[pyclass(module = "isthmus._core")]
pub struct Engine {
    pub(crate) inner: isthmus_core::Engine,
}

fn opt_i64(t: Option<Time>) -> i64 {
    t.map_or(-1, |v| v as i64)
}

/// Per-flow source, destination, size (bytes) and start (ps), as Python passes them.
struct FlowArrays<'py> {
    src: PyReadonlyArray1<'py, u32>,
    dst: PyReadonlyArray1<'py, u32>,
    size: PyReadonlyArray1<'py, u64>,
    start: PyReadonlyArray1<'py, u64>,
}

impl Engine {
    /// Refuses a change once a partitioned run has started: its partitions hold the
    /// network's state, and this engine is only their snapshot.
    pub(crate) fn unchanged(&self) -> PyResult<()> {
        if self.inner.partitions_started() {
            return Err(value_error(
                "this simulation runs in partitions and has started: set up everything \
                 before its first run, or run it with one partition (threads = 1)",
            ));
        }
        Ok(())
    }

    /// Adds one flow per element of `flows` with `add`; returns the first flow's id. An
    /// error names the failing element.
    fn add_each(
        &mut self,
        flows: FlowArrays<'_>,
        mut add: impl FnMut(&mut isthmus_core::Engine, u32, u32, u64, u64) -> Result<u32, String>,
    ) -> PyResult<u32> {
        let (src, dst, size, start) = (
            flows.src.as_slice()?,
            flows.dst.as_slice()?,
            flows.size.as_slice()?,
            flows.start.as_slice()?,
        );
        if dst.len() != src.len() || size.len() != src.len() || start.len() != src.len() {
            return Err(value_error(
                "src, dst, size and start must have the same length",
            ));
        }
        let first = self.inner.num_flows() as u32;
        for i in 0..src.len() {
            add(&mut self.inner, src[i], dst[i], size[i], start[i])
                .map_err(|e| value_error(format!("flow {i}: {e}")))?;
        }
        Ok(first)
    }
}

impl Engine {
    /// The global ids of `node`'s ports, or of every port.
    pub(crate) fn port_range(&self, node: Option<u32>) -> PyResult<std::ops::Range<usize>> {
        match node {
            None => Ok(0..self.inner.ports.len()),
            Some(n) => {
                let state = self
                    .inner
                    .nodes
                    .get(n as usize)
                    .ok_or_else(|| value_error(format!("node {n} does not exist")))?;
                let first = state.first_port as usize;
                Ok(first..first + state.num_ports as usize)
            }
        }
    }
}

#[pymethods]
impl Engine {
    /// The global id of local port `port` of `node`.
    fn global_port(&self, node: u32, port: usize) -> PyResult<usize> {
        let range = self.port_range(Some(node))?;
        if port >= range.len() {
            return Err(value_error(format!(
                "port {port} does not exist on node {node} (it has ports 0..{})",
                range.len().saturating_sub(1)
            )));
        }
        Ok(range.start + port)
    }
}

#[pymethods]
impl Engine {
    /// An engine over `topology`; `config` is an `EngineConfig` (a dict, see `wire`),
    /// fields left out taking the engine's defaults.
    #[new]
    fn new(topology: &Topology, seed: u64, config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let config: EngineConfig = wire::from_py("engine configuration", config)?;
        config.validate().map_err(value_error)?;
        Ok(Engine {
            inner: isthmus_core::Engine::new(topology.inner.clone(), config, seed),
        })
    }

    /// Adds a UDP flow (`spec`: a `UdpFlowSpec`, see `wire`; `size` 0 sends until `stop`).
    fn add_udp_flow(&mut self, src: u32, dst: u32, spec: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.unchanged()?;
        let spec: UdpFlowSpec = wire::from_py("UDP flow", spec)?;
        self.inner.add_udp_flow(src, dst, spec).map_err(value_error)
    }

    /// Adds flows of `transport` (a `StreamTransport`: tcp, dctcp, cubic, or mptcp with
    /// its subflows), one per element of the equal-length arrays; returns the id of the
    /// first (the others follow in order).
    fn add_tcp_flows(
        &mut self,
        src: PyReadonlyArray1<'_, u32>,
        dst: PyReadonlyArray1<'_, u32>,
        size: PyReadonlyArray1<'_, u64>,
        start: PyReadonlyArray1<'_, u64>,
        tcp: &Bound<'_, PyAny>,
        transport: &Bound<'_, PyAny>,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let flows = FlowArrays {
            src,
            dst,
            size,
            start,
        };
        let transport: StreamTransport = wire::from_py("transport", transport)?;
        let config = tcp_config(tcp, transport.name())?;
        match transport {
            StreamTransport::Mptcp { subflows } => self.add_each(flows, |e, s, d, n, t| {
                e.add_mptcp_flow(s, d, n, t, subflows, &config)
            }),
            _ => self.add_each(flows, |e, s, d, n, t| e.add_tcp_flow(s, d, n, t, &config)),
        }
    }

    /// Adds an iperf-like TCP (tcp, dctcp or cubic) source (`spec`: a `TimedFlowSpec`);
    /// returns its flow id.
    fn add_timed_tcp_flow(
        &mut self,
        src: u32,
        dst: u32,
        spec: &Bound<'_, PyAny>,
        tcp: &Bound<'_, PyAny>,
        transport: &str,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let spec: TimedFlowSpec = wire::from_py("bulk flow", spec)?;
        self.inner
            .add_timed_tcp_flow(src, dst, spec, &tcp_config(tcp, transport)?)
            .map_err(value_error)
    }

    /// Adds a persistent TCP (tcp, dctcp or cubic) connection writing the messages of
    /// `spec` (a `MessageFlowSpec`) in turn; returns its flow id.
    fn add_message_flow(
        &mut self,
        src: u32,
        dst: u32,
        spec: &Bound<'_, PyAny>,
        tcp: &Bound<'_, PyAny>,
        transport: &str,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let spec: MessageFlowSpec = wire::from_py("message flow", spec)?;
        self.inner
            .add_message_flow(src, dst, spec, &tcp_config(tcp, transport)?)
            .map_err(value_error)
    }

    /// Every message of every message stream: columns flow, index, size, start_ps,
    /// finish_ps (-1: not complete).
    fn message_table<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let m: Vec<_> = self.inner.message_records().collect();
        dict_of(
            py,
            vec![
                (
                    "flow",
                    column(py, m.iter().map(|x| x.0).collect::<Vec<_>>()),
                ),
                (
                    "index",
                    column(py, m.iter().map(|x| x.1).collect::<Vec<_>>()),
                ),
                (
                    "size",
                    column(py, m.iter().map(|x| x.2.size).collect::<Vec<_>>()),
                ),
                (
                    "start_ps",
                    column(py, m.iter().map(|x| x.2.start).collect::<Vec<_>>()),
                ),
                (
                    "finish_ps",
                    column(
                        py,
                        m.iter().map(|x| opt_i64(x.2.finish)).collect::<Vec<_>>(),
                    ),
                ),
            ],
        )
    }

    /// Puts TCP flow `flow` under a BCN rate regulator (`source`: a `BcnSourceConfig`).
    fn regulate_with_bcn(&mut self, flow: u32, source: &Bound<'_, PyAny>) -> PyResult<()> {
        self.unchanged()?;
        let source: BcnSourceConfig = wire::from_py("BCN regulator", source)?;
        self.inner
            .regulate_with_bcn(flow, &source)
            .map_err(value_error)
    }

    /// Puts every later packet of `flow` in traffic class `priority`.
    fn set_flow_priority(&mut self, flow: u32, priority: u8) -> PyResult<()> {
        self.unchanged()?;
        self.inner
            .set_flow_priority(flow, priority)
            .map_err(value_error)
    }

    /// Adds DCQCN flows (one per element of the equal-length arrays) whose senders run
    /// `config` (a `DcqcnConfig`); returns the first flow's id.
    fn add_dcqcn_flows(
        &mut self,
        src: PyReadonlyArray1<'_, u32>,
        dst: PyReadonlyArray1<'_, u32>,
        size: PyReadonlyArray1<'_, u64>,
        start: PyReadonlyArray1<'_, u64>,
        config: &Bound<'_, PyAny>,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let config: DcqcnConfig = wire::from_py("DCQCN", config)?;
        self.add_each(
            FlowArrays {
                src,
                dst,
                size,
                start,
            },
            |e, s, d, n, t| e.add_dcqcn_flow(s, d, n, t, &config),
        )
    }

    /// Adds barrier-synchronized incast rounds (`spec`: an `IncastSpec`; its TCP
    /// responses run `tcp`); returns the job's id.
    fn add_incast_rounds(
        &mut self,
        spec: &Bound<'_, PyAny>,
        tcp: &Bound<'_, PyAny>,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let spec: IncastSpec = wire::from_py("incast", spec)?;
        let transport = match spec.transport.as_str() {
            "tcp" | "dctcp" | "cubic" => RoundTransport::Tcp(tcp_config(tcp, &spec.transport)?),
            "dcqcn" => RoundTransport::Dcqcn(isthmus_core::transport::dcqcn::DcqcnConfig::paper(
                spec.line_rate,
            )),
            other => {
                return Err(value_error(format!(
                    "an incast's transport must be tcp, dctcp or dcqcn, got {other:?}"
                )))
            }
        };
        let job = IncastRounds {
            receiver: spec.receiver,
            senders: spec.senders,
            size: spec.size,
            rounds: spec.rounds,
            gap: spec.gap,
            transport,
        };
        self.inner
            .add_incast_rounds(job, spec.start)
            .map_err(value_error)
    }

    /// Every incast round so far: columns job, round, start_ps, finish_ps (-1: running).
    fn incast_rounds<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.inner.incast_rounds();
        dict_of(
            py,
            vec![
                (
                    "job",
                    column(py, r.iter().map(|x| x.job).collect::<Vec<_>>()),
                ),
                (
                    "round",
                    column(py, r.iter().map(|x| x.round).collect::<Vec<_>>()),
                ),
                (
                    "start_ps",
                    column(py, r.iter().map(|x| x.start).collect::<Vec<_>>()),
                ),
                (
                    "finish_ps",
                    column(py, r.iter().map(|x| opt_i64(x.finish)).collect::<Vec<_>>()),
                ),
            ],
        )
    }

    /// Adds a BCN-regulated datagram source (`source`: a `BcnSourceConfig`) sending
    /// `size` bytes (0: until `stop`) from `start`; returns its flow id.
    fn add_bcn_flow(
        &mut self,
        src: u32,
        dst: u32,
        source: &Bound<'_, PyAny>,
        size: u64,
        start: u64,
        stop: u64,
    ) -> PyResult<u32> {
        self.unchanged()?;
        let source: BcnSourceConfig = wire::from_py("BCN source", source)?;
        self.inner
            .add_bcn_flow(src, dst, &source, size, start, stop)
            .map_err(value_error)
    }

    /// BCN feedback each switch port has sent: columns port_index, samples, positive,
    /// normal, stop.
    fn bcn_table<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let p = &self.inner.ports;
        dict_of(
            py,
            vec![
                (
                    "port_index",
                    column(py, (0..p.len() as u32).collect::<Vec<_>>()),
                ),
                (
                    "samples",
                    column(py, p.iter().map(|x| x.bcn.samples).collect::<Vec<_>>()),
                ),
                (
                    "positive",
                    column(py, p.iter().map(|x| x.bcn.sent[0]).collect::<Vec<_>>()),
                ),
                (
                    "normal",
                    column(py, p.iter().map(|x| x.bcn.sent[1]).collect::<Vec<_>>()),
                ),
                (
                    "stop",
                    column(py, p.iter().map(|x| x.bcn.sent[2]).collect::<Vec<_>>()),
                ),
            ],
        )
    }

    /// Unloaded round trip (ps) from host `src` to `dst`: a `data_bytes` packet out and
    /// an `ack_bytes` packet back.
    fn base_rtt(&self, src: u32, dst: u32, data_bytes: u32, ack_bytes: u32) -> PyResult<u64> {
        self.inner
            .base_rtt(src, dst, data_bytes, ack_bytes)
            .map_err(value_error)
    }

    /// Makes the direction of link `link` leaving node `from` follow a mahimahi trace
    /// (millisecond timestamps, one per 1500-byte opportunity); None restores the rate.
    #[pyo3(signature = (link, from_node, millis=None))]
    fn set_link_trace(
        &mut self,
        link: usize,
        from_node: u32,
        millis: Option<PyReadonlyArray1<'_, u64>>,
    ) -> PyResult<()> {
        self.unchanged()?;
        let trace = match millis {
            Some(ms) => Some(
                isthmus_core::trace::LinkTrace::from_millis(ms.as_slice()?).map_err(value_error)?,
            ),
            None => None,
        };
        self.inner
            .set_link_trace(link, from_node, trace)
            .map_err(value_error)
    }

    /// Takes topology link `link` down or brings it back up.
    fn set_link_up(&mut self, link: usize, up: bool) -> PyResult<()> {
        self.unchanged()?;
        self.inner.set_link_up(link, up).map_err(value_error)
    }

    /// Runs all events up to `until` (ps); returns how many ran. The GIL is released.
    fn run_until(&mut self, py: Python<'_>, until: u64) -> PyResult<u64> {
        self.inner.start_partitions().map_err(value_error)?;
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.run_until(until)))
    }

    /// Splits the next runs into `partitions` partitions run by `threads` threads (1:
    /// the sequential engine); before the first run.
    fn set_partitions(&mut self, partitions: usize, threads: usize) -> PyResult<()> {
        self.inner
            .set_partitions(partitions, threads)
            .map_err(value_error)
    }

    /// (partitions, lookahead in ps, links between partitions, nodes per partition).
    fn partitions(&self) -> (usize, u64, usize, Vec<usize>) {
        match self.inner.split() {
            Some(split) => (
                split.plan.parts,
                split.plan.lookahead,
                split.plan.cross_links,
                split.plan.sizes(),
            ),
            None => (1, u64::MAX, 0, vec![self.inner.topology().nodes.len()]),
        }
    }

    /// Runs until all flows finish or the clock passes `limit`; returns whether they did.
    fn run_until_flows_finish(&mut self, py: Python<'_>, limit: u64) -> PyResult<bool> {
        self.inner.start_partitions().map_err(value_error)?;
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.run_until_flows_finish(limit)))
    }

    #[getter]
    fn now(&self) -> u64 {
        self.inner.now()
    }

    #[getter]
    fn events_processed(&self) -> u64 {
        self.inner.events_processed()
    }

    #[getter]
    fn packet_hops(&self) -> u64 {
        self.inner.packet_hops()
    }

    #[getter]
    fn num_flows(&self) -> usize {
        self.inner.num_flows()
    }

    #[getter]
    fn unfinished_flows(&self) -> usize {
        self.inner.unfinished_flows()
    }

    #[getter]
    fn expected_flows(&self) -> usize {
        self.inner.expected_flows()
    }

    #[getter]
    fn live_packets(&self) -> usize {
        self.inner.live_packets()
    }

    #[getter]
    fn next_event_time(&self) -> Option<u64> {
        self.inner.next_event_time()
    }

    /// Per-port columns (one row per port, ports numbered node by node); with `node`,
    /// that node's ports only, read without touching the others.
    #[pyo3(signature = (node=None))]
    fn port_table<'py>(
        &mut self,
        py: Python<'py>,
        node: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let all = &self.inner.ports;
        let p = &all[self.port_range(node)?];
        let peer_node = col!(py, p, |x| all[x.peer as usize].node);
        dict_of(
            py,
            vec![
                ("node", col!(py, p, |x| x.node)),
                ("port", col!(py, p, |x| x.local)),
                ("peer_node", peer_node),
                ("rate_bps", col!(py, p, |x| x.rate)),
                ("delay_ps", col!(py, p, |x| x.delay)),
                ("tx_bytes", col!(py, p, |x| x.counters.tx_bytes)),
                ("tx_packets", col!(py, p, |x| x.counters.tx_packets)),
                ("rx_bytes", col!(py, p, |x| x.rx_bytes)),
                ("rx_packets", col!(py, p, |x| x.rx_packets)),
                ("drop_packets", col!(py, p, |x| x.counters.drop_packets)),
                ("drop_bytes", col!(py, p, |x| x.counters.drop_bytes)),
                ("ecn_marks", col!(py, p, |x| x.counters.ecn_marks)),
                ("queue_packets", col!(py, p, |x| x.queue.len() as u64)),
                ("queue_bytes", col!(py, p, |x| x.queue.bytes())),
                (
                    "max_queue_packets",
                    col!(py, p, |x| x.counters.max_queue_packets),
                ),
                (
                    "max_queue_bytes",
                    col!(py, p, |x| x.counters.max_queue_bytes),
                ),
                ("wait_ps", col!(py, p, |x| x.counters.wait_ps)),
                ("busy_ps", col!(py, p, |x| x.counters.busy_ps)),
                ("pfc_pauses", col!(py, p, |x| x.counters.pfc_pauses)),
                ("pfc_resumes", col!(py, p, |x| x.counters.pfc_resumes)),
                (
                    "pfc_max_ingress_bytes",
                    col!(py, p, |x| x.counters.pfc_max_ingress_bytes),
                ),
            ],
        )
    }

    /// Per-flow columns; times in ps, -1 where the event has not happened.
    fn flow_table<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let f: Vec<_> = self.inner.flows().collect();
        let ports: Vec<_> = self.inner.flow_ports().collect();
        dict_of(
            py,
            vec![
                ("src", col!(py, f, |x| x.src)),
                ("src_port", col!(py, ports, |x| x.0)),
                ("dst_port", col!(py, ports, |x| x.1)),
                ("subflows", col!(py, ports, |x| x.2)),
                ("datagram", col!(py, ports, |x| x.3)),
                ("dst", col!(py, f, |x| x.dst)),
                ("size_bytes", col!(py, f, |x| x.size)),
                ("start_ps", col!(py, f, |x| x.start as i64)),
                (
                    "first_delivery_ps",
                    col!(py, f, |x| opt_i64(x.first_delivery)),
                ),
                (
                    "last_delivery_ps",
                    col!(py, f, |x| opt_i64(x.last_delivery)),
                ),
                ("finish_ps", col!(py, f, |x| opt_i64(x.finish))),
                ("bytes_sent", col!(py, f, |x| x.bytes_sent)),
                ("bytes_delivered", col!(py, f, |x| x.bytes_delivered)),
                ("bytes_received", col!(py, f, |x| x.bytes_received)),
                ("packets_sent", col!(py, f, |x| x.packets_sent)),
                ("packets_delivered", col!(py, f, |x| x.packets_delivered)),
                ("packets_dropped", col!(py, f, |x| x.packets_dropped)),
                ("retransmissions", col!(py, f, |x| x.retransmissions)),
                ("timeouts", col!(py, f, |x| x.timeouts)),
                ("out_of_order", col!(py, f, |x| x.out_of_order)),
                ("delay_sum_ps", col!(py, f, |x| x.delay_sum_ps)),
                ("delay_packets", col!(py, f, |x| x.delay_packets)),
            ],
        )
    }

    /// Per-node drop counters: `unroutable` (no route, or misdelivered) and `rule_drops`
    /// (a drop action, a drop-on-miss, a meter, or a discarded packet-in).
    fn node_drops<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let n = &self.inner.nodes;
        dict_of(
            py,
            vec![
                (
                    "unroutable",
                    column(py, n.iter().map(|x| x.unroutable).collect::<Vec<_>>()),
                ),
                (
                    "rule_drops",
                    column(py, n.iter().map(|x| x.rule_drops).collect::<Vec<_>>()),
                ),
                (
                    "ttl_drops",
                    column(py, n.iter().map(|x| x.ttl_drops).collect::<Vec<_>>()),
                ),
            ],
        )
    }

    /// The `q`-quantile of packets' waits for a transmitter (ps), one per packet and
    /// hop, at switch ports, hosts' NICs or both; None if no packet left there.
    fn wait_quantile(&mut self, q: f64, switches: bool, hosts: bool) -> Option<f64> {
        self.inner.sync_partitions();
        let mut waits = isthmus_core::telemetry::WaitHistogram::default();
        for (wanted, host_nic) in [(switches, false), (hosts, true)] {
            if wanted {
                waits.add(self.inner.waits(host_nic));
            }
        }
        waits.quantile(q)
    }

    /// The sampled time series, or None if sampling is off: `time_ps` (samples) and
    /// per-port columns shaped (samples, ports).
    fn samples<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner.sync_partitions();
        let Some(s) = self.inner.sampler() else {
            return Ok(None);
        };
        let rows = s.times.len();
        let shape = |v: &Vec<u64>| -> PyResult<Bound<'py, PyAny>> {
            Ok(v.clone()
                .into_pyarray(py)
                .reshape([rows, s.num_ports])?
                .into_any())
        };
        Ok(Some(dict_of(
            py,
            vec![
                ("time_ps", column(py, s.times.clone())),
                ("queue_packets", shape(&s.queue_packets)?),
                ("queue_bytes", shape(&s.queue_bytes)?),
                ("tx_bytes", shape(&s.tx_bytes)?),
                ("drop_packets", shape(&s.drop_packets)?),
                ("ecn_marks", shape(&s.ecn_marks)?),
            ],
        )?))
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Topology>()?;
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_limit, m)?)?;
    m.add_function(wrap_pyfunction!(format_time, m)?)?;
    m.add_function(wrap_pyfunction!(derangement, m)?)?;
    m.add_function(wrap_pyfunction!(max_concurrent_flow, m)?)?;
    m.add_function(wrap_pyfunction!(cdf_mean, m)?)?;
    m.add_function(wrap_pyfunction!(flow_workload, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_senders, m)?)?;
    m.add_function(wrap_pyfunction!(sample_sizes, m)?)?;
    // Group and meter tables are indexed by id, so each table states its bound.
    m.add("MAX_GROUP_ID", isthmus_core::flowtable::MAX_GROUP_ID)?;
    m.add("MAX_PARTITIONS", isthmus_core::partition::MAX_PARTITIONS)?;
    m.add("MAX_METER_ID", isthmus_core::flowtable::MAX_METER_ID)?;
    m.add_function(wrap_pyfunction!(declarations, m)?)?;
    let kinds = PyDict::new(m.py());
    for (name, code) in [
        ("tick", control::TICK),
        ("packet_in", control::PACKET_IN),
        ("flow_arrival", control::FLOW_ARRIVAL),
        ("flow_finished", control::FLOW_FINISHED),
        ("entry_removed", control::ENTRY_REMOVED),
        ("flow_crossing", control::FLOW_CROSSING),
    ] {
        kinds.set_item(name, code)?;
    }
    m.add("CONTROL_EVENT_KINDS", kinds)?;
    Ok(())
}
