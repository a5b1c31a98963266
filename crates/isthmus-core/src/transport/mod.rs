//! Transports: the per-flow endpoints on hosts. A flow's transport state machine is a
//! variant of [`Transport`]; it reacts to its timers and to packets delivered at either
//! end, and hands the engine packets to send and timers to set through an [`Outbox`].

pub mod bcn;
pub mod cubic;
pub mod dcqcn;
pub mod messages;
pub mod mptcp;
pub mod reassembly;
pub mod rtt;
pub mod sack;
pub mod tcp;
pub mod timer;
pub mod udp;

use crate::packet::Packet;
use crate::units::{Rate, Time};

/// Timer kinds a flow handles itself, above every transport's own kinds: its
/// application's next message, and the end of a BCN STOP pause.
const APP_TIMER: u32 = 30;
const REGULATOR_TIMER: u32 = 31;

/// Tokens the engine itself sends a flow's transport (kinds no transport timer uses):
/// the flow's packets waiting at its source host's NIC have drained (a sender waiting
/// for that may go on), and the NIC queue refused one of its segments (TCP's local
/// congestion, see `tcp::TcpConfig::small_queue_time`).
pub const NIC_DRAINED_TOKEN: u32 = 3;
pub const NIC_REFUSED_TOKEN: u32 = 4;

/// What a transport asks of the engine after handling one event.
#[derive(Clone, Default)]
pub struct Outbox {
    /// Packets to inject at the host named by each packet's `src`.
    pub packets: Vec<Packet>,
    /// Timers to set for the flow: (time, token).
    pub timers: Vec<(Time, u32)>,
}

/// Per-flow record, kept for every flow whether or not it finished.
#[derive(Clone, Debug, Default)]
pub struct FlowRecord {
    pub src: u32,
    pub dst: u32,
    /// Application bytes to transfer; 0 for a flow bounded only by its stop time.
    pub size: u64,
    pub start: Time,
    /// When the first and last payload bytes reached the receiver.
    pub first_delivery: Option<Time>,
    pub last_delivery: Option<Time>,
    /// When the flow ended: sender done and nothing of it left in the network.
    pub finish: Option<Time>,
    pub bytes_sent: u64,
    /// Application bytes handed to the receiving application, in order, each once.
    pub bytes_delivered: u64,
    /// Payload bytes that reached the receiver, duplicates (retransmissions of bytes
    /// it had) included: what the network carried to it.
    pub bytes_received: u64,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    /// TCP: segments sent again, and retransmission timeouts (SYN timeouts included).
    pub retransmissions: u64,
    pub timeouts: u64,
    /// Data packets that reached the receiver ahead of a byte it still waits for
    /// (reordered, or behind a loss); TCP, MPTCP (at the connection level) and DCQCN.
    pub out_of_order: u64,
    /// Sum over data packets reaching the receiver of their one-way delay, and their
    /// count (the mean is the flow's delay as its application sees it).
    pub delay_sum_ps: u64,
    pub delay_packets: u64,
    /// Bytes of this flow waiting in its source host's NIC queue now, and whether its
    /// sender stopped until they drain (TCP small-queue backpressure).
    pub nic_queued_bytes: u64,
    pub nic_blocked: bool,
}

impl FlowRecord {
    pub fn packets_in_flight(&self) -> u64 {
        self.packets_sent - self.packets_delivered - self.packets_dropped
    }
}

#[derive(Clone)]
pub enum Transport {
    Udp(Box<udp::UdpSource>),
    Tcp(Box<tcp::TcpFlow>),
    Dcqcn(Box<dcqcn::DcqcnFlow>),
    Bcn(Box<bcn::BcnSource>),
    Mptcp(Box<mptcp::MptcpFlow>),
    /// In a partitioned run, a copy of a flow that neither runs here: its sender and
    /// receiver are other partitions' hosts, which hold its state, so this copy keeps
    /// the record only (a packet of it can still fall here). Nothing but a packet's
    /// drop ever reaches it.
    Elsewhere,
}

