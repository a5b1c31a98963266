//! A network graph: hosts and switches joined by full-duplex links, each link with its
//! own rate and propagation delay. Builders for the usual datacenter shapes live in
//! [`builders`]; anything else comes in as an explicit node and link list.

pub mod builders;

use crate::units::{Rate, Time};
use std::collections::{HashMap, VecDeque};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

/// Rate and one-way propagation delay of a link (both directions alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    pub rate: Rate,
    pub delay: Time,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// The tier it belongs to ("host", "leaf", "spine", "core", ...), for reports and export.
    pub role: String,
}

#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub a: u32,
    pub b: u32,
    pub spec: LinkSpec,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

/// The largest network the engine builds: nodes (hosts and switches), links, and ports
/// on one node (local port numbers are 16-bit, and one value marks "from this host").
pub const MAX_NODES: u128 = 1_000_000;
pub const MAX_LINKS: u128 = 4_000_000;
pub const MAX_PORTS_PER_NODE: usize = u16::MAX as usize - 1;
/// Default routing keeps next hops for every (switch, destination host): at most this
/// many rows (about 8 bytes each).
pub const MAX_ROUTE_ROWS: u128 = 100_000_000;

/// Refuses a network of `nodes` nodes and `links` links before building it, if it is
/// larger than the engine builds, saying how large it would be.
pub fn check_size(what: &str, nodes: u128, links: u128) -> Result<(), TopologyError> {
    if nodes > MAX_NODES || links > MAX_LINKS {
        return Err(TopologyError(format!(
            "{what} would have {nodes} nodes and {links} links; the engine builds at most \
             {MAX_NODES} nodes and {MAX_LINKS} links: choose smaller parameters"
        )));
    }
    Ok(())
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopologyError {}

#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Host address (0, 1, ...) → node index; addresses follow the order hosts were added.
    pub hosts: Vec<u32>,
}

impl Topology {
    pub fn add_node(&mut self, name: impl Into<String>, kind: NodeKind, role: &str) -> u32 {
        let id = self.nodes.len() as u32;
        if kind == NodeKind::Host {
            self.hosts.push(id);
        }
        self.nodes.push(Node {
            name: name.into(),
            kind,
            role: role.to_string(),
        });
        id
    }

    pub fn add_host(&mut self, name: impl Into<String>) -> u32 {
        self.add_node(name, NodeKind::Host, "host")
    }

    pub fn add_switch(&mut self, name: impl Into<String>, role: &str) -> u32 {
        self.add_node(name, NodeKind::Switch, role)
    }

    pub fn connect(&mut self, a: u32, b: u32, spec: LinkSpec) {
        self.links.push(Link { a, b, spec });
    }

    pub fn num_hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
    }

    /// Builds a topology from named nodes and links between them, checking it can route.
    pub fn custom(
        nodes: &[(String, NodeKind)],
        links: &[(String, String, LinkSpec)],
    ) -> Result<Topology, TopologyError> {
        let mut topo = Topology::default();
        let mut index = HashMap::new();
        for (name, kind) in nodes {
            if index
                .insert(name.clone(), topo.nodes.len() as u32)
                .is_some()
            {
                return Err(TopologyError(format!(
                    "node '{name}' is defined twice; node names must be unique"
                )));
            }
            let role = if *kind == NodeKind::Host {
                "host"
            } else {
                "switch"
            };
            topo.add_node(name.clone(), *kind, role);
        }
        for (i, (a, b, spec)) in links.iter().enumerate() {
            let lookup = |n: &String| {
                index.get(n).copied().ok_or_else(|| {
                    TopologyError(format!(
                        "links[{i}] names node '{n}', which is not among the nodes"
                    ))
                })
            };
            topo.connect(lookup(a)?, lookup(b)?, *spec);
        }
        topo.validate()?;
        Ok(topo)
    }

    /// Checks what the engine relies on: at least two hosts, no self-loops, positive
    /// rates, and every host able to reach every other host through switches.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if self.hosts.len() < 2 {
            return Err(TopologyError(format!(
                "the topology has {} host(s); at least 2 are needed to carry traffic",
                self.hosts.len()
            )));
        }
        for (i, link) in self.links.iter().enumerate() {
            let (a, b) = (&self.nodes[link.a as usize], &self.nodes[link.b as usize]);
            if link.a == link.b {
                return Err(TopologyError(format!(
                    "links[{i}] connects '{}' to itself",
                    a.name
                )));
            }
            if link.spec.rate == 0 {
                return Err(TopologyError(format!(
                    "links[{i}] ('{}' - '{}') has rate 0; give it a positive rate",
                    a.name, b.name
                )));
            }
        }
        let switches = self.nodes.len() - self.hosts.len();
        let rows = switches as u128 * self.hosts.len() as u128;
        if rows > MAX_ROUTE_ROWS {
            return Err(TopologyError(format!(
                "routing {} hosts through {switches} switches needs {rows} next-hop rows; \
                 at most {MAX_ROUTE_ROWS}: choose a smaller network",
                self.hosts.len()
            )));
        }
        let adjacency = self.adjacency();
        if let Some((n, ports)) = adjacency
            .iter()
            .enumerate()
            .map(|(n, a)| (n, a.len()))
            .find(|&(_, ports)| ports > MAX_PORTS_PER_NODE)
        {
            return Err(TopologyError(format!(
                "'{}' would have {ports} ports; a node has at most {MAX_PORTS_PER_NODE}",
                self.nodes[n].name
            )));
        }
        let first = self.hosts[0];
        let reached = self.hop_distances(&adjacency, first);
        for &h in &self.hosts {
            if reached[h as usize] == u32::MAX {
                return Err(TopologyError(format!(
                    "host '{}' cannot reach host '{}': the topology is not connected",
                    self.nodes[h as usize].name, self.nodes[first as usize].name
                )));
            }
        }
        Ok(())
    }

    /// Per node, the (neighbour, link index) pairs in link order.
    pub fn adjacency(&self) -> Vec<Vec<(u32, u32)>> {
        let mut adj = vec![Vec::new(); self.nodes.len()];
        for (i, l) in self.links.iter().enumerate() {
            adj[l.a as usize].push((l.b, i as u32));
            adj[l.b as usize].push((l.a, i as u32));
        }
        adj
    }

    /// Hop distance from every node to `target`, where hosts other than the target never
    /// relay traffic. Unreachable nodes get `u32::MAX`.
    pub fn hop_distances(&self, adjacency: &[Vec<(u32, u32)>], target: u32) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.nodes.len()];
        dist[target as usize] = 0;
        let mut frontier = VecDeque::from([target]);
        while let Some(n) = frontier.pop_front() {
            if n != target && self.nodes[n as usize].kind == NodeKind::Host {
                continue;
            }
            for &(m, _) in &adjacency[n as usize] {
                if dist[m as usize] == u32::MAX {
                    dist[m as usize] = dist[n as usize] + 1;
                    frontier.push_back(m);
                }
            }
        }
        dist
    }
}
