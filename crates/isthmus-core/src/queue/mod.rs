//! A port's egress queueing: which packet to send next (the scheduler) and how long
//! queues may grow, which packet to drop or mark (the AQM, one instance per queue),
//! within one buffer limit for the whole port.
//!
//! Schedulers:
//! - `Fifo`: one queue;
//! - `StrictPriority`: one queue per class; class 0 first, a lower class only when every
//!   higher one is empty;
//! - `Drr`: deficit round robin over the classes, each allowed its quantum of bytes per
//!   round (Shreedhar & Varghese 1995);
//! - `Wfq`: weighted fair queueing over the classes, by self-clocked finish tags
//!   (SCFQ, Golestani 1994);
//! - `Fq`: a queue per flow, each with its own AQM instance, served by RFC 8290's
//!   deficit round robin with new flows first (FQ-CoDel's scheduler);
//! - `Pifo`: one push-in first-out queue ordered by a rank function: arrival time
//!   (FIFO), the flow's remaining bytes (SRPT, as pFabric), start-time fair queueing's
//!   virtual start tag, or an earliest-deadline tag (the packet's creation time plus its
//!   class's delay budget: a deadline PIFO has a class per budget); a full PIFO evicts
//!   its worst rank.
//!
//! A packet's class is its priority field, capped at the last class. The buffer holds
//! packets waiting for the transmitter. With several classes (strict priority, DRR,
//! WFQ) each class queue has the whole `limit` to itself, as switches give each egress
//! queue its own share (one shared pool would let a class that drains slowly crowd out
//! the others and undo the weights); a full class queue drops the arrival. FQ and PIFO
//! share one `limit` per port; a full FQ drops from the longest flow's head (RFC 8290),
//! a full PIFO pushes out its worst rank.

pub mod aqm;

use crate::flowtable::KeyMap;
use crate::packet::PacketId;
use crate::rng::Rng;
use crate::units::{Limit, Time};
pub use aqm::{Aqm, AqmConfig, QueueView, Verdict};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// How a PIFO ranks packets (lower ranks leave first). Serialised beside the PIFO's
/// kind: `{"kind": "pifo", "rank": "deadline", "budgets": [...]}`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "rank", rename_all = "snake_case")]
pub enum Rank {
    /// Arrival time: a FIFO.
    Arrival,
    /// The flow's bytes still to send when the packet left its host (pFabric's SRPT).
    RemainingSize,
    /// Start-time fair queueing's virtual start tag: per-flow fair shares.
    StartTime,
    /// Creation time plus a per-class delay budget: earliest deadline first.
    Deadline {
        /// Each class's delay budget.
        #[schemars(length(min = 1, max = MAX_CLASSES), extend("unit" = "ps"))]
        budgets: Vec<Time>,
    },
}

/// Traffic classes a port's scheduler may serve: the engine keeps per-class counters
/// (and deficits, finish times, AQMs) on every port, so a class costs memory on all.
pub const MAX_CLASSES: usize = 64;

/// Which of a port's waiting packets goes next.
// Serialised tagged by `kind`. Unlike the other configurations it cannot refuse an
// unknown field (serde does not combine that with PIFO's flattened rank); Python's
// scheduler models refuse one before it gets here.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SchedulerConfig {
    /// First in, first out.
    Fifo,
    /// One queue per class (the packet's priority field); class 0 is served first.
    StrictPriority {
        /// Classes served.
        #[schemars(range(min = 1, max = MAX_CLASSES))]
        classes: u8,
    },
    /// Deficit round robin: each class may send `quanta[c]` bytes per round.
    Drr {
        /// Each class's bytes per round.
        #[schemars(length(min = 1, max = MAX_CLASSES), extend("unit" = "bytes", "item_minimum" = 1))]
        quanta: Vec<u32>,
    },
    /// Weighted fair queueing (self-clocked): class c gets weights[c] / sum of shares.
    Wfq {
        /// Each class's share.
        #[schemars(length(min = 1, max = MAX_CLASSES), extend("item_minimum" = 1))]
        weights: Vec<u32>,
    },
    /// A queue per flow, each with its own AQM, served round robin (RFC 8290).
    Fq {
        /// Bytes a flow may send per round.
        #[serde(default = "fq_quantum")]
        #[schemars(extend("unit" = "bytes", "exclusiveMinimum" = 0))]
        quantum: u32,
    },
    /// Push-in first-out by rank.
    Pifo {
        #[serde(flatten)]
        rank: Rank,
    },
}

/// Packets a device FIFO below a port's discipline may hold.
pub const MAX_DEVICE_QUEUE: u32 = 1_000_000;

/// FQ-CoDel's customary quantum: one full Ethernet frame.
fn fq_quantum() -> u32 {
    1514
}

/// Everything about one port's queueing; it can be replaced while a simulation runs.
// Crosses into the engine as one serialised value (`class_aqm` and `device_queue` may
// be left out: none, 0).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Most the port's queues hold together.
    pub limit: Limit,
    /// Which packet goes next.
    pub scheduler: SchedulerConfig,
    /// The AQM of every queue of the port but those `class_aqm` sets.
    pub aqm: AqmConfig,
    /// Class c's AQM where `class_aqm[c]` is set, instead of `aqm` (ECN marking tuned
    /// per class, say).
    #[serde(default)]
    pub class_aqm: Vec<Option<AqmConfig>>,
    /// Packets the device holds below the queue discipline (ns-3's point-to-point
    /// keeps 100), 0 for none: the discipline hands packets down whenever the device
    /// has room, so its AQM and limit see only what waits above the device.
    #[serde(default)]
    #[schemars(range(max = MAX_DEVICE_QUEUE), extend("unit" = "packets"))]
    pub device_queue: u32,
}

impl QueueConfig {
    pub fn drop_tail(limit: Limit) -> QueueConfig {
        QueueConfig {
            limit,
            scheduler: SchedulerConfig::Fifo,
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        }
    }

    /// The AQM class `class`'s queue runs.
    pub fn aqm_of(&self, class: usize) -> &AqmConfig {
        self.class_aqm
            .get(class)
            .and_then(Option::as_ref)
            .unwrap_or(&self.aqm)
    }

    /// A FIFO marking ECN above `k` (the DCTCP switch).
    pub fn step_marking(limit: Limit, k: Limit) -> QueueConfig {
        QueueConfig {
            limit,
            scheduler: SchedulerConfig::Fifo,
            aqm: AqmConfig::step(k),
            class_aqm: Vec::new(),
            device_queue: 0,
        }
    }

