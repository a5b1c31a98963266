//! Communication patterns: which hosts send, and to whom each of a sender's flows goes.

use crate::rng::{Rng, Stream};
use crate::topology::Topology;

/// Who talks to whom. A sender's flows go to one of its destinations: uniformly at
/// random, except `AllToAll`, which cycles through every other host in turn.
/// Patterns that list every host's possible destinations hold at most this many.
pub const MAX_DESTINATION_PAIRS: u128 = 50_000_000;

/// Who sends to whom; crosses as one value tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Pattern {
    /// Every host sends; each flow to a uniformly random other host.
    Random,
    /// Every host sends; each flow to a uniformly random host on another switch.
    OtherRacks,
    /// Every host sends to every other host, round-robin.
    AllToAll,
    /// Every host sends to one other and receives from one (a random derangement).
    Permutation,
    /// Host h sends to host (h + stride) mod n.
    Stride { stride: u32 },
    /// `senders` random hosts send to `receiver` (N-to-1).
    Incast { receiver: u32, senders: u32 },
    /// `sender` sends to `receivers` random other hosts (1-to-N).
    OneToMany { sender: u32, receivers: u32 },
}

/// How a sender picks among its destinations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Uniform,
    RoundRobin,
}

/// Each host's destinations (empty: the host does not send) and how to pick among them.
#[derive(Clone, Debug)]
pub struct Destinations {
    pub per_host: Vec<Vec<u32>>,
    pub pick: Pick,
}

impl Destinations {
    /// The destination of `src`'s `nth` flow.
    pub fn choose(&self, src: u32, nth: u64, rng: &mut Rng) -> u32 {
        let set = &self.per_host[src as usize];
        match self.pick {
            Pick::Uniform => set[rng.below(set.len() as u64) as usize],
            Pick::RoundRobin => set[(nth % set.len() as u64) as usize],
        }
    }

    pub fn senders(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.per_host.len() as u32).filter(|&h| !self.per_host[h as usize].is_empty())
    }
}