#[derive(Clone)]
pub struct Flow {
    pub record: FlowRecord,
    pub src_port: u16,
    pub dst_port: u16,
    /// Traffic class stamped on every packet of the flow (both directions).
    pub priority: u8,
    pub transport: Transport,
    /// A datagram flow has ended: its source is done and nothing of it is in flight.
    pub settled: bool,
    /// A TCP connection whose application writes successive messages.
    pub messages: Option<Box<messages::MessageStream>>,
    /// A TCP connection under a BCN rate regulator.
    pub regulation: Option<Box<Regulation>>,
}

impl Flow {
    /// A copy of this flow's record without its state (`Transport::Elsewhere`): what a
    /// partition that runs neither of its hosts keeps of it.
    pub fn elsewhere(&self) -> Flow {
        Flow {
            record: self.record.clone(),
            src_port: self.src_port,
            dst_port: self.dst_port,
            priority: self.priority,
            transport: Transport::Elsewhere,
            settled: self.settled,
            messages: None,
            regulation: None,
        }
    }
}

/// BCN's reaction point in front of a TCP sender: the regulator's rate paces the
/// sender and a STOP holds it for the pause.
#[derive(Clone)]
pub struct Regulation {
    pub reaction: bcn::RateRegulator,
    paced: Option<Rate>,
    held: bool,
}

impl Regulation {
    pub fn new(reaction: bcn::RateRegulator) -> Regulation {
        Regulation {
            reaction,
            paced: None,
            held: false,
        }
    }
}

/// Why hold, release and pace do not apply to BCN sources, BCN-regulated connections
/// and MPTCP connections.
pub fn ungovernable(flow: u32) -> String {
    format!("flow {flow} is a BCN source, a BCN-regulated connection or an MPTCP connection; hold, release and pace apply to TCP, DCTCP, DCQCN and UDP flows")
}

impl Flow {
    // Each event handler returns true when the flow has just ended (finished, or for a
    // datagram flow, settled with losses: it ends without a finish time).

    pub fn on_timer(&mut self, flow: u32, now: Time, token: u32, out: &mut Outbox) -> bool {
        if matches!(self.transport, Transport::Tcp(_)) {
            match token {
                APP_TIMER if self.messages.is_some() => {
                    self.write_next_message(flow, now, out);
                    self.mark_regulated(out);
                    return false;
                }
                REGULATOR_TIMER if self.regulation.is_some() => {
                    self.end_pause(flow, now, out);
                    self.mark_regulated(out);
                    return false;
                }
                _ => {}
            }
        }
        let ended = self.transport_timer(flow, now, token, out);
        self.mark_regulated(out);
        ended
    }

    fn transport_timer(&mut self, flow: u32, now: Time, token: u32, out: &mut Outbox) -> bool {
        let ports = (self.src_port, self.dst_port);
        match &mut self.transport {
            Transport::Udp(u) => {
                u.on_timer(flow, ports.0, ports.1, now, &mut self.record, out);
                self.datagrams_finished(now)
            }
            Transport::Bcn(b) => {
                b.on_timer(flow, ports, now, &mut self.record, out);
                self.datagrams_finished(now)
            }
            Transport::Tcp(t) => t.on_timer(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                token,
            ),
            Transport::Dcqcn(d) => d.on_timer(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                token,
            ),
            Transport::Mptcp(m) => m.on_timer(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                token,
            ),
            Transport::Elsewhere => {
                unreachable!("flow {flow}'s timer in a partition that does not run it")
            }
        }
    }

    /// A packet of this flow reached its destination host.
    pub fn on_delivery(&mut self, flow: u32, pkt: &Packet, now: Time, out: &mut Outbox) -> bool {
        if pkt.proto == bcn::PROTO_BCN && !matches!(self.transport, Transport::Bcn(_)) {
            self.record.packets_delivered += 1;
            if let Some(feedback) = bcn::Feedback::decode(pkt.options.tag) {
                self.on_bcn_feedback(flow, feedback, now, out);
            }
            return false;
        }
        let ended = self.deliver(flow, pkt, now, out);
        if let Some(stream) = self.messages.as_deref_mut() {
            if let Some(due) = stream.on_delivered(self.record.bytes_delivered, now) {
                out.timers.push((due, APP_TIMER));
            }
        }
        self.mark_regulated(out);
        ended
    }