    pub fn classes(&self) -> usize {
        match &self.scheduler {
            // A deadline PIFO's classes are its budgets: one heap, a budget per class.
            SchedulerConfig::Pifo {
                rank: Rank::Deadline { budgets },
            } => budgets.len(),
            SchedulerConfig::Fifo | SchedulerConfig::Fq { .. } | SchedulerConfig::Pifo { .. } => 1,
            SchedulerConfig::StrictPriority { classes } => *classes as usize,
            SchedulerConfig::Drr { quanta } => quanta.len(),
            SchedulerConfig::Wfq { weights } => weights.len(),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.aqm.validate()?;
        for aqm in self.class_aqm.iter().flatten() {
            aqm.validate()?;
        }
        if self.class_aqm.len() > self.classes() {
            return Err(format!(
                "per-class AQMs given for {} classes, but the scheduler has {}",
                self.class_aqm.len(),
                self.classes()
            ));
        }
        if self.classes() > MAX_CLASSES {
            return Err(format!(
                "{} traffic classes is more than the {MAX_CLASSES} a port may serve",
                self.classes()
            ));
        }
        if self.device_queue > MAX_DEVICE_QUEUE {
            return Err(format!(
                "device_queue {} packets is more than the {MAX_DEVICE_QUEUE} a device may hold",
                self.device_queue
            ));
        }
        if matches!(self.limit, Limit::Packets(0) | Limit::Bytes(0)) {
            return Err("a queue limit must be greater than zero".into());
        }
        match &self.scheduler {
            SchedulerConfig::StrictPriority { classes: 0 } => {
                Err("strict priority needs at least one class".into())
            }
            SchedulerConfig::Drr { quanta } if quanta.is_empty() || quanta.contains(&0) => {
                Err("DRR needs one positive quantum (bytes) per class".into())
            }
            SchedulerConfig::Wfq { weights } if weights.is_empty() || weights.contains(&0) => {
                Err("WFQ needs one positive weight per class".into())
            }
            SchedulerConfig::Fq { quantum: 0 } => Err("FQ needs a positive quantum (bytes)".into()),
            SchedulerConfig::Pifo {
                rank: Rank::Deadline { budgets },
            } if budgets.is_empty() => {
                Err("a deadline rank needs one delay budget per class".into())
            }
            _ => Ok(()),
        }
    }
}

/// What a PIFO ranks a packet by beyond its arrival: the flow's bytes still to send
/// when the packet left its host (SRPT), and when its transport created it (deadlines).
#[derive(Clone, Copy, Debug, Default)]
pub struct RankInputs {
    pub remaining: u64,
    pub created: Time,
}

impl RankInputs {
    pub fn remaining(remaining: u64) -> RankInputs {
        RankInputs {
            remaining,
            created: 0,
        }
    }
}

/// A packet waiting in a queue, with what the queue needs to know about it.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub pkt: PacketId,
    pub size: u32,
    pub enqueued: Time,
    pub ect: bool,
    pub flow: u32,
    pub class: u8,
}

impl Queued {
    pub fn new(
        pkt: PacketId,
        size: u32,
        enqueued: Time,
        ect: bool,
        flow: u32,
        class: u8,
    ) -> Queued {
        Queued {
            pkt,
            size,
            enqueued,
            ect,
            flow,
            class,
        }
    }
}

/// Counters of one queue (a class, or all of FQ's flows together).
#[derive(Clone, Debug, Default)]
pub struct QueueCounters {
    pub enqueued: u64,
    pub dequeued: u64,
    pub dequeued_bytes: u64,
    /// Dropped for want of buffer (tail drops, evictions).
    pub buffer_drops: u64,
    /// Dropped by the AQM.
    pub aqm_drops: u64,
    pub aqm_marks: u64,
    /// Sum over dequeued packets of their time in the queue.
    pub sojourn_ps: u64,
    pub max_packets: u64,
}

/// Per-class counters, the first class's inline: most queues have one class, and every
/// packet moves its counters, so they sit in the port's lines rather than behind a
/// pointer (at xl1024's peak that pointer missed the cache on about one hop in twenty).
#[derive(Clone, Debug)]
pub struct ClassCounters {
    first: QueueCounters,
    rest: Vec<QueueCounters>,
}

impl ClassCounters {
    fn new(classes: usize) -> ClassCounters {
        ClassCounters {
            first: QueueCounters::default(),
            rest: vec![QueueCounters::default(); classes.saturating_sub(1)],
        }
    }

    /// How many classes there are (at least one).
    pub fn classes(&self) -> usize {
        1 + self.rest.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueueCounters> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut QueueCounters> {
        std::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }
}

impl std::ops::Index<usize> for ClassCounters {
    type Output = QueueCounters;

    #[inline]
    fn index(&self, class: usize) -> &QueueCounters {
        match class {
            0 => &self.first,
            c => &self.rest[c - 1],
        }
    }
}

impl std::ops::IndexMut<usize> for ClassCounters {
    #[inline]
    fn index_mut(&mut self, class: usize) -> &mut QueueCounters {
        match class {
            0 => &mut self.first,
            c => &mut self.rest[c - 1],
        }
    }
}

/// One FIFO with its AQM. Under WFQ each packet's finish tag waits beside it in
/// `finish_tags` (empty under the other schedulers, so a queue entry stays 24 bytes).
#[derive(Clone, Debug)]
struct SubQueue {
    fifo: VecDeque<Queued>,
    bytes: u64,
    aqm: Aqm,
    finish_tags: VecDeque<f64>,
}

impl SubQueue {
    fn new(aqm: &AqmConfig) -> SubQueue {
        SubQueue {
            fifo: VecDeque::new(),
            bytes: 0,
            aqm: Aqm::new(aqm.clone()),
            finish_tags: VecDeque::new(),
        }
    }

    fn push(&mut self, q: Queued) {
        self.bytes += q.size as u64;
        self.fifo.push_back(q);
    }

    /// Appends a packet with its WFQ finish tag.
    fn push_tagged(&mut self, q: Queued, finish: f64) {
        self.push(q);
        self.finish_tags.push_back(finish);
        debug_assert_eq!(
            self.finish_tags.len(),
            self.fifo.len(),
            "a WFQ queue holds a finish tag for every packet (all come through push_tagged)"
        );
    }

    fn pop(&mut self) -> Option<Queued> {
        let q = self.fifo.pop_front()?;
        self.bytes -= q.size as u64;
        self.finish_tags.pop_front();
        Some(q)
    }
}

/// A packet arriving at a port's queue, with what its discipline decides on.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    pub item: Queued,
    /// The flow's bytes still to send and the packet's creation time (PIFO ranks by
    /// them).
    pub rank: RankInputs,
    /// The queueing delay the packet is expected to face (PIE decides on it).
    pub delay: Time,
    /// A PFC-protected class at a switch: admitted past the port's limit, since PFC
    /// bounds what its ingress may send and the egress holds what arrives (the switch's
    /// headroom), as lossless switches do.
    pub lossless: bool,
}