/// `count` distinct hosts other than `except`, chosen uniformly.
fn distinct_others(hosts: u32, except: u32, count: u32, rng: &mut Rng) -> Vec<u32> {
    let mut pool: Vec<u32> = (0..hosts).filter(|&h| h != except).collect();
    for i in 0..count as usize {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(count as usize);
    pool.sort_unstable();
    pool
}

impl Pattern {
    /// The pattern on `topo`'s hosts; random choices come from workload stream `stream`.
    pub fn destinations(
        &self,
        topo: &Topology,
        seed: u64,
        stream: u64,
    ) -> Result<Destinations, String> {
        let n = topo.num_hosts() as u32;
        if n < 2 {
            return Err(format!(
                "a traffic pattern needs at least 2 hosts, the topology has {n}"
            ));
        }
        let mut rng = Rng::stream(seed, Stream::Workload, stream);
        let check_host = |name: &str, h: u32| {
            if h >= n {
                Err(format!(
                    "{name} {h} does not exist; hosts are numbered 0..{}",
                    n - 1
                ))
            } else {
                Ok(())
            }
        };
        let check_count = |name: &str, c: u32| {
            if c == 0 || c > n - 1 {
                Err(format!(
                    "{name} must be between 1 and {} (the other hosts), got {c}",
                    n - 1
                ))
            } else {
                Ok(())
            }
        };
        let listed = matches!(
            self,
            Pattern::Random | Pattern::AllToAll | Pattern::OtherRacks
        );
        let pairs = n as u128 * (n as u128).saturating_sub(1);
        if listed && pairs > MAX_DESTINATION_PAIRS {
            return Err(format!(
                "this pattern over {n} hosts lists {pairs} (source, destination) pairs; at \
                 most {MAX_DESTINATION_PAIRS} are supported: use fewer hosts or a pattern \
                 with fewer destinations (permutation, stride, incast)"
            ));
        }
        let all_others = |h: u32| (0..n).filter(move |&d| d != h).collect::<Vec<u32>>();
        let mut per_host = vec![Vec::new(); n as usize];
        let mut pick = Pick::Uniform;
        match *self {
            Pattern::Random => per_host = (0..n).map(all_others).collect(),
            Pattern::AllToAll => {
                per_host = (0..n).map(all_others).collect();
                pick = Pick::RoundRobin;
            }
            Pattern::OtherRacks => {
                let racks = super::racks(topo);
                for h in 0..n {
                    per_host[h as usize] = (0..n)
                        .filter(|&d| racks[d as usize] != racks[h as usize])
                        .collect();
                    if per_host[h as usize].is_empty() {
                        return Err(format!(
                            "host {h} has no destination on another rack (every host shares its rack); use pattern 'random'"
                        ));
                    }
                }
            }
            Pattern::Permutation => {
                for (h, d) in rng.derangement(n as usize).into_iter().enumerate() {
                    per_host[h] = vec![d];
                }
            }
            Pattern::Stride { stride } => {
                if stride % n == 0 {
                    return Err(format!(
                        "stride must not be a multiple of the host count {n} (host h would send to itself), got {stride}"
                    ));
                }
                for h in 0..n {
                    per_host[h as usize] = vec![((h as u64 + stride as u64) % n as u64) as u32];
                }
            }
            Pattern::Incast { receiver, senders } => {
                check_host("receiver", receiver)?;
                check_count("senders", senders)?;
                for s in distinct_others(n, receiver, senders, &mut rng) {
                    per_host[s as usize] = vec![receiver];
                }
            }
            Pattern::OneToMany { sender, receivers } => {
                check_host("sender", sender)?;
                check_count("receivers", receivers)?;
                per_host[sender as usize] = distinct_others(n, sender, receivers, &mut rng);
            }
        }
        Ok(Destinations { per_host, pick })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::leaf_spine;
    use crate::topology::LinkSpec;

    fn fabric() -> Topology {
        let link = LinkSpec {
            rate: 10_000_000_000,
            delay: 1_000_000,
        };
        leaf_spine(2, 4, 4, link, link).unwrap()
    }

    #[test]
    fn patterns_have_their_shapes() {
        let topo = fabric();
        let d = |p: Pattern| p.destinations(&topo, 3, 0).unwrap();
        let perm = d(Pattern::Permutation);
        let mut receivers: Vec<u32> = perm.per_host.iter().map(|s| s[0]).collect();
        assert!(receivers.iter().enumerate().all(|(h, &r)| r != h as u32));
        receivers.sort_unstable();
        assert_eq!(
            receivers,
            (0..16).collect::<Vec<_>>(),
            "each host receives once"
        );
        let stride = d(Pattern::Stride { stride: 4 });
        assert!(stride
            .per_host
            .iter()
            .enumerate()
            .all(|(h, s)| s == &[(h as u32 + 4) % 16]));
        let incast = d(Pattern::Incast {
            receiver: 5,
            senders: 8,
        });
        assert_eq!(incast.senders().count(), 8);
        assert!(incast
            .senders()
            .all(|s| s != 5 && incast.per_host[s as usize] == [5]));
        let fan = d(Pattern::OneToMany {
            sender: 2,
            receivers: 15,
        });
        assert_eq!(fan.senders().collect::<Vec<_>>(), vec![2]);
        assert_eq!(fan.per_host[2].len(), 15);
        let racks = d(Pattern::OtherRacks);
        assert!(racks.per_host[0].iter().all(|&h| h / 4 != 0));
    }

    #[test]
    fn all_to_all_covers_every_pair_evenly() {
        let topo = fabric();
        let d = Pattern::AllToAll.destinations(&topo, 1, 0).unwrap();
        let mut rng = Rng::stream(1, Stream::Workload, 9);
        let mut counts = vec![0u32; 16];
        for nth in 0..150 {
            counts[d.choose(7, nth, &mut rng) as usize] += 1;
        }
        assert_eq!(counts[7], 0);
        assert!(
            counts.iter().enumerate().all(|(h, &c)| h == 7 || c == 10),
            "{counts:?}"
        );
    }

    #[test]
    fn impossible_patterns_are_named() {
        let topo = fabric();
        let err = |p: Pattern| p.destinations(&topo, 1, 0).unwrap_err();
        assert!(err(Pattern::Stride { stride: 16 }).contains("stride"));
        assert!(err(Pattern::Incast {
            receiver: 16,
            senders: 2
        })
        .contains("receiver 16"));
        assert!(err(Pattern::Incast {
            receiver: 0,
            senders: 16
        })
        .contains("senders"));
        assert!(err(Pattern::OneToMany {
            sender: 0,
            receivers: 0
        })
        .contains("receivers"));
    }
}