    fn deliver(&mut self, flow: u32, pkt: &Packet, now: Time, out: &mut Outbox) -> bool {
        self.record.packets_delivered += 1;
        if pkt.payload > 0 && pkt.dst == self.record.dst {
            self.record.delay_sum_ps += now - pkt.created;
            self.record.delay_packets += 1;
            self.record.bytes_received += pkt.payload as u64;
        }
        let ports = (self.src_port, self.dst_port);
        match &mut self.transport {
            Transport::Bcn(b) if pkt.proto == bcn::PROTO_BCN => {
                if let Some(feedback) = bcn::Feedback::decode(pkt.options.tag) {
                    b.on_feedback(feedback, now);
                }
                self.datagrams_finished(now)
            }
            Transport::Udp(_) | Transport::Bcn(_) => {
                let r = &mut self.record;
                r.bytes_delivered += pkt.payload as u64;
                r.first_delivery.get_or_insert(now);
                r.last_delivery = Some(now);
                self.datagrams_finished(now)
            }
            Transport::Tcp(t) => t.on_packet(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                pkt,
            ),
            Transport::Dcqcn(d) => d.on_packet(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                pkt,
            ),
            Transport::Mptcp(m) => m.on_packet(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                pkt,
            ),
            Transport::Elsewhere => {
                unreachable!("flow {flow} delivered in a partition without its hosts")
            }
        }
    }

    /// A packet of this flow was dropped somewhere in the network.
    pub fn on_drop(&mut self, now: Time) -> bool {
        self.record.packets_dropped += 1;
        match self.transport {
            Transport::Udp(_) | Transport::Bcn(_) => self.datagrams_finished(now),
            // TCP and DCQCN learn of losses from the ACKs and NAKs that come or do not.
            Transport::Tcp(_) | Transport::Dcqcn(_) | Transport::Mptcp(_) => false,
            // Its sender, in another partition, learns of it as above.
            Transport::Elsewhere => false,
        }
    }

    /// A controller holds the flow's sender (no new data leaves) or releases it.
    pub fn set_held(
        &mut self,
        held: bool,
        flow: u32,
        now: Time,
        out: &mut Outbox,
    ) -> Result<(), String> {
        if self.regulation.is_some() {
            return Err(ungovernable(flow));
        }
        let ports = (self.src_port, self.dst_port);
        match &mut self.transport {
            Transport::Udp(u) => u.held = held,
            Transport::Tcp(t) => t.set_held(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                held,
            ),
            Transport::Dcqcn(d) => d.set_held(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                held,
            ),
            Transport::Bcn(_) | Transport::Mptcp(_) | Transport::Elsewhere => {
                return Err(ungovernable(flow))
            }
        }
        Ok(())
    }

    /// A controller paces the flow's sender at `rate` (None: unpaced).
    pub fn set_pace(
        &mut self,
        rate: Option<crate::units::Rate>,
        flow: u32,
        now: Time,
        out: &mut Outbox,
    ) -> Result<(), String> {
        if self.regulation.is_some() {
            return Err(ungovernable(flow));
        }
        let ports = (self.src_port, self.dst_port);
        match &mut self.transport {
            Transport::Udp(u) => u.pace(rate),
            Transport::Tcp(t) => t.set_pace(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                rate,
            ),
            Transport::Dcqcn(d) => d.set_pace(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                rate,
            ),
            Transport::Bcn(_) | Transport::Mptcp(_) | Transport::Elsewhere => {
                return Err(ungovernable(flow))
            }
        }
        Ok(())
    }