/// Packets' room an emptied queue keeps (see `PortQueue::release_room`).
const KEPT_ROOM: usize = 16;

/// How a port's class queues take turns (the schedulers that keep a FIFO per class).
#[derive(Clone, Debug)]
enum ClassPolicy {
    /// The lowest non-empty class first: FIFO (one class) and strict priority.
    LowestFirst,
    Drr {
        quanta: Vec<u32>,
    },
    Wfq {
        weights: Vec<u32>,
    },
}

/// A queue discipline's state, each kind holding its own settings, so that every
/// operation dispatches once, on this.
#[derive(Clone, Debug)]
enum State {
    Classes {
        policy: ClassPolicy,
        queues: Vec<SubQueue>,
        deficits: Vec<i64>,
        active: VecDeque<usize>,
        /// DRR: the class at the front of `active` has had its quantum this round.
        front_credited: bool,
        finish: Vec<f64>,
        virtual_time: f64,
    },
    Fq {
        quantum: i64,
        flows: KeyMap<u32, (SubQueue, i64)>,
        new_flows: VecDeque<u32>,
        old_flows: VecDeque<u32>,
    },
    Pifo {
        ranking: Rank,
        heap: BinaryHeap<Reverse<PifoItem>>,
        aqm: Aqm,
        flow_finish: KeyMap<u32, f64>,
        virtual_time: f64,
        bytes: u64,
    },
}

#[derive(Clone, Debug)]
struct PifoItem {
    rank: f64,
    seq: u64,
    item: Queued,
}

impl PartialEq for PifoItem {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for PifoItem {}
impl PartialOrd for PifoItem {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for PifoItem {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank
            .total_cmp(&other.rank)
            .then(self.seq.cmp(&other.seq))
    }
}

/// What became of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    Queued {
        marked: bool,
    },
    /// The arriving packet was dropped (buffer full, or the AQM).
    Dropped,
}

/// One port's queueing system. `repr(C)`: the fields every packet reads come first,
/// next to the port's transmitter (see `Port`).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct PortQueue {
    /// What waits in the queue discipline (the device's FIFO apart).
    packets: u64,
    bytes: u64,
    /// The device's FIFO below the discipline, with each packet's mark.
    device: VecDeque<(Queued, bool)>,
    device_bytes: u64,
    pub counters: ClassCounters,
    /// The highest class a priority can map to (classes - 1, at most 255) and
    /// whether any class runs PIE, kept beside the hot fields so the per-packet checks do
    /// not reach into the heap.
    last_class: u8,
    any_pie: bool,
    state: State,
    pub config: QueueConfig,
    seq: u64,
}

fn exceeds(limit: Limit, packets: u64, bytes: u64) -> bool {
    match limit {
        Limit::Packets(n) => packets > n,
        Limit::Bytes(n) => bytes > n,
    }
}

impl PortQueue {
    pub fn new(config: QueueConfig) -> PortQueue {
        let classes = config.classes();
        let state = match &config.scheduler {
            SchedulerConfig::Fq { quantum } => State::Fq {
                quantum: *quantum as i64,
                flows: KeyMap::default(),
                new_flows: VecDeque::new(),
                old_flows: VecDeque::new(),
            },
            SchedulerConfig::Pifo { rank } => State::Pifo {
                ranking: rank.clone(),
                heap: BinaryHeap::new(),
                aqm: Aqm::new(config.aqm_of(0).clone()),
                flow_finish: KeyMap::default(),
                virtual_time: 0.0,
                bytes: 0,
            },
            SchedulerConfig::Fifo | SchedulerConfig::StrictPriority { .. } => {
                PortQueue::classes(ClassPolicy::LowestFirst, &config, classes)
            }
            SchedulerConfig::Drr { quanta } => PortQueue::classes(
                ClassPolicy::Drr {
                    quanta: quanta.clone(),
                },
                &config,
                classes,
            ),
            SchedulerConfig::Wfq { weights } => PortQueue::classes(
                ClassPolicy::Wfq {
                    weights: weights.clone(),
                },
                &config,
                classes,
            ),
        };
        PortQueue {
            counters: ClassCounters::new(classes),
            any_pie: PortQueue::runs_pie(&config, classes),
            last_class: (classes - 1).min(u8::MAX as usize) as u8,
            config,
            packets: 0,
            bytes: 0,
            device: VecDeque::new(),
            device_bytes: 0,
            state,
            seq: 0,
        }
    }

    /// The state of a discipline with a FIFO per class, served by `policy`.
    fn classes(policy: ClassPolicy, config: &QueueConfig, classes: usize) -> State {
        State::Classes {
            policy,
            queues: (0..classes)
                .map(|c| SubQueue::new(config.aqm_of(c)))
                .collect(),
            deficits: vec![0; classes],
            active: VecDeque::new(),
            front_credited: false,
            finish: vec![0.0; classes],
            virtual_time: 0.0,
        }
    }

    /// Gives back the room of an emptied queue beyond a few packets. Every queue kept
    /// the room of its longest backlog (8 KB for 250 packets): 4 MB of the engine's 28 MB
    /// at the xl1024 benchmark.
    #[cold]
    #[inline(never)]
    pub fn release_room(&mut self) {
        if let State::Classes { queues, .. } = &mut self.state {
            for q in queues.iter_mut() {
                if q.fifo.is_empty() && q.fifo.capacity() > KEPT_ROOM {
                    q.fifo.shrink_to(KEPT_ROOM);
                }
            }
        }
    }

    /// Whether a packet of `size` bytes in `class` fits under the limit: per class for
    /// the class schedulers, over the whole queue for FQ and PIFO (which would otherwise
    /// push another packet out).
    pub fn has_room(&self, class: u8, size: u32) -> bool {
        let limit = self.config.limit;
        match &self.state {
            State::Classes { queues, .. } => {
                let q = &queues[class as usize];
                !exceeds(limit, q.fifo.len() as u64 + 1, q.bytes + size as u64)
            }
            State::Fq { .. } | State::Pifo { .. } => {
                !exceeds(limit, self.packets + 1, self.bytes + size as u64)
            }
        }
    }

    /// Whether the queue, empty, would take a packet of `size` bytes.
    pub fn holds_when_empty(&self, size: u32) -> bool {
        !exceeds(self.config.limit, 1, size as u64)
    }

    /// Packets waiting, in the discipline and the device.
    #[inline]
    pub fn len(&self) -> usize {
        self.packets as usize + self.device.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packets == 0 && self.device.is_empty()
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes + self.device_bytes
    }

