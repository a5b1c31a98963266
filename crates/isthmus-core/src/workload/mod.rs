//! Flow workloads: a communication pattern (who sends to whom), an arrival process
//! (when), and flow sizes drawn from an empirical CDF (how much).

pub mod arrivals;
pub mod pattern;

pub use arrivals::{ArrivalProcess, LogNormal};
pub use pattern::Pattern;

use crate::rng::{Rng, Stream};
use crate::topology::Topology;
use crate::units::{Rate, Time};

/// An empirical flow-size distribution: breakpoints (size in bytes, cumulative
/// probability), sampled by linear interpolation between them. A first breakpoint with
/// probability p > 0 is a point mass of p at that size.
#[derive(Clone, Debug)]
pub struct SizeCdf {
    points: Vec<(f64, f64)>,
}

impl SizeCdf {
    pub fn new(points: Vec<(f64, f64)>) -> Result<SizeCdf, String> {
        if points.is_empty() {
            return Err("the CDF has no points".into());
        }
        for (i, &(size, p)) in points.iter().enumerate() {
            if !size.is_finite() || size < 0.0 {
                return Err(format!(
                    "point {}: size {size} must be a non-negative number",
                    i + 1
                ));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(format!(
                    "point {}: probability {p} must lie in [0, 1]",
                    i + 1
                ));
            }
            if i > 0 {
                let (prev_size, prev_p) = points[i - 1];
                if size < prev_size {
                    return Err(format!("point {}: size {size} is below the previous {prev_size}; sizes must not decrease", i + 1));
                }
                if p < prev_p {
                    return Err(format!("point {}: probability {p} is below the previous {prev_p}; a CDF must not decrease", i + 1));
                }
            }
        }
        let last = points[points.len() - 1].1;
        if (last - 1.0).abs() > 1e-9 {
            return Err(format!(
                "the last probability is {last}; a CDF must end at 1"
            ));
        }
        Ok(SizeCdf { points })
    }

