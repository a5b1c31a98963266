//! Maximum concurrent multicommodity flow over given path sets: the primal-dual FPTAS of
//! Garg and Könemann (FOCS 1998) in Fleischer's form (SIAM J. Discrete Math. 2000),
//! which routes commodity by commodity inside each phase.
//!
//! 1. Every edge starts with length δ / c(e), δ = (m / (1 - ε))^(-1/ε), m the number of
//!    edges; D = Σ c(e) l(e) is the dual objective.
//! 2. A phase routes each commodity's whole demand in turn, in the order given: on the
//!    commodity's currently shortest path (under the lengths) it sends u, the demand
//!    left or the path's bottleneck capacity if smaller, and multiplies each edge's
//!    length on that path by (1 + ε u / c(e)).
//! 3. Phases repeat until D reaches 1; the flow sent, divided by log_{1+ε}(1/δ), then
//!    respects every capacity, and the concurrent throughput λ (the least fraction of
//!    its demand any commodity gets) is within a factor (1 - ε)^-3 of the optimum,
//!    provided the optimum is at least 1 (the caller scales demands).
//! 4. The flow is finally scaled so that its most loaded edge is exactly full: still
//!    feasible, and never less throughput than the bound promises.
//!
//! Phases number about λ* log_{1+ε}(m / (1-ε)) / ε: the work grows as 1/ε².

/// The flow the algorithm found and how many phases it took.
#[derive(Clone, Debug)]
pub struct ConcurrentFlow {
    /// Flow on each path, in capacity units, scaled to be feasible.
    pub path_flow: Vec<f64>,
    pub phases: u32,
}

/// Paths are given as CSR: commodity `j` owns paths `commodity_paths[j]..[j+1]`, path
/// `p` crosses edges `path_edges[edge_offsets[p]..edge_offsets[p+1]]`.
pub struct PathSets<'a> {
    pub commodity_paths: &'a [usize],
    pub edge_offsets: &'a [usize],
    pub path_edges: &'a [u32],
}

impl PathSets<'_> {
    fn edges(&self, path: usize) -> &[u32] {
        &self.path_edges[self.edge_offsets[path]..self.edge_offsets[path + 1]]
    }

    fn check(&self, commodities: usize, edges: usize) -> Result<(), String> {
        if self.commodity_paths.len() != commodities + 1 {
            return Err(format!(
                "commodity_paths needs {} offsets (one per commodity, plus one), got {}",
                commodities + 1,
                self.commodity_paths.len()
            ));
        }
        let paths = *self.commodity_paths.last().unwrap_or(&0);
        if self.edge_offsets.len() != paths + 1 {
            return Err(format!(
                "edge_offsets needs {} offsets (one per path, plus one), got {}",
                paths + 1,
                self.edge_offsets.len()
            ));
        }
        for j in 0..commodities {
            if self.commodity_paths[j] >= self.commodity_paths[j + 1] {
                return Err(format!("commodity {j} has no path"));
            }
        }
        for p in 0..paths {
            if self.edge_offsets[p] >= self.edge_offsets[p + 1]
                || self.edge_offsets[p + 1] > self.path_edges.len()
            {
                return Err(format!("path {p} has no edges or runs past path_edges"));
            }
        }
        if let Some(&e) = self.path_edges.iter().find(|&&e| e as usize >= edges) {
            return Err(format!("edge {e} does not exist; there are {edges} edges"));
        }
        Ok(())
    }
}