    /// Hands packets from the discipline down to the device while it has room.
    fn refill_device(&mut self, now: Time, dropped: &mut Vec<PacketId>) {
        while self.device.len() < self.config.device_queue as usize {
            let Some((item, marked)) = self.dequeue_discipline(now, 0, dropped) else {
                break;
            };
            self.device_bytes += item.size as u64;
            self.device.push_back((item, marked));
        }
    }

    /// Whether the AQM wants the arriving packet's expected queueing delay.
    #[inline]
    pub fn needs_delay_estimate(&self) -> bool {
        self.any_pie
    }

    fn runs_pie(config: &QueueConfig, classes: usize) -> bool {
        (0..classes).any(|c| matches!(config.aqm_of(c), AqmConfig::Pie { .. }))
    }

    /// The class a packet of `priority` joins.
    #[inline]
    pub fn class_of(&self, priority: u8) -> u8 {
        priority.min(self.last_class)
    }

    /// Records a packet that found the port idle and went straight to the transmitter.
    #[inline]
    pub fn note_passthrough(&mut self, class: u8, size: u32) {
        let c = &mut self.counters[class as usize];
        c.enqueued += 1;
        c.dequeued += 1;
        c.dequeued_bytes += size as u64;
    }

    /// Admits the arriving packet or drops it (or, for FQ and PIFO, pushes others out
    /// into `evicted`, as it does with packets the AQM drops on their way down to the
    /// device).
    pub fn enqueue(
        &mut self,
        arrival: Arrival,
        now: Time,
        rng: &mut Rng,
        evicted: &mut Vec<PacketId>,
    ) -> Admitted {
        let admitted = self.enqueue_discipline(arrival, now, rng, evicted);
        if self.config.device_queue > 0 {
            self.refill_device(now, evicted);
        }
        admitted
    }

    fn enqueue_discipline(
        &mut self,
        arrival: Arrival,
        now: Time,
        rng: &mut Rng,
        evicted: &mut Vec<PacketId>,
    ) -> Admitted {
        let Arrival {
            item,
            rank,
            delay,
            lossless,
        } = arrival;
        let class = item.class as usize;
        self.counters[class].enqueued += 1;
        let limit = if lossless {
            Limit::Bytes(u64::MAX)
        } else {
            self.config.limit
        };
        let full = exceeds(limit, self.packets + 1, self.bytes + item.size as u64);
        let verdict = match &mut self.state {
            State::Classes {
                policy,
                queues,
                deficits,
                active,
                finish,
                virtual_time,
                ..
            } => {
                let q = &mut queues[class];
                if exceeds(limit, q.fifo.len() as u64 + 1, q.bytes + item.size as u64) {
                    self.counters[class].buffer_drops += 1;
                    return Admitted::Dropped;
                }
                let view = QueueView {
                    packets: q.fifo.len() as u64 + 1,
                    bytes: q.bytes + item.size as u64,
                };
                let verdict = q.aqm.on_enqueue(view, item.ect, delay, now, rng);
                if verdict != Verdict::Drop {
                    if q.fifo.is_empty() && matches!(policy, ClassPolicy::Drr { .. }) {
                        deficits[class] = 0;
                        active.push_back(class);
                    }
                    if let ClassPolicy::Wfq { weights } = policy {
                        let start = finish[class].max(*virtual_time);
                        finish[class] = start + item.size as f64 / weights[class] as f64;
                        q.push_tagged(item, finish[class]);
                    } else {
                        q.push(item);
                    }
                }
                verdict
            }
            State::Fq {
                quantum,
                flows,
                new_flows,
                old_flows,
            } => {
                let quantum = *quantum;
                if full {
                    // RFC 8290: make room by dropping from the heads of the longest flows.
                    while exceeds(limit, self.packets + 1, self.bytes + item.size as u64) {
                        let fattest = flows
                            .iter()
                            // Ties go to the lowest flow id: the victim must not
                            // depend on the map's layout.
                            .max_by_key(|(&f, (q, _))| (q.bytes, std::cmp::Reverse(f)))
                            .map(|(&f, _)| f);
                        let Some(victim) = fattest
                            .and_then(|f| flows.get_mut(&f))
                            .and_then(|(q, _)| q.pop())
                        else {
                            self.counters[class].buffer_drops += 1;
                            return Admitted::Dropped;
                        };
                        self.packets -= 1;
                        self.bytes -= victim.size as u64;
                        self.counters[victim.class as usize].buffer_drops += 1;
                        evicted.push(victim.pkt);
                    }
                }
                let aqm = self.config.aqm_of(0);
                let (q, deficit) = flows
                    .entry(item.flow)
                    .or_insert_with(|| (SubQueue::new(aqm), 0));
                let view = QueueView {
                    packets: q.fifo.len() as u64 + 1,
                    bytes: q.bytes + item.size as u64,
                };
                let verdict = q.aqm.on_enqueue(view, item.ect, delay, now, rng);
                if verdict != Verdict::Drop {
                    let listed = !q.fifo.is_empty()
                        || new_flows.contains(&item.flow)
                        || old_flows.contains(&item.flow);
                    if !listed {
                        *deficit = quantum;
                        new_flows.push_back(item.flow);
                    }
                    q.push(item);
                }
                verdict
            }
            State::Pifo {
                ranking,
                heap,
                aqm,
                flow_finish,
                virtual_time,
                bytes,
            } => {
                let inputs = rank;
                let rank = match ranking {
                    Rank::Arrival => now as f64,
                    Rank::RemainingSize => inputs.remaining as f64,
                    Rank::StartTime => {
                        let f = flow_finish.entry(item.flow).or_insert(0.0);
                        let start = f.max(*virtual_time);
                        *f = start + item.size as f64;
                        start
                    }
                    Rank::Deadline { budgets } => {
                        let budget = budgets[(item.class as usize).min(budgets.len() - 1)];
                        inputs.created.saturating_add(budget) as f64
                    }
                };
                if full {
                    // Push out the worst-ranked packet, if it ranks below the arrival.
                    let worst = heap
                        .iter()
                        .max_by(|a, b| a.0.cmp(&b.0))
                        .map(|r| (r.0.rank, r.0.seq));
                    match worst {
                        Some((worst_rank, seq)) if worst_rank > rank => {
                            let mut items: Vec<_> = std::mem::take(heap).into_vec();
                            let at = items
                                .iter()
                                .position(|r| r.0.seq == seq)
                                .expect("found above");
                            let v = items.swap_remove(at).0.item;
                            *heap = BinaryHeap::from(items);
                            self.packets -= 1;
                            self.bytes -= v.size as u64;
                            *bytes -= v.size as u64;
                            self.counters[v.class as usize].buffer_drops += 1;
                            evicted.push(v.pkt);
                        }
                        _ => {
                            self.counters[class].buffer_drops += 1;
                            return Admitted::Dropped;
                        }
                    }
                }
                let view = QueueView {
                    packets: heap.len() as u64 + 1,
                    bytes: *bytes + item.size as u64,
                };
                let verdict = aqm.on_enqueue(view, item.ect, delay, now, rng);
                if verdict != Verdict::Drop {
                    self.seq += 1;
                    *bytes += item.size as u64;
                    heap.push(Reverse(PifoItem {
                        rank,
                        seq: self.seq,
                        item,
                    }));
                }
                verdict
            }
        };
        let c = &mut self.counters[class];
        match verdict {
            Verdict::Drop => {
                c.aqm_drops += 1;
                return Admitted::Dropped;
            }
            Verdict::Mark => c.aqm_marks += 1,
            Verdict::Pass => {}
        }
        self.packets += 1;
        self.bytes += item.size as u64;
        c.max_packets = c.max_packets.max(self.packets);
        Admitted::Queued {
            marked: verdict == Verdict::Mark,
        }
    }

