//! Communication patterns: which hosts send, and to whom each of a sender's flows goes.

use crate::rng::{Rng, Stream};
use crate::topology::Topology;

/// Who talks to whom. A sender's flows go to one of its destinations: uniformly at
/// random, except `AllToAll`, which cycles through every other host in turn.
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

/// Each host's destinations (none: the host does not send) and how to pick among them.
#[derive(Clone, Debug)]
pub struct Destinations {
    sets: Sets,
    pick: Pick,
}

/// The destination sets, listed where they are few, drawn by index where every host
/// has nearly every other (10,240 hosts would list 10^8 pairs).
#[derive(Clone, Debug)]
enum Sets {
    Listed(Vec<Vec<u32>>),
    /// Every host sends to every other.
    AllOthers {
        hosts: u32,
    },
    /// Every host sends to every host on another rack: each host's rack, and each
    /// rack's hosts in ascending order.
    OtherRacks {
        rack_of: Vec<u32>,
        members: Vec<Vec<u32>>,
    },
}

impl Destinations {
    /// The destination of `src`'s `nth` flow: the `i`-th of its destinations in
    /// ascending order, `i` drawn uniformly or `nth` in turn.
    pub fn choose(&self, src: u32, nth: u64, rng: &mut Rng) -> u32 {
        let mut index = |len: u64| match self.pick {
            Pick::Uniform => rng.below(len),
            Pick::RoundRobin => nth % len,
        };
        match &self.sets {
            Sets::Listed(per_host) => {
                let set = &per_host[src as usize];
                set[index(set.len() as u64) as usize]
            }
            Sets::AllOthers { hosts } => {
                let i = index(*hosts as u64 - 1) as u32;
                i + (i >= src) as u32
            }
            Sets::OtherRacks { rack_of, members } => {
                let own = &members[rack_of[src as usize] as usize];
                let hosts = rack_of.len() as u64;
                // The i-th host not in `own`: step over each of its hosts at or below.
                let mut d = index(hosts - own.len() as u64) as u32;
                for &h in own {
                    if h <= d {
                        d += 1;
                    } else {
                        break;
                    }
                }
                d
            }
        }
    }

    /// Host `src`'s destinations in ascending order (listed: for tests and reports).
    pub fn of(&self, src: u32) -> Vec<u32> {
        match &self.sets {
            Sets::Listed(per_host) => per_host[src as usize].clone(),
            Sets::AllOthers { hosts } => (0..*hosts).filter(|&d| d != src).collect(),
            Sets::OtherRacks { rack_of, .. } => (0..rack_of.len() as u32)
                .filter(|&d| rack_of[d as usize] != rack_of[src as usize])
                .collect(),
        }
    }

    pub fn senders(&self) -> impl Iterator<Item = u32> + '_ {
        let (hosts, listed) = match &self.sets {
            Sets::Listed(per_host) => (per_host.len() as u32, Some(per_host)),
            Sets::AllOthers { hosts } => (*hosts, None),
            Sets::OtherRacks { rack_of, .. } => (rack_of.len() as u32, None),
        };
        (0..hosts).filter(move |&h| listed.is_none_or(|sets| !sets[h as usize].is_empty()))
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
        let mut per_host = vec![Vec::new(); n as usize];
        let pick = Pick::Uniform;
        match *self {
            Pattern::Random => {
                return Ok(Destinations {
                    sets: Sets::AllOthers { hosts: n },
                    pick,
                })
            }
            Pattern::AllToAll => {
                return Ok(Destinations {
                    sets: Sets::AllOthers { hosts: n },
                    pick: Pick::RoundRobin,
                })
            }
            Pattern::OtherRacks => {
                let switches = super::racks(topo);
                let mut index = std::collections::HashMap::new();
                let mut members: Vec<Vec<u32>> = Vec::new();
                let mut rack_of = Vec::with_capacity(n as usize);
                for (h, switch) in switches.iter().enumerate() {
                    let rack = *index.entry(*switch).or_insert_with(|| {
                        members.push(Vec::new());
                        members.len() - 1
                    });
                    members[rack].push(h as u32);
                    rack_of.push(rack as u32);
                }
                if let Some(h) =
                    (0..n).find(|&h| members[rack_of[h as usize] as usize].len() == n as usize)
                {
                    return Err(format!(
                        "host {h} has no destination on another rack (every host shares its rack); use pattern 'random'"
                    ));
                }
                return Ok(Destinations {
                    sets: Sets::OtherRacks { rack_of, members },
                    pick,
                });
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
        Ok(Destinations {
            sets: Sets::Listed(per_host),
            pick,
        })
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
        let mut receivers: Vec<u32> = (0..16).map(|h| perm.of(h)[0]).collect();
        assert!(receivers.iter().enumerate().all(|(h, &r)| r != h as u32));
        receivers.sort_unstable();
        assert_eq!(
            receivers,
            (0..16).collect::<Vec<_>>(),
            "each host receives once"
        );
        let stride = d(Pattern::Stride { stride: 4 });
        assert!((0..16).all(|h| stride.of(h) == [(h + 4) % 16]));
        let incast = d(Pattern::Incast {
            receiver: 5,
            senders: 8,
        });
        assert_eq!(incast.senders().count(), 8);
        assert!(incast.senders().all(|s| s != 5 && incast.of(s) == [5]));
        let fan = d(Pattern::OneToMany {
            sender: 2,
            receivers: 15,
        });
        assert_eq!(fan.senders().collect::<Vec<_>>(), vec![2]);
        assert_eq!(fan.of(2).len(), 15);
        let racks = d(Pattern::OtherRacks);
        assert!(racks.of(0).iter().all(|&h| h / 4 != 0));
        assert_eq!(racks.of(5).len(), 12);
    }

    /// Drawn by index, a destination is what indexing the listed set gives: every
    /// host's draws from one stream are those of the list (what runs drew before the
    /// sets stopped being listed), and they cover it.
    #[test]
    fn drawn_destinations_are_those_of_the_listed_sets() {
        let topo = fabric();
        for pattern in [Pattern::Random, Pattern::OtherRacks, Pattern::AllToAll] {
            let d = pattern.destinations(&topo, 4, 0).unwrap();
            for src in 0..16 {
                let listed = d.of(src);
                let (mut drawn, mut by_list) = (
                    Rng::stream(4, Stream::Workload, 1),
                    Rng::stream(4, Stream::Workload, 1),
                );
                let mut seen = std::collections::BTreeSet::new();
                for nth in 0..400 {
                    let dst = d.choose(src, nth, &mut drawn);
                    let i = match pattern {
                        Pattern::AllToAll => nth % listed.len() as u64,
                        _ => by_list.below(listed.len() as u64),
                    };
                    assert_eq!(
                        dst, listed[i as usize],
                        "{pattern:?} from {src}, flow {nth}"
                    );
                    seen.insert(dst);
                }
                assert_eq!(seen.into_iter().collect::<Vec<_>>(), listed);
            }
        }
    }

    #[test]
    fn ten_thousand_hosts_need_no_list_of_pairs() {
        let link = LinkSpec {
            rate: 10_000_000_000,
            delay: 1_000_000,
        };
        let big = leaf_spine(8, 640, 16, link, link).unwrap();
        let d = Pattern::OtherRacks.destinations(&big, 1, 0).unwrap();
        let mut rng = Rng::stream(1, Stream::Workload, 2);
        for _ in 0..1000 {
            let dst = d.choose(20, 0, &mut rng);
            assert!(dst < 10_240 && dst / 16 != 20 / 16);
        }
        assert_eq!(d.senders().count(), 10_240);
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