    /// Parses "size probability" lines (blank lines and '#' comments allowed); sizes are
    /// multiplied by `unit_bytes` (1 for bytes, e.g. 1460 for files in packets).
    pub fn parse(text: &str, unit_bytes: f64) -> Result<SizeCdf, String> {
        let mut points = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|f| !f.is_empty())
                .collect();
            let parsed = match fields.as_slice() {
                [s, p] => s.parse::<f64>().ok().zip(p.parse::<f64>().ok()),
                _ => None,
            };
            let (size, p) = parsed.ok_or_else(|| {
                format!("line {}: expected 'size probability', got '{line}'", n + 1)
            })?;
            points.push((size * unit_bytes, p));
        }
        SizeCdf::new(points)
    }

    /// A size in bytes (at least 1).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        let i = self.points.partition_point(|&(_, p)| p <= u);
        let size = if i == 0 {
            self.points[0].0
        } else if i == self.points.len() {
            self.points[i - 1].0
        } else {
            let (s0, p0) = self.points[i - 1];
            let (s1, p1) = self.points[i];
            s0 + (s1 - s0) * (u - p0) / (p1 - p0)
        };
        (size.round() as u64).max(1)
    }

    /// The distribution's mean in bytes.
    pub fn mean(&self) -> f64 {
        let (s0, p0) = self.points[0];
        let mut mean = s0 * p0;
        for w in self.points.windows(2) {
            let ((a, pa), (b, pb)) = (w[0], w[1]);
            mean += (pb - pa) * (a + b) / 2.0;
        }
        mean
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

/// Flows of `sizes` whose sources and destinations follow `pattern` and whose start
/// times follow `arrivals` within [start, stop).
#[derive(Clone, Debug)]
pub struct FlowWorkload {
    pub pattern: Pattern,
    pub arrivals: ArrivalProcess,
    pub sizes: SizeCdf,
    pub start: Time,
    pub stop: Time,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowArrival {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start: Time,
}

/// The switch each host hangs off (its first link's far end), by host address.
pub fn racks(topo: &Topology) -> Vec<u32> {
    let adjacency = topo.adjacency();
    topo.hosts
        .iter()
        .map(|&h| {
            adjacency[h as usize]
                .first()
                .map_or(u32::MAX, |&(peer, _)| peer)
        })
        .collect()
}

/// The rate of each host's (first) access link, by host address.
pub fn access_rates(topo: &Topology) -> Vec<Rate> {
    let adjacency = topo.adjacency();
    topo.hosts
        .iter()
        .map(|&h| {
            adjacency[h as usize]
                .first()
                .map_or(0, |&(_, link)| topo.links[link as usize].spec.rate)
        })
        .collect()
}

/// Workload stream of the pattern's own random choices; sender h draws from
/// `stream_base + h`.
pub const PATTERN_STREAM: u64 = 1 << 31;

/// The most flows one workload may make (each costs about 100 bytes in the engine).
pub const MAX_FLOWS: usize = 10_000_000;

impl FlowWorkload {
    /// Every sender's flows, merged in time order. Sender h draws its arrival times,
    /// destinations and sizes from workload stream `stream_base + h`, so senders are
    /// independent of each other.
    pub fn generate(
        &self,
        topo: &Topology,
        seed: u64,
        stream_base: u64,
    ) -> Result<Vec<FlowArrival>, String> {
        self.arrivals.validate()?;
        if self.stop <= self.start {
            return Err("the arrival window's stop must come after its start".into());
        }
        let destinations = self
            .pattern
            .destinations(topo, seed, stream_base + PATTERN_STREAM)?;
        let rates = access_rates(topo);
        let senders: Vec<u32> = destinations.senders().collect();
        let mut flows = Vec::new();
        for &src in &senders {
            let mut rng = Rng::stream(seed, Stream::Workload, stream_base + src as u64);
            let context = arrivals::SenderContext {
                access_rate: rates[src as usize],
                mean_size: self.sizes.mean(),
                senders: senders.len(),
            };
            let mut clock = self.arrivals.clock((self.start, self.stop), context);
            let mut nth = 0;
            while let Some(start) = clock.next(&mut rng) {
                if flows.len() >= MAX_FLOWS {
                    return Err(format!(
                        "this workload would make more than {MAX_FLOWS} flows; lower the load, \
                         the count or the window"
                    ));
                }
                let dst = destinations.choose(src, nth, &mut rng);
                let size = self.sizes.sample(&mut rng);
                flows.push(FlowArrival {
                    src,
                    dst,
                    size,
                    start,
                });
                nth += 1;
            }
        }
        flows.sort_by_key(|f| (f.start, f.src));
        Ok(flows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::leaf_spine;
    use crate::topology::LinkSpec;
    use crate::units::{MS, US};

    const WEBSEARCH: &str = "0 0\n10000 0.15\n20000 0.2\n30000 0.3\n50000 0.4\n80000 0.53\n200000 0.6\n1000000 0.7\n2000000 0.8\n5000000 0.9\n10000000 0.97\n30000000 1\n";

    #[test]
    fn websearch_mean_matches_the_reference() {
        let cdf = SizeCdf::parse(WEBSEARCH, 1.0).unwrap();
        // ARCHITECTURE.md section 6: mean 1.71 MB with linear interpolation.
        assert!((cdf.mean() - 1_711_250.0).abs() < 1e-6, "{}", cdf.mean());
    }

    /// Kolmogorov-Smirnov distance between samples and the CDF, at the breakpoints and
    /// halfway between them.
    #[test]
    fn samples_follow_the_file_kolmogorov_smirnov() {
        let cdf = SizeCdf::parse(WEBSEARCH, 1.0).unwrap();
        let mut rng = Rng::stream(1, Stream::Workload, 0);
        let n = 100_000;
        let mut samples: Vec<u64> = (0..n).map(|_| cdf.sample(&mut rng)).collect();
        samples.sort_unstable();
        let theoretical = |x: f64| {
            let p = cdf.points();
            let i = p.partition_point(|&(s, _)| s <= x);
            if i == 0 {
                0.0
            } else if i == p.len() {
                1.0
            } else {
                p[i - 1].1 + (p[i].1 - p[i - 1].1) * (x - p[i - 1].0) / (p[i].0 - p[i - 1].0)
            }
        };
        let mut d: f64 = 0.0;
        for w in cdf.points().windows(2) {
            for x in [w[0].0, (w[0].0 + w[1].0) / 2.0, w[1].0] {
                let empirical = samples.partition_point(|&s| (s as f64) <= x) as f64 / n as f64;
                d = d.max((empirical - theoretical(x)).abs());
            }
        }
        // Critical value at alpha = 0.001: 1.95 / sqrt(n).
        assert!(d < 1.95 / (n as f64).sqrt(), "KS distance {d}");
    }

    #[test]
    fn a_first_point_above_zero_is_a_point_mass() {
        let cdf = SizeCdf::parse("100 0.5\n200 1\n", 1.0).unwrap();
        let mut rng = Rng::stream(2, Stream::Workload, 0);
        let at_100 = (0..10_000).filter(|_| cdf.sample(&mut rng) == 100).count();
        assert!((at_100 as f64 / 10_000.0 - 0.5).abs() < 0.02, "{at_100}");
        assert!((cdf.mean() - 125.0).abs() < 1e-9);
    }

    #[test]
    fn malformed_cdfs_are_refused_with_the_line() {
        assert!(SizeCdf::parse("10 0.5\n5 1\n", 1.0)
            .unwrap_err()
            .contains("point 2: size 5 is below"));
        assert!(SizeCdf::parse("10 0.5\n20 0.4\n30 1", 1.0)
            .unwrap_err()
            .contains("must not decrease"));
        assert!(SizeCdf::parse("10 0.5\n20 0.9\n", 1.0)
            .unwrap_err()
            .contains("must end at 1"));
        assert!(SizeCdf::parse("10 0.5\nabc\n", 1.0)
            .unwrap_err()
            .contains("line 2"));
        assert!(SizeCdf::parse("10 1.5\n", 1.0)
            .unwrap_err()
            .contains("[0, 1]"));
    }

    #[test]
    fn poisson_arrivals_offer_the_target_load() {
        let link = LinkSpec {
            rate: 10_000_000_000,
            delay: US,
        };
        let topo = leaf_spine(2, 4, 8, link, link).unwrap();
        let workload = FlowWorkload {
            pattern: Pattern::OtherRacks,
            arrivals: ArrivalProcess::Poisson { load: 0.5 },
            sizes: SizeCdf::parse(WEBSEARCH, 1.0).unwrap(),
            start: 0,
            stop: 2000 * MS,
        };
        let flows = workload.generate(&topo, 7, 0).unwrap();
        let offered: u64 = flows.iter().map(|f| f.size).sum();
        let target = 0.5 * 10e9 / 8.0 * 2.0 * 32.0;
        assert!(
            (offered as f64 / target - 1.0).abs() < 0.03,
            "offered {offered} vs {target}"
        );
        assert!(flows.iter().all(|f| f.src / 8 != f.dst / 8));
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
    }
}