    /// The next packet to transmit and whether the AQM marked it; packets the AQM drops
    /// on the way out are appended to `dropped`.
    pub fn dequeue(&mut self, now: Time, dropped: &mut Vec<PacketId>) -> Option<(Queued, bool)> {
        self.dequeue_unpaused(now, 0, dropped)
    }

    /// As `dequeue`, skipping the classes set in `paused` (bit c: class c, as PFC pauses
    /// them); None if only paused classes wait.
    pub fn dequeue_unpaused(
        &mut self,
        now: Time,
        paused: u8,
        dropped: &mut Vec<PacketId>,
    ) -> Option<(Queued, bool)> {
        if self.config.device_queue == 0 {
            return self.dequeue_discipline(now, paused, dropped);
        }
        // The device's FIFO knows no classes: it serves in order (PFC refuses devices).
        self.refill_device(now, dropped);
        let (item, marked) = self.device.pop_front()?;
        self.device_bytes -= item.size as u64;
        self.refill_device(now, dropped);
        Some((item, marked))
    }

    fn dequeue_discipline(
        &mut self,
        now: Time,
        paused: u8,
        dropped: &mut Vec<PacketId>,
    ) -> Option<(Queued, bool)> {
        loop {
            let (item, verdict) = self.pick(now, paused)?;
            self.packets -= 1;
            self.bytes -= item.size as u64;
            let c = &mut self.counters[item.class as usize];
            match verdict {
                Verdict::Drop => {
                    c.aqm_drops += 1;
                    dropped.push(item.pkt);
                }
                _ => {
                    c.dequeued += 1;
                    c.dequeued_bytes += item.size as u64;
                    c.sojourn_ps += now - item.enqueued;
                    if verdict == Verdict::Mark {
                        c.aqm_marks += 1;
                    }
                    return Some((item, verdict == Verdict::Mark));
                }
            }
        }
    }

    /// Takes the scheduler's next packet out of its queue, with the AQM's verdict.
    fn pick(&mut self, now: Time, paused: u8) -> Option<(Queued, Verdict)> {
        let is_paused = |class: usize| class < 8 && paused & (1 << class) != 0;
        match &mut self.state {
            State::Classes {
                policy,
                queues,
                deficits,
                active,
                virtual_time,
                front_credited,
                ..
            } => {
                let class = match policy {
                    ClassPolicy::LowestFirst => queues
                        .iter()
                        .enumerate()
                        .position(|(c, q)| !q.fifo.is_empty() && !is_paused(c))?,
                    ClassPolicy::Wfq { .. } => {
                        let mut best: Option<(usize, f64)> = None;
                        for (c, q) in queues.iter().enumerate() {
                            if is_paused(c) {
                                continue;
                            }
                            if let Some(&head) = q.finish_tags.front() {
                                if best.is_none_or(|(_, tag)| head < tag) {
                                    best = Some((c, head));
                                }
                            }
                        }
                        let (c, tag) = best?;
                        *virtual_time = tag;
                        c
                    }
                    ClassPolicy::Drr { quanta } => {
                        let mut skipped = 0;
                        loop {
                            let c = *active.front()?;
                            if is_paused(c) {
                                skipped += 1;
                                if skipped > active.len() {
                                    return None;
                                }
                                active.rotate_left(1);
                                *front_credited = false;
                                continue;
                            }
                            if !*front_credited {
                                deficits[c] += quanta[c] as i64;
                                *front_credited = true;
                            }
                            let head = queues[c]
                                .fifo
                                .front()
                                .expect("active classes are non-empty")
                                .size as i64;
                            if deficits[c] >= head {
                                deficits[c] -= head;
                                break c;
                            }
                            active.rotate_left(1);
                            *front_credited = false;
                        }
                    }
                };
                let q = &mut queues[class];
                let item = q.pop().expect("chosen class is non-empty");
                if q.fifo.is_empty() {
                    if let Some(at) = active.iter().position(|&c| c == class) {
                        active.remove(at);
                        if at == 0 {
                            *front_credited = false;
                        }
                    }
                    deficits[class] = 0;
                    q.aqm.on_idle(now);
                }
                let verdict = q
                    .aqm
                    .on_dequeue(now - item.enqueued, q.bytes, item.ect, now);
                Some((item, verdict))
            }
            State::Fq { .. } | State::Pifo { .. } if is_paused(0) => None,
            State::Fq {
                quantum,
                flows,
                new_flows,
                old_flows,
            } => {
                let quantum = *quantum;
                loop {
                    let from_new = !new_flows.is_empty();
                    let list = if from_new {
                        &mut *new_flows
                    } else {
                        &mut *old_flows
                    };
                    let flow = *list.front()?;
                    let (q, deficit) = flows.get_mut(&flow).expect("listed flows exist");
                    if *deficit <= 0 {
                        *deficit += quantum;
                        list.pop_front();
                        old_flows.push_back(flow);
                        continue;
                    }
                    match q.pop() {
                        Some(item) => {
                            *deficit -= item.size as i64;
                            let verdict =
                                q.aqm
                                    .on_dequeue(now - item.enqueued, q.bytes, item.ect, now);
                            return Some((item, verdict));
                        }
                        None => {
                            list.pop_front();
                            if from_new && !old_flows.is_empty() {
                                old_flows.push_back(flow);
                            } else {
                                flows.remove(&flow);
                            }
                        }
                    }
                }
            }
            State::Pifo {
                ranking,
                heap,
                aqm,
                virtual_time,
                bytes,
                ..
            } => {
                let Reverse(top) = heap.pop()?;
                *bytes -= top.item.size as u64;
                if matches!(ranking, Rank::StartTime) {
                    *virtual_time = top.rank;
                }
                let verdict = aqm.on_dequeue(now - top.item.enqueued, *bytes, top.item.ect, now);
                Some((top.item, verdict))
            }
        }
    }