/// Routes `demand[j]` for every commodity concurrently over `paths` within `capacity`,
/// to accuracy `epsilon` (0 < ε < 1/3).
pub fn max_concurrent_flow(
    capacity: &[f64],
    demand: &[f64],
    paths: &PathSets,
    epsilon: f64,
) -> Result<ConcurrentFlow, String> {
    if !(epsilon > 0.0 && epsilon < 1.0 / 3.0) {
        return Err(format!("epsilon must be in (0, 1/3), got {epsilon}"));
    }
    if let Some(c) = capacity.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
        return Err(format!(
            "every capacity must be positive and finite, got {c}"
        ));
    }
    if let Some(d) = demand.iter().find(|d| !(d.is_finite() && **d > 0.0)) {
        return Err(format!("every demand must be positive and finite, got {d}"));
    }
    paths.check(demand.len(), capacity.len())?;
    let m = capacity.len() as f64;
    let delta = (m / (1.0 - epsilon)).powf(-1.0 / epsilon);
    let mut length: Vec<f64> = capacity.iter().map(|c| delta / c).collect();
    let mut dual = m * delta;
    let total_paths = *paths.commodity_paths.last().unwrap_or(&0);
    let mut flow = vec![0.0; total_paths];
    let mut phases = 0u32;
    while dual < 1.0 {
        phases += 1;
        for (j, &d) in demand.iter().enumerate() {
            let mut left = d;
            while left > 0.0 && dual < 1.0 {
                let range = paths.commodity_paths[j]..paths.commodity_paths[j + 1];
                let (best, _) = range
                    .map(|p| {
                        let l: f64 = paths.edges(p).iter().map(|&e| length[e as usize]).sum();
                        (p, l)
                    })
                    .fold(
                        (usize::MAX, f64::INFINITY),
                        |a, b| if b.1 < a.1 { b } else { a },
                    );
                let bottleneck = paths
                    .edges(best)
                    .iter()
                    .map(|&e| capacity[e as usize])
                    .fold(f64::INFINITY, f64::min);
                let sent = left.min(bottleneck);
                flow[best] += sent;
                left -= sent;
                for &e in paths.edges(best) {
                    let e = e as usize;
                    let grown = length[e] * (1.0 + epsilon * sent / capacity[e]);
                    dual += capacity[e] * (grown - length[e]);
                    length[e] = grown;
                }
            }
        }
    }
    // Dividing by log_{1+ε}(1/δ) makes the flow feasible; then it is scaled so that its
    // most loaded edge is exactly full (more throughput, still feasible).
    let scale = (1.0 / delta).ln() / (1.0 + epsilon).ln();
    let mut load = vec![0.0; capacity.len()];
    for (p, f) in flow.iter_mut().enumerate() {
        *f /= scale;
        for &e in paths.edges(p) {
            load[e as usize] += *f;
        }
    }
    let congestion = load
        .iter()
        .zip(capacity)
        .map(|(l, c)| l / c)
        .fold(0.0, f64::max);
    if congestion > 0.0 {
        flow.iter_mut().for_each(|f| *f /= congestion);
    }
    Ok(ConcurrentFlow {
        path_flow: flow,
        phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_commodities_sharing_a_link_split_it() {
        // Edge 0 shared (capacity 1), edge 1 private to commodity 1 (capacity 1).
        let paths = PathSets {
            commodity_paths: &[0, 1, 3],
            edge_offsets: &[0, 1, 2, 3],
            path_edges: &[0, 0, 1],
        };
        let out = max_concurrent_flow(&[1.0, 1.0], &[1.0, 1.0], &paths, 0.05).unwrap();
        // Optimum: commodity 1 uses its private edge, commodity 0 gets all of edge 0.
        let lambda0 = out.path_flow[0];
        let lambda1 = out.path_flow[1] + out.path_flow[2];
        assert!(lambda0.min(lambda1) > (1.0 - 3.0 * 0.05), "{out:?}");
        assert!(out.path_flow[0] + out.path_flow[1] <= 1.0 + 1e-12);
    }

    #[test]
    fn bad_input_is_refused() {
        let paths = PathSets {
            commodity_paths: &[0, 1],
            edge_offsets: &[0, 1],
            path_edges: &[3],
        };
        let err = max_concurrent_flow(&[1.0], &[1.0], &paths, 0.1).unwrap_err();
        assert!(err.contains("edge 3 does not exist"), "{err}");
        let err = max_concurrent_flow(&[1.0], &[1.0], &paths, 0.5).unwrap_err();
        assert!(err.contains("epsilon"), "{err}");
    }
}