    /// A controller paces subflow `subflow` of this MPTCP connection (validated as one).
    pub fn set_subflow_pace(
        &mut self,
        subflow: usize,
        rate: Option<crate::units::Rate>,
        flow: u32,
        now: Time,
        out: &mut Outbox,
    ) {
        let ports = (self.src_port, self.dst_port);
        if let Transport::Mptcp(m) = &mut self.transport {
            m.set_subflow_pace(
                &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
                subflow,
                rate,
            );
        }
    }

    /// The application writes its next message, or closes the connection when it has
    /// none left.
    fn write_next_message(&mut self, flow: u32, now: Time, out: &mut Outbox) {
        let ports = (self.src_port, self.dst_port);
        let (Some(stream), Transport::Tcp(t)) = (self.messages.as_deref_mut(), &mut self.transport)
        else {
            return;
        };
        let mut io = tcp::Io::new(flow, now, ports, &mut self.record, out);
        match stream.write_next(now) {
            Some(size) => t.write(&mut io, size),
            None => t.close(&mut io),
        }
    }

    /// BCN feedback reached a regulated TCP sender: the regulator's new rate paces it,
    /// a STOP holds it until the pause ends. Feedback for an unregulated one is counted
    /// and ignored.
    fn on_bcn_feedback(&mut self, flow: u32, feedback: bcn::Feedback, now: Time, out: &mut Outbox) {
        let ports = (self.src_port, self.dst_port);
        let (Some(reg), Transport::Tcp(t)) = (self.regulation.as_deref_mut(), &mut self.transport)
        else {
            return;
        };
        reg.reaction.on_feedback(feedback, now);
        let mut io = tcp::Io::new(flow, now, ports, &mut self.record, out);
        if reg.reaction.paused_until > now && !reg.held {
            reg.held = true;
            t.set_held(&mut io, true);
            io.out
                .timers
                .push((reg.reaction.paused_until, REGULATOR_TIMER));
        }
        let rate = reg
            .reaction
            .regulator
            .map(|_| reg.reaction.rate().max(1.0) as Rate);
        if rate != reg.paced {
            reg.paced = rate;
            t.set_pace(&mut io, rate);
        }
        self.mark_regulated(out);
    }

    /// A STOP pause may be over (a later STOP may have extended it).
    fn end_pause(&mut self, flow: u32, now: Time, out: &mut Outbox) {
        let ports = (self.src_port, self.dst_port);
        let (Some(reg), Transport::Tcp(t)) = (self.regulation.as_deref_mut(), &mut self.transport)
        else {
            return;
        };
        if !reg.held {
            return;
        }
        if now < reg.reaction.paused_until {
            out.timers
                .push((reg.reaction.paused_until, REGULATOR_TIMER));
            return;
        }
        reg.held = false;
        t.set_held(
            &mut tcp::Io::new(flow, now, ports, &mut self.record, out),
            false,
        );
    }

    /// A regulated TCP sender's data packets carry the regulator tag while it has one.
    fn mark_regulated(&self, out: &mut Outbox) {
        let Some(reg) = self.regulation.as_deref() else {
            return;
        };
        if reg.reaction.regulator.is_some() {
            for pkt in out.packets.iter_mut().filter(|p| p.src == self.record.src) {
                pkt.rate_regulated = true;
            }
        }
    }

    /// A datagram flow (UDP, BCN) ends when its source is done and none of its packets
    /// is in flight. It has finished (and gets a finish time) only if every packet it
    /// sent arrived: a flow that lost some never completed.
    fn datagrams_finished(&mut self, now: Time) -> bool {
        let sender_done = match &self.transport {
            Transport::Udp(u) => u.done,
            Transport::Bcn(b) => b.done,
            _ => return false,
        };
        let ends_now = !self.settled && sender_done && self.record.packets_in_flight() == 0;
        if ends_now {
            self.settled = true;
            if self.record.packets_dropped == 0 {
                self.record.finish = Some(now);
            }
        }
        ends_now
    }

    pub fn is_finished(&self) -> bool {
        self.record.finish.is_some()
    }
}