    /// Every waiting packet, in no particular order.
    pub fn packets(&self) -> Vec<PacketId> {
        let device = self.device.iter().map(|(q, _)| q.pkt);
        let discipline: Vec<PacketId> = match &self.state {
            State::Classes { queues, .. } => queues
                .iter()
                .flat_map(|q| q.fifo.iter().map(|i| i.pkt))
                .collect(),
            State::Fq { flows, .. } => flows
                .values()
                .flat_map(|(q, _)| q.fifo.iter().map(|i| i.pkt))
                .collect(),
            State::Pifo { heap, .. } => heap.iter().map(|r| r.0.item.pkt).collect(),
        };
        device.chain(discipline).collect()
    }

    /// Takes every waiting packet out in the order they would have been sent (for
    /// reconfiguring the port), without AQM decisions.
    pub fn drain(&mut self) -> Vec<Queued> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.device.drain(..).map(|(q, _)| q));
        self.device_bytes = 0;
        while let Some((item, _)) = self.pick(Time::MAX / 2, 0) {
            out.push(item);
        }
        self.packets = 0;
        self.bytes = 0;
        out
    }

    /// Gives each queue the AQM of the new settings (the port's and any per-class ones),
    /// keeping the packets where they are. A queue whose AQM settings do not change keeps
    /// its AQM's state (CoDel's drop schedule, RED's average): tuning one class's marking
    /// disturbs no other class.
    pub fn set_aqm(&mut self, aqm: AqmConfig, class_aqm: Vec<Option<AqmConfig>>) {
        let new = QueueConfig {
            aqm,
            class_aqm,
            ..self.config.clone()
        };
        let old = std::mem::replace(&mut self.config, new);
        self.any_pie = PortQueue::runs_pie(&self.config, self.counters.classes());
        let config = &self.config;
        let renew = |aqm: &mut Aqm, class: usize| {
            if old.aqm_of(class) != config.aqm_of(class) {
                *aqm = Aqm::new(config.aqm_of(class).clone());
            }
        };
        match &mut self.state {
            State::Classes { queues, .. } => queues
                .iter_mut()
                .enumerate()
                .for_each(|(c, q)| renew(&mut q.aqm, c)),
            State::Fq { flows, .. } => flows.values_mut().for_each(|(q, _)| renew(&mut q.aqm, 0)),
            State::Pifo { aqm: a, .. } => renew(a, 0),
        }
    }

    /// A queue with `config` holding this one's packets in service order; packets beyond
    /// the new limit are appended to `dropped`. Counters carry over where classes match.
    pub fn reconfigured(
        &mut self,
        config: QueueConfig,
        now: Time,
        rng: &mut Rng,
        dropped: &mut Vec<PacketId>,
    ) -> PortQueue {
        let mut next = PortQueue::new(QueueConfig {
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            ..config.clone()
        });
        for (old, new) in self.counters.iter().zip(next.counters.iter_mut()) {
            *new = old.clone();
        }
        for mut item in self.drain() {
            item.class = next.class_of(item.class);
            next.counters[item.class as usize].enqueued -= 1;
            // The waiting packets' rank inputs are not kept: a PIFO that is reconfigured
            // ranks them as arrivals now, in the order they were served.
            let rank = RankInputs {
                remaining: 0,
                created: now,
            };
            if next.enqueue(
                Arrival {
                    item,
                    rank,
                    delay: 0,
                    lossless: false,
                },
                now,
                rng,
                dropped,
            ) == Admitted::Dropped
            {
                dropped.push(item.pkt);
            }
        }
        next.set_aqm(config.aqm, config.class_aqm);
        next
    }

    /// Waiting packets per class (FQ and PIFO have one class).
    pub fn class_lengths(&self) -> Vec<(u64, u64)> {
        match &self.state {
            State::Classes { queues, .. } => queues
                .iter()
                .map(|q| (q.fifo.len() as u64, q.bytes))
                .collect(),
            // A deadline PIFO has a class per budget in one heap.
            State::Pifo { heap, .. } => {
                let mut lengths = vec![(0, 0); self.counters.classes()];
                for Reverse(waiting) in heap {
                    let class = &mut lengths[waiting.item.class as usize];
                    class.0 += 1;
                    class.1 += waiting.item.size as u64;
                }
                lengths
            }
            State::Fq { .. } => vec![(self.packets, self.bytes)],
        }
    }

    /// Flows with packets waiting (FQ); 0 for other schedulers.
    pub fn active_flows(&self) -> usize {
        match &self.state {
            State::Fq { flows, .. } => flows.values().filter(|(q, _)| !q.fifo.is_empty()).count(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    fn item(pkt: u32, size: u32, flow: u32, class: u8, t: Time) -> Queued {
        Queued::new(PacketId(pkt), size, t, false, flow, class)
    }

    fn rng() -> Rng {
        Rng::stream(1, Stream::Workload, 0)
    }

    #[test]
    fn a_configuration_reads_from_its_serialised_form_and_back() {
        let text = r#"{"limit": ["packets", 100],
            "scheduler": {"kind": "pifo", "rank": "deadline", "budgets": [5, 7]},
            "aqm": {"kind": "codel", "target": 5, "interval": 100, "ecn": true},
            "class_aqm": [null, {"kind": "ramp", "kmin": ["bytes", 3000],
                                 "kmax": ["bytes", 9000], "pmax": 0.25}]}"#;
        let config: QueueConfig = serde_json::from_str(text).unwrap();
        assert_eq!(
            config.scheduler,
            SchedulerConfig::Pifo {
                rank: Rank::Deadline {
                    budgets: vec![5, 7]
                }
            }
        );
        assert_eq!(config.limit, Limit::Packets(100));
        assert_eq!(
            config.aqm_of(1),
            &AqmConfig::Ramp {
                kmin: Limit::Bytes(3000),
                kmax: Limit::Bytes(9000),
                pmax: 0.25
            }
        );
        assert!(matches!(
            config.aqm_of(0),
            AqmConfig::CoDel { ecn: true, .. }
        ));
        assert_eq!(config.device_queue, 0, "left out: none");
        let again: QueueConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(again, config);
        // A limit names its unit; a kind names one the engine has.
        for bad in [
            r#"{"limit": ["frames", 1], "scheduler": {"kind": "fifo"}, "aqm": {"kind": "drop_tail"}}"#,
            r#"{"limit": ["packets", 1], "scheduler": {"kind": "lifo"}, "aqm": {"kind": "drop_tail"}}"#,
            // A misspelt field is refused, not read as its default.
            r#"{"limit": ["packets", 1], "scheduler": {"kind": "fifo"}, "aqm": {"kind": "drop_tail"},
                "device_queues": 3}"#,
            r#"{"limit": ["packets", 1], "scheduler": {"kind": "fifo"}, "aqm": {"kind": "ramp",
                "kmin": ["packets", 1], "kmax": ["packets", 2], "pmax": 1.0, "kmid": 3}}"#,
        ] {
            assert!(serde_json::from_str::<QueueConfig>(bad).is_err(), "{bad}");
        }
    }

    fn drain_classes(q: &mut PortQueue, n: usize) -> Vec<u8> {
        let mut dropped = Vec::new();
        (0..n)
            .filter_map(|_| q.dequeue(0, &mut dropped).map(|(i, _)| i.class))
            .collect()
    }

    #[test]
    fn an_emptied_queue_gives_back_the_room_of_its_backlog_and_still_works() {
        let mut q = PortQueue::new(QueueConfig::step_marking(
            Limit::Packets(250),
            Limit::Packets(65),
        ));
        let room = |q: &PortQueue| match &q.state {
            State::Classes { queues, .. } => queues[0].fifo.capacity(),
            _ => unreachable!(),
        };
        for round in 0..2 {
            for i in 0..200 {
                let admitted = q.enqueue(
                    Arrival {
                        item: item(i, 1500, 0, 0, 0),
                        rank: RankInputs::remaining(0),
                        delay: 0,
                        lossless: false,
                    },
                    0,
                    &mut rng(),
                    &mut Vec::new(),
                );
                assert_ne!(admitted, Admitted::Dropped, "round {round}");
            }
            assert!(room(&q) >= 200);
            q.release_room();
            assert!(room(&q) >= 200, "a queue holding packets keeps them");
            let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(0, &mut Vec::new()))
                .map(|(i, _)| i.pkt.0)
                .collect();
            assert_eq!(order, (0..200).collect::<Vec<_>>());
            q.release_room();
            assert!(room(&q) <= KEPT_ROOM);
        }
    }

    #[test]
    fn strict_priority_never_serves_a_lower_class_while_a_higher_waits() {
        let config = QueueConfig {
            limit: Limit::Packets(100),
            scheduler: SchedulerConfig::StrictPriority { classes: 3 },
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        };
        let mut q = PortQueue::new(config);
        let mut r = rng();
        for i in 0..30 {
            q.enqueue(
                Arrival {
                    item: item(i, 1500, 0, (i % 3) as u8, 0),
                    rank: RankInputs::remaining(0),
                    delay: 0,
                    lossless: false,
                },
                0,
                &mut r,
                &mut Vec::new(),
            );
        }
        let order = drain_classes(&mut q, 30);
        assert_eq!(order, [vec![0; 10], vec![1; 10], vec![2; 10]].concat());
    }

    #[test]
    fn retuning_one_class_s_marking_leaves_the_other_classes_aqm_state_alone() {
        let red = AqmConfig::Red {
            min: Limit::Packets(5),
            max: Limit::Packets(15),
            max_p: 0.1,
            weight: 0.2,
            gentle: false,
            ecn: true,
            hard_drop: true,
            wait: false,
        };
        let mut q = PortQueue::new(QueueConfig {
            limit: Limit::Packets(100),
            scheduler: SchedulerConfig::StrictPriority { classes: 2 },
            aqm: AqmConfig::DropTail,
            class_aqm: vec![Some(red.clone())],
            device_queue: 0,
        });
        let mut r = rng();
        for i in 0..20 {
            q.enqueue(
                Arrival {
                    item: item(i, 1500, 0, 0, 0),
                    rank: RankInputs::remaining(0),
                    delay: 0,
                    lossless: false,
                },
                0,
                &mut r,
                &mut Vec::new(),
            );
        }
        let aqms = |q: &PortQueue| match &q.state {
            State::Classes { queues, .. } => queues
                .iter()
                .map(|s| format!("{:?}", s.aqm))
                .collect::<Vec<_>>(),
            _ => unreachable!(),
        };
        let before = aqms(&q);
        let waiting = q.len();
        let ramp = AqmConfig::Ramp {
            kmin: Limit::Bytes(5_000),
            kmax: Limit::Bytes(200_000),
            pmax: 0.2,
        };
        q.set_aqm(AqmConfig::DropTail, vec![Some(red), Some(ramp.clone())]);
        let after = aqms(&q);
        assert!(before[0].contains("avg") && !before[0].contains("avg: 0.0,"));
        assert_eq!(before[0], after[0], "class 0's RED average survives");
        assert_ne!(before[1], after[1]);
        assert_eq!(q.config.aqm_of(1), &ramp);
        assert_eq!(q.len(), waiting, "no packet moved or dropped");
    }

    fn shares(config: QueueConfig, classes: u8, sizes: &[u32]) -> Vec<f64> {
        let mut q = PortQueue::new(config);
        let mut r = rng();
        let mut id = 0;
        for _ in 0..2000 {
            for c in 0..classes {
                q.enqueue(
                    Arrival {
                        item: item(id, sizes[c as usize], c as u32, c, 0),
                        rank: RankInputs::remaining(0),
                        delay: 0,
                        lossless: false,
                    },
                    0,
                    &mut r,
                    &mut Vec::new(),
                );
                id += 1;
            }
        }
        let mut served = vec![0u64; classes as usize];
        let mut dropped = Vec::new();
        for _ in 0..3000 {
            let (i, _) = q.dequeue(0, &mut dropped).unwrap();
            served[i.class as usize] += i.size as u64;
        }
        let total: u64 = served.iter().sum();
        served.iter().map(|&b| b as f64 / total as f64).collect()
    }

    #[test]
    fn drr_and_wfq_share_in_proportion_to_weights_whatever_the_packet_sizes() {
        let big = Limit::Packets(100_000);
        for scheduler in [
            SchedulerConfig::Drr {
                quanta: vec![1500, 3000, 4500],
            },
            SchedulerConfig::Wfq {
                weights: vec![1, 2, 3],
            },
        ] {
            let config = QueueConfig {
                limit: big,
                scheduler: scheduler.clone(),
                aqm: AqmConfig::DropTail,
                class_aqm: Vec::new(),
                device_queue: 0,
            };
            let s = shares(config, 3, &[1500, 300, 900]);
            for (share, want) in s.iter().zip([1.0 / 6.0, 2.0 / 6.0, 3.0 / 6.0]) {
                assert!((share - want).abs() < 0.01, "{scheduler:?}: {s:?}");
            }
        }
    }

    #[test]
    fn fq_gives_backlogged_flows_equal_bytes() {
        let config = QueueConfig {
            limit: Limit::Packets(100_000),
            scheduler: SchedulerConfig::Fq { quantum: 1514 },
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        };
        let mut q = PortQueue::new(config);
        let mut r = rng();
        let sizes = [1500u32, 700, 64, 1200];
        let mut id = 0;
        // Every flow backlogged with 2 MB; serve 4 MB in all.
        for (f, &s) in sizes.iter().enumerate() {
            for _ in 0..2_000_000 / s {
                q.enqueue(
                    Arrival {
                        item: item(id, s, f as u32, 0, 0),
                        rank: RankInputs::remaining(0),
                        delay: 0,
                        lossless: false,
                    },
                    0,
                    &mut r,
                    &mut Vec::new(),
                );
                id += 1;
            }
        }
        let mut bytes = [0u64; 4];
        let mut dropped = Vec::new();
        while bytes.iter().sum::<u64>() < 4_000_000 {
            let (i, _) = q.dequeue(0, &mut dropped).unwrap();
            bytes[i.flow as usize] += i.size as u64;
        }
        let mean = bytes.iter().sum::<u64>() as f64 / 4.0;
        for b in bytes {
            assert!((b as f64 / mean - 1.0).abs() < 0.02, "{bytes:?}");
        }
    }

    #[test]
    fn pifo_with_remaining_size_serves_the_shortest_first_and_evicts_the_longest() {
        let config = QueueConfig {
            limit: Limit::Packets(3),
            scheduler: SchedulerConfig::Pifo {
                rank: Rank::RemainingSize,
            },
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        };
        let mut q = PortQueue::new(config);
        let mut r = rng();
        let mut evicted = Vec::new();
        for (pkt, remaining) in [(0, 5000u64), (1, 100), (2, 9000)] {
            q.enqueue(
                Arrival {
                    item: item(pkt, 1500, pkt, 0, 0),
                    rank: RankInputs::remaining(remaining),
                    delay: 0,
                    lossless: false,
                },
                0,
                &mut r,
                &mut evicted,
            );
        }
        let queued = Admitted::Queued { marked: false };
        assert_eq!(
            q.enqueue(
                Arrival {
                    item: item(3, 1500, 3, 0, 0),
                    rank: RankInputs::remaining(50),
                    delay: 0,
                    lossless: false
                },
                0,
                &mut r,
                &mut evicted
            ),
            queued
        );
        assert_eq!(evicted, vec![PacketId(2)]);
        assert_eq!(
            q.enqueue(
                Arrival {
                    item: item(4, 1500, 4, 0, 0),
                    rank: RankInputs::remaining(99_999),
                    delay: 0,
                    lossless: false
                },
                0,
                &mut r,
                &mut evicted
            ),
            Admitted::Dropped
        );
        let mut dropped = Vec::new();
        let order: Vec<u32> = (0..3)
            .map(|_| q.dequeue(0, &mut dropped).unwrap().0.pkt.0)
            .collect();
        assert_eq!(order, vec![3, 1, 0]);
    }

    #[test]
    fn a_deadline_pifo_serves_by_creation_time_plus_each_class_s_budget() {
        let pifo = |budgets: Vec<Time>| {
            PortQueue::new(QueueConfig {
                limit: Limit::Packets(100),
                scheduler: SchedulerConfig::Pifo {
                    rank: Rank::Deadline { budgets },
                },
                aqm: AqmConfig::DropTail,
                class_aqm: Vec::new(),
                device_queue: 0,
            })
        };
        // Packets 0-3 alternate classes 0 and 1, created 10 us apart, and reach this hop
        // at once in the reverse order.
        let served = |budgets: Vec<Time>| {
            let mut q = pifo(budgets);
            assert_eq!(q.class_of(1), 1, "each budget is a class");
            for pkt in (0..4u32).rev() {
                let class = q.class_of((pkt % 2) as u8);
                let created = pkt as Time * 10_000_000;
                let rank = RankInputs {
                    remaining: 0,
                    created,
                };
                let queued = item(pkt, 1500, pkt, class, 50_000_000);
                q.enqueue(
                    Arrival {
                        item: queued,
                        rank,
                        delay: 0,
                        lossless: false,
                    },
                    50_000_000,
                    &mut rng(),
                    &mut Vec::new(),
                );
            }
            (0..4)
                .map(|_| q.dequeue(50_000_000, &mut Vec::new()).unwrap().0.pkt.0)
                .collect::<Vec<u32>>()
        };
        let ms = 1_000_000_000;
        // Class 1 has the smaller budget: its packets go first, each class by creation.
        assert_eq!(served(vec![ms, 0]), vec![1, 3, 0, 2]);
        assert_eq!(served(vec![0, ms]), vec![0, 2, 1, 3]);
        // Equal budgets: creation order, not the order of arrival at this hop.
        assert_eq!(served(vec![0, 0]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn fq_makes_room_from_the_longest_flow() {
        let config = QueueConfig {
            limit: Limit::Packets(4),
            scheduler: SchedulerConfig::Fq { quantum: 1514 },
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        };
        let mut q = PortQueue::new(config);
        let mut r = rng();
        let mut evicted = Vec::new();
        for i in 0..4 {
            q.enqueue(
                Arrival {
                    item: item(i, 1500, 7, 0, 0),
                    rank: RankInputs::remaining(0),
                    delay: 0,
                    lossless: false,
                },
                0,
                &mut r,
                &mut evicted,
            );
        }
        assert_eq!(
            q.enqueue(
                Arrival {
                    item: item(9, 1500, 8, 0, 0),
                    rank: RankInputs::remaining(0),
                    delay: 0,
                    lossless: false
                },
                0,
                &mut r,
                &mut evicted
            ),
            Admitted::Queued { marked: false }
        );
        assert_eq!(evicted, vec![PacketId(0)]);
        assert_eq!(q.len(), 4);
        assert_eq!(q.active_flows(), 2);
    }

    #[test]
    fn drain_keeps_service_order() {
        let config = QueueConfig {
            limit: Limit::Packets(10),
            scheduler: SchedulerConfig::StrictPriority { classes: 2 },
            aqm: AqmConfig::DropTail,
            class_aqm: Vec::new(),
            device_queue: 0,
        };
        let mut q = PortQueue::new(config);
        let mut r = rng();
        q.enqueue(
            Arrival {
                item: item(0, 100, 0, 1, 0),
                rank: RankInputs::remaining(0),
                delay: 0,
                lossless: false,
            },
            0,
            &mut r,
            &mut Vec::new(),
        );
        q.enqueue(
            Arrival {
                item: item(1, 100, 0, 0, 0),
                rank: RankInputs::remaining(0),
                delay: 0,
                lossless: false,
            },
            0,
            &mut r,
            &mut Vec::new(),
        );
        let order: Vec<u32> = q.drain().iter().map(|i| i.pkt.0).collect();
        assert_eq!(order, vec![1, 0]);
        assert!(q.is_empty() && q.bytes() == 0);
    }
}
